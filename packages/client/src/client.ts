import type { Client } from 'openapi-fetch';
import type { paths } from './generated/openapi.js';
import { type AgentryOptions, Http, type RequestOptions, type StartOptions } from './http.js';
import { PageIterator } from './pages.js';
import { RunStream, type StreamOptions } from './stream.js';
import type {
  Agent,
  AgentInput,
  AgentKey,
  AgentSummary,
  AgentUpdate,
  ApiKey,
  AuditEvent,
  BodyOf,
  Conversation,
  ConversationSummary,
  CreatedApiKey,
  ExecuteInput,
  ExecutionResult,
  FileInfo,
  MemoryBlock,
  MemoryBlockInput,
  MemoryBlockList,
  MemoryVersion,
  Message,
  QueryOf,
  ResponseOf,
  RunDetails,
  RunSummary,
  Skill,
  SkillSummary,
  Task,
  TaskSummary,
  TbacPolicy,
} from './types.js';

type CallOptions = Pick<RequestOptions, 'signal' | 'headers'>;
/** A call that starts work: sent with an Idempotency-Key, its own or a new one (StartOptions). */
type StartCallOptions = CallOptions & StartOptions;
/** A list's filters without its paging, which the iterator does itself. */
type Filters<Q> = Omit<Q, 'page'>;

const seg = encodeURIComponent;

/**
 * The Agentry API: `new Agentry({ baseUrl, apiKey })`, then one property per resource, or `api`, typed
 * by path and verb, for any operation.
 */
export class Agentry {
  readonly http: Http;
  /** Every operation, typed by path and verb (openapi-fetch), through the same middleware as the resources. */
  readonly api: Client<paths>;
  readonly agents: Agents;
  readonly conversations: Conversations;
  readonly files: Files;
  readonly runs: Runs;
  readonly tasks: Tasks;
  readonly skills: Skills;
  readonly identity: Identity;
  readonly apiKeys: ApiKeys;
  readonly audit: Audit;

  constructor(options: AgentryOptions) {
    this.http = new Http(options);
    this.api = this.http.api;
    this.agents = new Agents(this.http);
    this.conversations = new Conversations(this.http);
    this.files = new Files(this.http);
    this.runs = new Runs(this.http);
    this.tasks = new Tasks(this.http);
    this.skills = new Skills(this.http);
    this.identity = new Identity(this.http);
    this.apiKeys = new ApiKeys(this.http);
    this.audit = new Audit(this.http);
  }
}

function paged<T>(http: Http, path: string, itemsKey: string, query: object = {}, options?: CallOptions) {
  return new PageIterator<T>((page) => http.json('GET', path, { ...options, query: { ...query, page } }), itemsKey);
}

class Agents {
  /** The agents' memory blocks (docs/runtime.md, "Memory"). */
  readonly memory: AgentMemory;

  constructor(private readonly http: Http) {
    this.memory = new AgentMemory(http);
  }

  list(query: Filters<QueryOf<paths['/api/v1/agents']['get']>> = {}, options?: CallOptions) {
    return paged<AgentSummary>(this.http, '/api/v1/agents', 'agents', query, options);
  }
  get(id: string, options?: CallOptions) {
    return this.http.json<Agent>('GET', `/api/v1/agents/${seg(id)}`, options);
  }
  create(body: AgentInput, options?: CallOptions) {
    return this.http.json<Agent>('POST', '/api/v1/agents', { ...options, body });
  }
  update(id: string, body: AgentUpdate, options?: CallOptions) {
    return this.http.json<Agent>('POST', `/api/v1/agents/${seg(id)}`, { ...options, body });
  }
  delete(id: string, options?: CallOptions) {
    return this.http.json<void>('DELETE', `/api/v1/agents/${seg(id)}`, options);
  }
  pause(id: string, options?: CallOptions) {
    return this.http.json<Agent>('POST', `/api/v1/agents/${seg(id)}/pause`, options);
  }
  resume(id: string, options?: CallOptions) {
    return this.http.json<Agent>('POST', `/api/v1/agents/${seg(id)}/resume`, options);
  }
  /** Runs the agent and answers its result as JSON (no streaming); a retry answers the same run. */
  execute(id: string, body: Omit<ExecuteInput, 'stream'>, options: StartCallOptions = {}) {
    const headers = this.http.startHeaders(options.headers, options);
    return this.http.json<ExecutionResult>('POST', `/api/v1/agents/${seg(id)}/execute`, { signal: options.signal, headers, body });
  }
  /**
   * Runs the agent and streams its events; a dropped connection resumes where it broke, and a first
   * request that fails before any answer is sent again with its Idempotency-Key (one run still).
   */
  stream(id: string, body: Omit<ExecuteInput, 'stream'>, options: StreamOptions & StartOptions & Pick<CallOptions, 'headers'> = {}) {
    const headers = this.http.startHeaders({ accept: 'text/event-stream', ...options.headers }, options);
    return new RunStream(
      this.http,
      () => this.http.send('POST', `/api/v1/agents/${seg(id)}/stream`, { body, signal: options.signal, headers }),
      options,
    );
  }
  /** The agent's runs, newest first. */
  runs(id: string, query: Filters<QueryOf<paths['/api/v1/agents/{id}/runs']['get']>> = {}, options?: CallOptions) {
    return paged<RunSummary>(this.http, `/api/v1/agents/${seg(id)}/runs`, 'runs', query, options);
  }
}

