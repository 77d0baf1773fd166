import { v7 } from 'uuid';

/** New identifier: a UUID v7, so ids sort by creation time and serve as cursors. */
export const newId = (): string => v7();

/** The current time as stored and returned everywhere: ISO 8601 UTC with milliseconds. */
export const now = (): string => new Date().toISOString();

export const isUuid = (value: string): boolean =>
  /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value);
