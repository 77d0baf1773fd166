/**
 * A value, or a promise of it. Hot paths (authentication, the request limit) answer from memory
 * without a promise when they can, which spares each request promise allocations and trips through
 * the microtask queue; callers that `await` take either.
 */
export type MaybePromise<T> = T | Promise<T>;

export const isPromise = <T>(value: MaybePromise<T>): value is Promise<T> =>
  value !== null && typeof value === 'object' && typeof (value as { then?: unknown }).then === 'function';