/** Which blocks: `{ userId }` for that end user's, `{}` for the agent-wide ones. */
type MemoryScope = { userId?: string };

class AgentMemory {
  constructor(private readonly http: Http) {}

  private path(agentId: string, label?: string) {
    return `/api/v1/agents/${seg(agentId)}/memory${label === undefined ? '' : `/${seg(label)}`}`;
  }
  list(agentId: string, scope: MemoryScope = {}, options?: CallOptions) {
    return this.http.json<MemoryBlockList>('GET', this.path(agentId), { ...options, query: scope });
  }
  get(agentId: string, label: string, scope: MemoryScope = {}, options?: CallOptions) {
    return this.http.json<MemoryBlock>('GET', this.path(agentId, label), { ...options, query: scope });
  }
  /** Sets the block's text, making it when there is none; with `version`, only if the block is still at it. */
  set(agentId: string, label: string, body: MemoryBlockInput, scope: MemoryScope = {}, options?: CallOptions) {
    return this.http.json<MemoryBlock>('PUT', this.path(agentId, label), { ...options, query: scope, body });
  }
  delete(agentId: string, label: string, scope: MemoryScope = {}, options?: CallOptions) {
    return this.http.json<void>('DELETE', this.path(agentId, label), { ...options, query: scope });
  }
  /** The label's versions, newest first (a deleted block's too). */
  versions(agentId: string, label: string, scope: MemoryScope & { limit?: number } = {}, options?: CallOptions) {
    return paged<MemoryVersion>(this.http, `${this.path(agentId, label)}/versions`, 'versions', scope, options);
  }
}

class Runs {
  constructor(private readonly http: Http) {}

  get(runId: string, options?: CallOptions) {
    return this.http.json<RunDetails>('GET', `/api/v1/runs/${seg(runId)}`, options);
  }
  cancel(runId: string, options?: CallOptions) {
    return this.http.json<RunDetails>('POST', `/api/v1/runs/${seg(runId)}/cancel`, options);
  }
  /** A run's events after `lastEventId` (0: all of them), then live ones until it ends. */
  events(runId: string, options: StreamOptions & { lastEventId?: number } = {}) {
    return new RunStream(
      this.http,
      () =>
        this.http.send('GET', `/api/v1/runs/${seg(runId)}/events`, {
          signal: options.signal,
          headers: { accept: 'text/event-stream', 'last-event-id': String(options.lastEventId ?? 0) },
        }),
      options,
    );
  }
}

class Conversations {
  constructor(private readonly http: Http) {}

