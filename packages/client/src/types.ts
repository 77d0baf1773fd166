import type { components, paths } from './generated/openapi.js';

/** What the operation's success answer (200, else 201, else 202) carries as JSON. */
export type ResponseOf<O> = O extends { responses: infer R }
  ? R extends { 200: { content: { 'application/json': infer B } } }
    ? B
    : R extends { 201: { content: { 'application/json': infer B } } }
      ? B
      : R extends { 202: { content: { 'application/json': infer B } } }
        ? B
        : undefined
  : never;
/** The operation's JSON request body. */
export type BodyOf<O> = O extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;
/** The operation's query parameters. */
export type QueryOf<O> = O extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;

export type Problem = components['schemas']['Problem'];
export type Agent = ResponseOf<paths['/api/v1/agents/{id}']['get']>;
export type AgentSummary = ResponseOf<paths['/api/v1/agents']['get']>['agents'][number];
export type AgentInput = BodyOf<paths['/api/v1/agents']['post']>;
export type AgentUpdate = BodyOf<paths['/api/v1/agents/{id}']['post']>;
export type ExecuteInput = BodyOf<paths['/api/v1/agents/{id}/execute']['post']>;
export type ExecutionResult = ResponseOf<paths['/api/v1/agents/{id}/execute']['post']>;
export type RunSummary = ResponseOf<paths['/api/v1/agents/{id}/runs']['get']>['runs'][number];
export type RunDetails = ResponseOf<paths['/api/v1/runs/{runId}']['get']>;
export type Conversation = ResponseOf<paths['/api/v1/conversations/{id}']['get']>;
export type ConversationSummary = ResponseOf<paths['/api/v1/conversations']['get']>['conversations'][number];
export type Message = ResponseOf<paths['/api/v1/conversations/{id}/messages']['get']>['messages'][number];
export type Task = ResponseOf<paths['/api/v1/tasks/{id}']['get']>;
export type TaskSummary = ResponseOf<paths['/api/v1/tasks']['get']>['tasks'][number];
export type Skill = ResponseOf<paths['/api/skills/{id}']['get']>;
export type SkillSummary = ResponseOf<paths['/api/skills']['get']>['skills'][number];
export type ApiKey = ResponseOf<paths['/api/v1/api-keys']['get']>['apiKeys'][number];
export type CreatedApiKey = ResponseOf<paths['/api/v1/api-keys']['post']>;
export type AuditEvent = ResponseOf<paths['/api/v1/audit-events']['get']>['events'][number];
export type FileInfo = ResponseOf<paths['/api/v1/files/{id}']['get']>;
export type TbacPolicy = ResponseOf<paths['/api/v1/identity/tbac/policies']['get']>['policies'][number];
export type AgentKey = ResponseOf<paths['/api/v1/identity/agents/{agentId}/keys']['get']>['keys'][number];
export type MemoryBlock = ResponseOf<paths['/api/v1/agents/{id}/memory/{label}']['get']>;
export type MemoryBlockList = ResponseOf<paths['/api/v1/agents/{id}/memory']['get']>;
export type MemoryBlockInput = BodyOf<paths['/api/v1/agents/{id}/memory/{label}']['put']>;
export type KnowledgeBase = ResponseOf<paths['/api/v1/knowledge-bases/{id}']['get']>;
export type KnowledgeBaseInput = BodyOf<paths['/api/v1/knowledge-bases']['post']>;
export type KnowledgeBaseUpdate = BodyOf<paths['/api/v1/knowledge-bases/{id}']['patch']>;
export type KnowledgeDocument = ResponseOf<paths['/api/v1/knowledge-bases/{id}/documents/{documentId}']['get']>;
export type KnowledgeChunk = ResponseOf<paths['/api/v1/knowledge-bases/{id}/documents/{documentId}/chunks/{position}']['get']>;
export type KnowledgeDocumentInput = BodyOf<paths['/api/v1/knowledge-bases/{id}/documents']['post']>;
export type KnowledgeSearchInput = BodyOf<paths['/api/v1/knowledge-bases/{id}/search']['post']>;
export type KnowledgeSearchResult = ResponseOf<paths['/api/v1/knowledge-bases/{id}/search']['post']>;
export type MemoryVersion = ResponseOf<paths['/api/v1/agents/{id}/memory/{label}/versions']['get']>['versions'][number];

export type { components, paths };
