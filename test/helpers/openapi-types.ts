import openapiTS, { astToString, COMMENT_HEADER, type OpenAPI3 } from 'openapi-typescript';

/** The TypeScript types openapi-typescript writes for a served OpenAPI document. */
export async function typesOf(document: object): Promise<string> {
  return COMMENT_HEADER + astToString(await openapiTS(document as OpenAPI3));
}
