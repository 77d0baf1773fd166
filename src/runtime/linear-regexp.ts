import type { RegExpEngine } from 'ajv/dist/types/index.js';
import { RE2JS } from 're2js';

/**
 * The one engine for every regular expression a tenant supplies (JSON Schema `pattern` and
 * `patternProperties` in responseFormat and tool input schemas, approval rules' `matches` and tool
 * globs): RE2 (the re2js port, pure JavaScript), whose matching time grows linearly with the input.
 * JavaScript's own engine backtracks, and `^(a+)+$` against 30 characters blocks the event loop every
 * tenant shares for seconds, doubling with each character; a detector of unsafe patterns misses some.
 * RE2 has no backreferences nor lookaround: a pattern using them is refused where it is given.
 */

/** A compiled pattern: `test` as RegExp's (a match anywhere in the input). */
export interface LinearRegExp {
  test(input: string): boolean;
  toString(): string;
}

/** Compiles a JavaScript-syntax pattern for RE2; throws, saying why, when RE2 cannot run it. */
export function linearRegExp(pattern: string, flags = ''): LinearRegExp {
  let re: RE2JS;
  try {
    let mode = 0;
    if (flags.includes('i')) mode |= RE2JS.CASE_INSENSITIVE;
    if (flags.includes('m')) mode |= RE2JS.MULTILINE;
    if (flags.includes('s')) mode |= RE2JS.DOTALL;
    re = RE2JS.compile(RE2JS.translateRegExp(pattern), mode);
  } catch (err) {
    throw new Error(
      `the pattern ${JSON.stringify(pattern.slice(0, 100))} is not one the linear-time engine (RE2) runs: ${(err as Error).message}` +
        ' (no backreferences nor lookaround)',
    );
  }
  // Ajv keys its compiled patterns by toString(): each must say which pattern it is.
  return { test: (input) => re.test(input), toString: () => `/${pattern}/${flags}` };
}

/** Why `pattern` cannot be used, or undefined when it can. */
export function unusablePattern(pattern: string): string | undefined {
  try {
    linearRegExp(pattern);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

/** Ajv's `code.regExp` option: the schemas' patterns compiled for RE2. */
export const linearRegExpEngine: RegExpEngine = Object.assign((pattern: string, flags: string) => linearRegExp(pattern, flags), {
  code: 'linearRegExp',
});
