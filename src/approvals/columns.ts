import { Type } from 'typebox';
import { parseJsonColumn } from '../db/json-column.js';

/** The JSON columns of tool_approvals: a call's arguments (the model's, or the approver's edit) are any JSON value. */
const Arguments = Type.Unknown();

export const argumentsColumn = (text: string) => parseJsonColumn(Arguments, text, 'tool_approvals.arguments');
