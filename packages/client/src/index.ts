export { Agentry } from './client.js';
export { AgentryError, type FieldError } from './errors.js';
export type { AgentryOptions, ClientCredentials, StartOptions } from './http.js';
export { excludedOperations, type Operation, operations } from './operations.js';
export type { PageIterator } from './pages.js';
export type { ApprovalRequired, RunEvent, RunStream, StreamOptions, TokenUsage } from './stream.js';
export type * from './types.js';
