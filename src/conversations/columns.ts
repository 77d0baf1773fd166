import { Type } from 'typebox';
import { parseJsonColumn } from '../db/json-column.js';
import { Json } from '../http/schemas.js';

/** The JSON columns of conversations and messages, parsed through their schemas. */

// id and result written since issue 25 (the history replays them); absent on older messages.
const ToolCalls = Type.Array(
  Type.Object({
    id: Type.Optional(Type.String()),
    name: Type.String(),
    input: Type.Unknown(),
    result: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])),
  }),
);
const TokenUsage = Type.Object({ inputTokens: Type.Number(), outputTokens: Type.Number() });
const Attachments = Type.Array(Type.String());

export const metadataColumn = (text: string) => parseJsonColumn(Json, text, 'conversations.metadata');
export const toolCallsColumn = (text: string | null) => (text ? parseJsonColumn(ToolCalls, text, 'messages.tool_calls') : []);
export const tokenUsageColumn = (text: string | null) => (text ? parseJsonColumn(TokenUsage, text, 'messages.token_usage') : null);
export const attachmentsColumn = (text: string | null) => (text ? parseJsonColumn(Attachments, text, 'messages.attachments') : []);
