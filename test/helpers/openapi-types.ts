import openapiTS, { astToString, COMMENT_HEADER, type OpenAPI3 } from 'openapi-typescript';
import ts from 'typescript';

/** The TypeScript types openapi-typescript writes for a served OpenAPI document. */
export async function typesOf(document: object): Promise<string> {
  return COMMENT_HEADER + astToString(await openapiTS(document as OpenAPI3));
}

/** TypeScript's diagnostics for files, compiled as the project's strict ESM. */
export function typeErrors(files: string[]): string[] {
  const program = ts.createProgram(files, {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    lib: ['lib.es2022.d.ts', 'lib.dom.d.ts', 'lib.dom.iterable.d.ts'],
    skipLibCheck: true,
    types: [],
  });
  return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}
