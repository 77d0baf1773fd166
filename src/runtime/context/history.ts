import type { JSONValue, LanguageModelV3Message, LanguageModelV3ToolResultOutput } from '@ai-sdk/provider';

/** A tool call of an earlier answer, as the conversation stored it (older messages lack id and result). */
interface TurnToolCall {
  id?: string;
  name: string;
  input: unknown;
  result?: Record<string, unknown> | null;
}

/** A message of the conversation's history, as the model is given it. */
export interface ConversationTurn {
  role: 'user' | 'assistant';
  content: string;
  /** The stored message's id (time-ordered): what a summary records it covers. Absent for a caller's own history. */
  id?: string;
  /** The tool calls the answer made, with their results, replayed before its text. */
  toolCalls?: TurnToolCall[];
}

/**
 * A turn as prompt messages. An answer that called tools becomes what the model saw while making it:
 * the assistant's calls, the tools' results, then its text. Calls stored without an id or result
 * (messages written before tool results were kept) are left out, as they always were.
 */
export function turnMessages(turn: ConversationTurn): LanguageModelV3Message[] {
  const text = (role: 'user' | 'assistant', value: string): LanguageModelV3Message => ({ role, content: [{ type: 'text', text: value }] });
  if (turn.role === 'user') return [text('user', turn.content)];
  const calls = (turn.toolCalls ?? []).filter(
    (c): c is TurnToolCall & { id: string } => typeof c.id === 'string' && c.result !== undefined,
  );
  if (!calls.length) return [text('assistant', turn.content)];
  const messages: LanguageModelV3Message[] = [
    {
      role: 'assistant',
      content: calls.map((c) => ({ type: 'tool-call', toolCallId: c.id, toolName: c.name, input: objectInput(c.input) })),
    },
    {
      role: 'tool',
      content: calls.map((c) => ({
        type: 'tool-result',
        toolCallId: c.id,
        toolName: c.name,
        output: replayedResult(c.result ?? null),
      })),
    },
  ];
  if (turn.content) messages.push(text('assistant', turn.content));
  return messages;
}

/** A result replayed from history, at most this many characters of JSON: a model without a known window gets its history unfitted. */
export const REPLAYED_RESULT_MAX_CHARS = 16_000;

function replayedResult(result: Record<string, unknown> | null): LanguageModelV3ToolResultOutput {
  if (result === null) return { type: 'error-text', value: 'the call ended without a result' };
  const text = JSON.stringify(result);
  if (text.length <= REPLAYED_RESULT_MAX_CHARS) return { type: 'json', value: result as JSONValue };
  return { type: 'text', value: `${text.slice(0, REPLAYED_RESULT_MAX_CHARS)}... (cut: ${text.length} characters in all)` };
}

/** Providers send a call's input back as an object. */
function objectInput(input: unknown): unknown {
  return input && typeof input === 'object' && !Array.isArray(input) ? input : {};
}

/** A turn in one line of a summary request's transcript (quoted, so no line of it reads as anything else). */
export function transcriptLine(turn: ConversationTurn): string {
  const lines = [`${turn.role}: ${JSON.stringify(turn.content)}`];
  for (const c of turn.toolCalls ?? []) {
    lines.push(
      `  tool ${c.name}(${JSON.stringify(c.input ?? {})})${c.result !== undefined ? ` returned ${JSON.stringify(c.result)}` : ''}`,
    );
  }
  return lines.join('\n');
}
