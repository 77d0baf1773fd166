import { Type } from 'typebox';
import { parseJsonColumn } from '../db/json-column.js';

/** The JSON columns of knowledge documents and chunks, parsed through their schemas (db/json-column.ts). */
const Strings = Type.Array(Type.String());
const Metadata = Type.Record(Type.String(), Type.Unknown());

export const tagsColumn = (text: string) => parseJsonColumn(Strings, text, 'knowledge_documents.tags');
export const metadataColumn = (text: string) => parseJsonColumn(Metadata, text, 'knowledge_documents.metadata');
export const headingPathColumn = (text: string) => parseJsonColumn(Strings, text, 'knowledge_chunks.heading_path');
