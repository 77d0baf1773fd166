import { Type } from 'typebox';
import { parseJsonColumn } from '../db/json-column.js';
import { Configuration, ToolSpec } from './schemas.js';

/** The JSON columns of agents, parsed through the API's own schemas of what they store. */

const Tools = Type.Array(ToolSpec);
/** Older rows may lack settings added since; the defaults fill them in on reading. */
const StoredConfiguration = Type.Partial(Configuration);

export const toolsColumn = (text: string) => parseJsonColumn(Tools, text, 'agents.tools');
export const configurationColumn = (text: string) => parseJsonColumn(StoredConfiguration, text, 'agents.configuration');
