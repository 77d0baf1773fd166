/** A value, or a promise of it: what the authentication hook's verifiers and admission may return (http/auth.ts). */
export type MaybePromise<T> = T | Promise<T>;

export const isPromise = <T>(value: MaybePromise<T>): value is Promise<T> =>
  value !== null && typeof value === 'object' && typeof (value as { then?: unknown }).then === 'function';
