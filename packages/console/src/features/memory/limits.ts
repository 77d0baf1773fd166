/**
 * The server's rules for a memory block (src/memory/schemas.ts), checked before a save so that a
 * person sees what is wrong at the field instead of after the request.
 */

/** A block's name: letters, digits, _ and -, at most 64 (the route's pattern). */
export const LABEL_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** Characters as the server counts them: Unicode code points, not UTF-16 units. */
export const charCount = (text: string) => [...text].length;

/** Why a label would be refused, or null. */
export function labelProblem(label: string): string | null {
  if (!label) return 'a block needs a name';
  return LABEL_PATTERN.test(label) ? null : 'letters, digits, _ and - only, at most 64';
}

/** Why a text would be refused, or null. */
export function valueProblem(value: string, maxChars: number): string | null {
  const chars = charCount(value);
  return chars > maxChars ? `${chars} characters, more than the ${maxChars} a block holds: shorten it by ${chars - maxChars}` : null;
}

/** Whose blocks: the agent's own (every run sees them), or one end user's. */
export interface MemoryScope {
  userId?: string;
}

export const scopeName = (scope: MemoryScope) => (scope.userId ? `user ${scope.userId}` : 'the agent (every user)');

/** An end user's id as the API takes it (conversations' userId). */
export const USER_ID_PATTERN = /^[A-Za-z0-9._:@+-]{1,128}$/;