  list(query: Filters<QueryOf<paths['/api/v1/conversations']['get']>> = {}, options?: CallOptions) {
    return paged<ConversationSummary>(this.http, '/api/v1/conversations', 'conversations', query, options);
  }
  get(id: string, options?: CallOptions) {
    return this.http.json<Conversation>('GET', `/api/v1/conversations/${seg(id)}`, options);
  }
  create(body: BodyOf<paths['/api/v1/conversations']['post']>, options?: CallOptions) {
    return this.http.json<ResponseOf<paths['/api/v1/conversations']['post']>>('POST', '/api/v1/conversations', { ...options, body });
  }
  update(id: string, body: BodyOf<paths['/api/v1/conversations/{id}']['patch']>, options?: CallOptions) {
    return this.http.json<ResponseOf<paths['/api/v1/conversations/{id}']['patch']>>('PATCH', `/api/v1/conversations/${seg(id)}`, {
      ...options,
      body,
    });
  }
  delete(id: string, options?: CallOptions) {
    return this.http.json<void>('DELETE', `/api/v1/conversations/${seg(id)}`, options);
  }
  /** Posts a message (it starts a run, or joins one); a retry answers the same. */
  send(id: string, body: BodyOf<paths['/api/v1/conversations/{id}/messages']['post']>, options: StartCallOptions = {}) {
    const headers = this.http.startHeaders(options.headers, options);
    return this.http.json<ResponseOf<paths['/api/v1/conversations/{id}/messages']['post']>>(
      'POST',
      `/api/v1/conversations/${seg(id)}/messages`,
      { signal: options.signal, headers, body },
    );
  }
  /** The conversation's messages, newest first, following the `before` cursor page after page. */
  async *messages(id: string, query: { limit?: number } = {}, options?: CallOptions): AsyncGenerator<Message> {
    let before: string | undefined;
    for (;;) {
      const page = await this.http.json<ResponseOf<paths['/api/v1/conversations/{id}/messages']['get']>>(
        'GET',
        `/api/v1/conversations/${seg(id)}/messages`,
        { ...options, query: { ...query, before } },
      );
      // Each page is oldest first: the newest `limit` messages older than the cursor.
      yield* [...page.messages].reverse();
      if (!page.hasMore || page.messages.length === 0) return;
      before = page.messages[0].id;
    }
  }
}

/** Attachments: uploaded once, then named by id in a message's `attachments` (execute, stream). */
class Files {
  constructor(private readonly http: Http) {}

  /**
   * Uploads one file as multipart/form-data (at most 5 MiB: a larger one is a 413 AgentryError). `name`
   * defaults to the File's own name; the Blob's type is kept as its content type.
   */
  upload(file: Blob, options: CallOptions & { name?: string } = {}) {
    const form = new FormData();
    const name = options.name ?? ((file as { name?: unknown }).name as string | undefined) ?? 'file';
    form.append('file', file, name);
    return this.http.json<FileInfo>('POST', '/api/v1/files', { signal: options.signal, headers: options.headers, form });
  }
  get(id: string, options?: CallOptions) {
    return this.http.json<FileInfo>('GET', `/api/v1/files/${seg(id)}`, options);
  }
  /** Deletes the file; messages that name it keep its id, and its content then answers 404. */
  delete(id: string, options?: CallOptions) {
    return this.http.json<void>('DELETE', `/api/v1/files/${seg(id)}`, options);
  }
  /** The file's bytes, with its content type. */
  async content(id: string, options?: CallOptions): Promise<Blob> {
    const response = await this.http.send('GET', `/api/v1/files/${seg(id)}/content`, {
      ...options,
      headers: { accept: '*/*', ...options?.headers },
    });
    return response.blob();
  }
}

class Tasks {
  constructor(private readonly http: Http) {}

  list(query: Filters<QueryOf<paths['/api/v1/tasks']['get']>> = {}, options?: CallOptions) {
    return paged<TaskSummary>(this.http, '/api/v1/tasks', 'tasks', query, options);
  }
  get(id: string, options?: CallOptions) {
    return this.http.json<Task>('GET', `/api/v1/tasks/${seg(id)}`, options);
  }
  /** Creates a task; a retry answers the same task. */
  create(body: BodyOf<paths['/api/v1/tasks']['post']>, options: StartCallOptions = {}) {
    const headers = this.http.startHeaders(options.headers, options);
    return this.http.json<Task>('POST', '/api/v1/tasks', { signal: options.signal, headers, body });
  }
  delete(id: string, options?: CallOptions) {
    return this.http.json<void>('DELETE', `/api/v1/tasks/${seg(id)}`, options);
  }
  cancel(id: string, options?: CallOptions) {
    return this.http.json<ResponseOf<paths['/api/v1/tasks/{id}/cancel']['post']>>('POST', `/api/v1/tasks/${seg(id)}/cancel`, options);
  }
  run(id: string, options?: CallOptions) {
    return this.http.json<ResponseOf<paths['/api/v1/tasks/{id}/run']['post']>>('POST', `/api/v1/tasks/${seg(id)}/run`, options);
  }
}

