/**
 * Reading the server's OpenAPI document (GET /openapi.json) by hand: the console's form tests hold
 * the limits its forms check equal to the ones the document states.
 */

// biome-ignore lint/suspicious/noExplicitAny: a JSON document walked by hand
export type Json = any;

export function openApiSchemas(doc: Json) {
  /** A node, or what its $ref names (a JSON pointer: `~1` is `/`, `~0` is `~`). */
  const deref = (node: Json): Json =>
    node?.$ref
      ? node.$ref
          .slice(2)
          .split('/')
          .reduce((n: Json, key: string) => n[key.replace(/~1/g, '/').replace(/~0/g, '~')], doc)
      : node;

  function operation(id: string): Json {
    for (const item of Object.values<Json>(doc.paths)) {
      for (const op of Object.values<Json>(item)) if (op?.operationId === id) return op;
    }
    throw new Error(`no operation ${id}`);
  }

  /** A property's schema of one of `types` (the member of that type of a nullable one). */
  function schemaOf(node: Json, types: string[]): Json {
    const schema = deref(node);
    if (types.includes(schema.type)) return schema;
    const member = (schema.anyOf ?? schema.oneOf ?? []).map(deref).find((s: Json) => types.includes(s.type));
    if (!member) throw new Error(`not a ${types.join(' or ')} schema: ${JSON.stringify(schema)}`);
    return member;
  }

  return {
    deref,
    /** The JSON request body's schema of the operation `id`. */
    bodyOf: (id: string): Json => deref(operation(id).requestBody.content['application/json'].schema),
    /** The schema of the operation's parameter `name`. */
    parameterOf: (id: string, name: string): Json => deref(operation(id).parameters.find((p: Json) => p.name === name).schema),
    stringSchema: (node: Json): Json => schemaOf(node, ['string']),
    numberSchema: (node: Json): Json => schemaOf(node, ['integer', 'number']),
  };
}
