import { type TLiteral, type TSchema, type TSchemaOptions, type TUnion, Type } from 'typebox';

/** Shared schema pieces; every route composes its contract from these. */

export const Timestamp = Type.String({ format: 'date-time', examples: ['2026-11-22T09:00:00.000Z'] });
/** Identifiers: printable, no spaces or control characters (PostgreSQL text cannot hold NUL, for one). */
export const Id = Type.String({ minLength: 1, maxLength: 64, pattern: '^[\\x21-\\x7e]+$', description: 'identifier (UUID v7)' });
export const IdParams = Type.Object({ id: Id });
export const Json = Type.Record(Type.String(), Type.Unknown());

export const Problem = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    code: Type.String({ description: 'stable snake_case error code' }),
    errors: Type.Optional(Type.Array(Type.Object({ path: Type.String(), message: Type.String() }))),
  },
  { $id: 'Problem', title: 'Problem details (RFC 9457)' },
);

const problemRef = Type.Ref('Problem');

/** Response entries for the problem statuses a route can answer, for OpenAPI and serialization. */
export function problems(...statuses: number[]): Record<number, TSchema> {
  const out: Record<number, TSchema> = {};
  for (const s of statuses) out[s] = problemRef;
  return out;
}

export const PageQuery = {
  // Bounded so that (page - 1) * limit stays an offset the databases take (an unbounded page overflowed to Infinity: 500).
  page: Type.Integer({ minimum: 1, maximum: 10_000_000, default: 1, description: 'page number, from 1' }),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'page size, 1 to 100' }),
};

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
/** One of the given strings: a union of literals, its static type the union of the values (TypeBox 1 types a Union over a mapped array as never). */
export const Literals = <const T extends readonly string[]>(values: T, options?: TSchemaOptions) =>
  Type.Union(
    values.map((v) => Type.Literal(v)),
    options,
  ) as unknown as TUnion<{ -readonly [K in keyof T]: TLiteral<T[K]> }>;