class Skills {
  constructor(private readonly http: Http) {}

  list(query: Filters<QueryOf<paths['/api/skills']['get']>> = {}, options?: CallOptions) {
    return paged<SkillSummary>(this.http, '/api/skills', 'skills', query, options);
  }
  get(id: string, options?: CallOptions) {
    return this.http.json<Skill>('GET', `/api/skills/${seg(id)}`, options);
  }
  create(body: BodyOf<paths['/api/skills']['post']>, options?: CallOptions) {
    return this.http.json<ResponseOf<paths['/api/skills']['post']>>('POST', '/api/skills', { ...options, body });
  }
  archive(id: string, options?: CallOptions) {
    return this.http.json<ResponseOf<paths['/api/skills/{id}']['delete']>>('DELETE', `/api/skills/${seg(id)}`, options);
  }
  assign(id: string, body: BodyOf<paths['/api/skills/{id}/assign']['post']>, options?: CallOptions) {
    return this.http.json<ResponseOf<paths['/api/skills/{id}/assign']['post']>>('POST', `/api/skills/${seg(id)}/assign`, {
      ...options,
      body,
    });
  }
}

class Identity {
  constructor(private readonly http: Http) {}

  keys(agentId: string, options?: CallOptions) {
    return this.http.json<{ keys: AgentKey[] }>('GET', `/api/v1/identity/agents/${seg(agentId)}/keys`, options);
  }
  rotateKey(agentId: string, options?: CallOptions) {
    return this.http.json<ResponseOf<paths['/api/v1/identity/agents/{agentId}/keys/rotate']['post']>>(
      'POST',
      `/api/v1/identity/agents/${seg(agentId)}/keys/rotate`,
      options,
    );
  }
  policies(query: Filters<QueryOf<paths['/api/v1/identity/tbac/policies']['get']>> = {}, options?: CallOptions) {
    return paged<TbacPolicy>(this.http, '/api/v1/identity/tbac/policies', 'policies', query, options);
  }
  createPolicy(body: BodyOf<paths['/api/v1/identity/tbac/policies']['post']>, options?: CallOptions) {
    return this.http.json<ResponseOf<paths['/api/v1/identity/tbac/policies']['post']>>('POST', '/api/v1/identity/tbac/policies', {
      ...options,
      body,
    });
  }
  /** Changes a policy's effect, description or conditions (`conditions: null` clears them). */
  updatePolicy(id: string, body: BodyOf<paths['/api/v1/identity/tbac/policies/{id}']['patch']>, options?: CallOptions) {
    return this.http.json<ResponseOf<paths['/api/v1/identity/tbac/policies/{id}']['patch']>>(
      'PATCH',
      `/api/v1/identity/tbac/policies/${seg(id)}`,
      { ...options, body },
    );
  }
  deletePolicy(id: string, options?: CallOptions) {
    return this.http.json<void>('DELETE', `/api/v1/identity/tbac/policies/${seg(id)}`, options);
  }
}

class ApiKeys {
  constructor(private readonly http: Http) {}

  list(query: Filters<QueryOf<paths['/api/v1/api-keys']['get']>> = {}, options?: CallOptions) {
    return paged<ApiKey>(this.http, '/api/v1/api-keys', 'apiKeys', query, options);
  }
  create(body: BodyOf<paths['/api/v1/api-keys']['post']>, options?: CallOptions) {
    return this.http.json<CreatedApiKey>('POST', '/api/v1/api-keys', { ...options, body });
  }
  update(id: string, body: BodyOf<paths['/api/v1/api-keys/{id}']['patch']>, options?: CallOptions) {
    return this.http.json<ResponseOf<paths['/api/v1/api-keys/{id}']['patch']>>('PATCH', `/api/v1/api-keys/${seg(id)}`, {
      ...options,
      body,
    });
  }
  revoke(id: string, options?: CallOptions) {
    return this.http.json<void>('DELETE', `/api/v1/api-keys/${seg(id)}`, options);
  }
}

class Audit {
  constructor(private readonly http: Http) {}

  list(query: Filters<QueryOf<paths['/api/v1/audit-events']['get']>> = {}, options?: CallOptions) {
    return paged<AuditEvent>(this.http, '/api/v1/audit-events', 'events', query, options);
  }
}
