import { Type } from 'typebox';
import { parseJsonColumn } from '../db/json-column.js';
import { Config } from './schemas.js';

/** The JSON columns of skills and their assignments, and connections' opened configurations, parsed through their schemas. */

const Strings = Type.Record(Type.String(), Type.String());
const ConnectionConfiguration = Type.Record(Type.String(), Type.Unknown());

export const metadataColumn = (text: string) => parseJsonColumn(Strings, text, 'skills.metadata');
export const frontMatterColumn = (text: string) => parseJsonColumn(Strings, text, 'skills.front_matter');
export const assignmentConfigColumn = (text: string) => parseJsonColumn(Config, text, 'skill_assignments.config');
/** The opened plaintext of a sealed `connector_connections.configuration`. */
export const connectionConfigurationColumn = (plaintext: string) =>
  parseJsonColumn(ConnectionConfiguration, plaintext, 'connector_connections.configuration');
