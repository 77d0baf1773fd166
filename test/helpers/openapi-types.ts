import openapiTS, { astToString, COMMENT_HEADER, type OpenAPI3 } from 'openapi-typescript';

/**
 * A query parameter with a default is one a client may leave out; the served document marks it required
 * (TypeBox's querystring object lists it), which would make every typed call spell out page and limit.
 */
function optionalDefaults(document: {
  paths?: Record<string, Record<string, { parameters?: { in: string; required?: boolean; schema?: object }[] }>>;
}) {
  for (const item of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(item)) {
      for (const parameter of operation.parameters ?? []) {
        if (parameter.in === 'query' && parameter.schema && 'default' in parameter.schema) parameter.required = false;
      }
    }
  }
  return document as OpenAPI3;
}

/** The TypeScript types openapi-typescript writes for a served OpenAPI document. */
export async function typesOf(document: object): Promise<string> {
  return COMMENT_HEADER + astToString(await openapiTS(optionalDefaults(document)));
}
