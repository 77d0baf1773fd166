import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { FastifyServerOptions } from 'fastify';
import { CompiledPerSchema } from './compiled-per-schema.js';

type Serialize = (doc: unknown) => string;
type BuildSerializer = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildSerializer'];

const fastJsonFactory = SerializerSelector();
/** Response serializers by schema and status, shared by every app of the process. */
const compiled = new CompiledPerSchema<Serialize>();

/**
 * Fastify's own serializer factory (fast-json-stringify), remembering what it compiled, so an app built
 * again reuses each route's serializer.
 */
export const sharedSerializers: BuildSerializer = (externalSchemas, options) => {
  const compile = fastJsonFactory(externalSchemas, options);
  return (route) => {
    const schema = route.schema as object;
    // Fastify passes the content type too when a response declares several (its types omit it).
    const key = `${route.httpStatus} ${(route as { contentType?: string }).contentType ?? ''}`;
    return compiled.get(schema, key, () => compile(route) as Serialize);
  };
};
