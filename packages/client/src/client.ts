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
  KnowledgeBase,
  KnowledgeBaseInput,
  KnowledgeBaseUpdate,
  KnowledgeChunk,
  KnowledgeDocument,
  KnowledgeDocumentInput,
  KnowledgeSearchInput,
  KnowledgeSearchResult,
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
import { seg } from './path.js';

type CallOptions = Pick<RequestOptions, 'signal' | 'headers'>;
/** A call that starts work: sent with an Idempotency-Key, its own or a new one (StartOptions). */
type StartCallOptions = CallOptions & StartOptions;
/** A list's filters without its paging, which the iterator does itself. */
type Filters<Q> = Omit<Q, 'page'>;
type TokenRequest = Extract<BodyOf<paths['/api/v1/identity/oauth/token']['post']>, { grant_type: string }>;

type Api = Client<paths>;

/** An openapi-fetch answer's body; the middleware has already thrown for any failure. */
async function ok<R extends { data?: unknown }>(call: Promise<R>): Promise<NonNullable<R['data']>> {
  return (await call).data as NonNullable<R['data']>;
}
/** An answer with no body (204). */
async function none(call: Promise<unknown>): Promise<void> {
  await call;
}

/**
 * The Agentry API: `new Agentry({ baseUrl, apiKey })`, then one property per resource (operations.ts
 * says which method calls which operation), or `api`, typed by path and verb, for any operation.
 */
export class Agentry {
  readonly http: Http;
  /** Every operation, typed by path and verb (openapi-fetch), through the same middleware as the resources. */
  readonly api: Api;
  readonly agents: Agents;
  readonly apps: Apps;
  readonly models: Models;
  readonly conversations: Conversations;
  readonly files: Files;
  readonly runs: Runs;
  readonly tasks: Tasks;
  readonly approvals: Approvals;
  readonly skills: Skills;
  readonly connectors: Connectors;
  readonly identity: Identity;
  readonly apiKeys: ApiKeys;
  readonly audit: Audit;
  readonly tenant: Tenant;
  readonly code: Code;
  /** Knowledge bases, their documents and search (docs/knowledge.md). */
  readonly knowledge: Knowledge;
  readonly usage: Usage;
  readonly health: Health;

  constructor(options: AgentryOptions) {
    this.http = new Http(options);
    this.api = this.http.api;
    this.agents = new Agents(this.http);
    this.apps = new Apps(this.api);
    this.models = new Models(this.api);
    this.conversations = new Conversations(this.http);
    this.files = new Files(this.http);
    this.runs = new Runs(this.http);
    this.tasks = new Tasks(this.http);
    this.approvals = new Approvals(this.http);
    this.skills = new Skills(this.http);
    this.connectors = new Connectors(this.http);
    this.identity = new Identity(this.http);
    this.apiKeys = new ApiKeys(this.http);
    this.audit = new Audit(this.http);
    this.tenant = new Tenant(this.api);
    this.code = new Code(this.api);
    this.knowledge = new Knowledge(this.http);
    this.usage = new Usage(this.api);
    this.health = new Health(this.api);
  }
}

function paged<T>(http: Http, path: string, itemsKey: string, query: object = {}, options?: CallOptions) {
  return new PageIterator<T>((page) => http.json('GET', path, { ...options, query: { ...query, page } }), itemsKey);
}

/** Page items of a list typed by its operation: `Items<'/api/v1/runs', 'runs'>`. */
type Items<P extends keyof paths, K extends string> = paths[P] extends { get: infer O }
  ? ResponseOf<O> extends { [key in K]: (infer T)[] }
    ? T
    : never
  : never;
type ListQuery<P extends keyof paths> = paths[P] extends { get: infer O } ? Filters<QueryOf<O>> : never;

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
  /** Like `stream`, for a chat client: always Server-Sent Events, the same events and resumption. */
  chat(id: string, body: Omit<ExecuteInput, 'stream'>, options: StreamOptions & StartOptions & Pick<CallOptions, 'headers'> = {}) {
    const headers = this.http.startHeaders({ accept: 'text/event-stream', ...options.headers }, options);
    return new RunStream(
      this.http,
      () => this.http.send('POST', `/api/v1/agents/${seg(id)}/chat`, { body, signal: options.signal, headers }),
      options,
    );
  }
  /** The agent's runs, newest first. */
  runs(id: string, query: Filters<QueryOf<paths['/api/v1/agents/{id}/runs']['get']>> = {}, options?: CallOptions) {
    return paged<RunSummary>(this.http, `/api/v1/agents/${seg(id)}/runs`, 'runs', query, options);
  }
  /** A copy of the agent (its tools, prompt and configuration) named `name`, else "<name> (copy)". */
  duplicate(id: string, body: BodyOf<paths['/api/v1/agents/{id}/duplicate']['post']> = {}, options?: CallOptions) {
    return ok(this.http.api.POST('/api/v1/agents/{id}/duplicate', { ...options, params: { path: { id } }, body }));
  }
  /** The agent's monthly budget and what it has spent this month. */
  budget(id: string, options?: CallOptions) {
    return ok(this.http.api.GET('/api/v1/agents/{id}/budget', { ...options, params: { path: { id } } }));
  }
  setBudget(id: string, body: BodyOf<paths['/api/v1/agents/{id}/budget']['put']>, options?: CallOptions) {
    return ok(this.http.api.PUT('/api/v1/agents/{id}/budget', { ...options, params: { path: { id } }, body }));
  }
}

/** The apps (appId) the tenant's agents belong to, with how many agents each has. */
class Apps {
  constructor(private readonly api: Api) {}

  list(options?: CallOptions) {
    return ok(this.api.GET('/api/v1/apps', options));
  }
}

/** The models this server can run agents on, and its default. */
class Models {
  constructor(private readonly api: Api) {}

  list(options?: CallOptions) {
    return ok(this.api.GET('/api/v1/models', options));
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

  /** The tenant's runs, newest first, across agents and kinds. */
  list(query: ListQuery<'/api/v1/runs'> = {}, options?: CallOptions) {
    return paged<Items<'/api/v1/runs', 'runs'>>(this.http, '/api/v1/runs', 'runs', query, options);
  }
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
  /** Counts of the tenant's conversations. */
  stats(options?: CallOptions) {
    return ok(this.http.api.GET('/api/v1/conversations/stats', options));
  }
  /** A message for the agent while it is still answering: it joins the run at its next step. */
  inject(id: string, body: BodyOf<paths['/api/v1/conversations/{id}/inject']['post']>, options?: CallOptions) {
    return ok(this.http.api.POST('/api/v1/conversations/{id}/inject', { ...options, params: { path: { id } }, body }));
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
  /** The tenant's files, newest first, page after page; `runId`: the files that run's code tools made. */
  list(query: ListQuery<'/api/v1/files'> = {}, options?: CallOptions) {
    return paged<FileInfo>(this.http, '/api/v1/files', 'files', query, options);
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
  /** Runs the task now, `input` merged over the task's: answers the run it started (202). */
  run(id: string, body: BodyOf<paths['/api/v1/tasks/{id}/run']['post']> = {}, options?: CallOptions) {
    return ok(this.http.api.POST('/api/v1/tasks/{id}/run', { ...options, params: { path: { id } }, body }));
  }
  /** Tasks awaiting a person's approval (skill and connector requests). */
  pendingApproval(query: ListQuery<'/api/v1/tasks/pending-approval'> = {}, options?: CallOptions) {
    return paged<Items<'/api/v1/tasks/pending-approval', 'tasks'>>(this.http, '/api/v1/tasks/pending-approval', 'tasks', query, options);
  }
  /** A run of a task, with the task it belongs to. */
  taskRun(runId: string, options?: CallOptions) {
    return ok(this.http.api.GET('/api/v1/tasks/runs/{runId}', { ...options, params: { path: { runId } } }));
  }
  retry(id: string, options?: CallOptions) {
    return ok(this.http.api.POST('/api/v1/tasks/{id}/retry', { ...options, params: { path: { id } } }));
  }
  approve(id: string, options?: CallOptions) {
    return ok(this.http.api.POST('/api/v1/tasks/{id}/approve', { ...options, params: { path: { id } } }));
  }
  reject(id: string, options?: CallOptions) {
    return ok(this.http.api.POST('/api/v1/tasks/{id}/reject', { ...options, params: { path: { id } } }));
  }
  /** The task's runs, newest first. */
  runs(id: string, query: ListQuery<'/api/v1/tasks/{id}/runs'> = {}, options?: CallOptions) {
    return paged<Items<'/api/v1/tasks/{id}/runs', 'runs'>>(this.http, `/api/v1/tasks/${seg(id)}/runs`, 'runs', query, options);
  }
  /** The task's fires (schedule ticks, webhook deliveries) and what each decided. */
  fires(id: string, query: ListQuery<'/api/v1/tasks/{id}/fires'> = {}, options?: CallOptions) {
    return paged<Items<'/api/v1/tasks/{id}/fires', 'fires'>>(this.http, `/api/v1/tasks/${seg(id)}/fires`, 'fires', query, options);
  }
  /**
   * Delivers a webhook to a webhook task as its sender would: `body` signed with the task's secret
   * (HMAC-SHA256 of "<timestamp>.<body>", docs/tasks.md); no API credential is sent.
   */
  async trigger(taskId: string, body: unknown, secret: string, options?: CallOptions) {
    const raw = JSON.stringify(body);
    const timestamp = String(Math.floor(Date.now() / 1000));
    const subtle = globalThis.crypto.subtle;
    const key = await subtle.importKey('raw', new TextEncoder().encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    const mac = new Uint8Array(await subtle.sign('HMAC', key, new TextEncoder().encode(`${timestamp}.${raw}`)));
    const signature = [...mac].map((b) => b.toString(16).padStart(2, '0')).join('');
    return ok(
      this.http.api.POST('/api/v1/hooks/{taskId}', {
        ...options,
        params: { path: { taskId } },
        headers: {
          ...options?.headers,
          'content-type': 'application/json',
          'x-agentry-timestamp': timestamp,
          'x-agentry-signature': `sha256=${signature}`,
        },
        body: raw as never,
        bodySerializer: (value: unknown) => value,
      }),
    );
  }
}

/** Tool calls waiting for a person (docs/runtime.md, "Approvals"). */
class Approvals {
  constructor(private readonly http: Http) {}

  list(query: ListQuery<'/api/v1/approvals'> = {}, options?: CallOptions) {
    return paged<Items<'/api/v1/approvals', 'approvals'>>(this.http, '/api/v1/approvals', 'approvals', query, options);
  }
  get(id: string, options?: CallOptions) {
    return ok(this.http.api.GET('/api/v1/approvals/{id}', { ...options, params: { path: { id } } }));
  }
  /** Lets the call run (with `arguments` instead of the model's, when given). */
  approve(id: string, body: BodyOf<paths['/api/v1/approvals/{id}/approve']['post']> = {}, options?: CallOptions) {
    return ok(this.http.api.POST('/api/v1/approvals/{id}/approve', { ...options, params: { path: { id } }, body }));
  }
  /** Refuses the call; `reason` is what the model is told. */
  reject(id: string, body: BodyOf<paths['/api/v1/approvals/{id}/reject']['post']>, options?: CallOptions) {
    return ok(this.http.api.POST('/api/v1/approvals/{id}/reject', { ...options, params: { path: { id } }, body }));
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
  update(id: string, body: BodyOf<paths['/api/skills/{id}']['patch']>, options?: CallOptions) {
    return ok(this.http.api.PATCH('/api/skills/{id}', { ...options, params: { path: { id } }, body }));
  }
  categories(options?: CallOptions) {
    return ok(this.http.api.GET('/api/skills/categories', options));
  }
  /** The skill store: skills a tenant can acquire. */
  store(query: QueryOf<paths['/api/skills/store']['get']> = {}, options?: CallOptions) {
    return ok(this.http.api.GET('/api/skills/store', { ...options, params: { query } }));
  }
  storeSkill(id: string, options?: CallOptions) {
    return ok(this.http.api.GET('/api/skills/store/{id}', { ...options, params: { path: { id } } }));
  }
  /** Copies a store skill into the tenant. */
  acquire(id: string, options?: CallOptions) {
    return ok(this.http.api.POST('/api/skills/store/{id}/acquire', { ...options, params: { path: { id } } }));
  }
  /** The skills assigned to an agent, in priority order. */
  forAgent(agentId: string, options?: CallOptions) {
    return ok(this.http.api.GET('/api/skills/agent/{agentId}', { ...options, params: { path: { agentId } } }));
  }
  /** Imports a skill: the text of a SKILL.md, or `{ skillMd, references, scripts }`. */
  import(skill: string | BodyOf<paths['/api/skills/import']['post']>, options?: CallOptions) {
    const markdown = typeof skill === 'string';
    return ok(
      this.http.api.POST('/api/skills/import', {
        ...options,
        headers: { ...options?.headers, 'content-type': markdown ? 'text/markdown' : 'application/json' },
        body: skill as never,
        bodySerializer: (value: unknown) => (markdown ? value : JSON.stringify(value)),
      }),
    );
  }
  /** The skill as its SKILL.md text (`md`, the default) or a zip of its folder. */
  async export(id: string, format: 'md' | 'zip' = 'md', options?: CallOptions): Promise<Blob> {
    const response = await this.http.send('GET', `/api/skills/${seg(id)}/export`, {
      ...options,
      query: { format },
      headers: { accept: '*/*', ...options?.headers },
    });
    return response.blob();
  }
  /** The agents the skill is assigned to. */
  agents(id: string, options?: CallOptions) {
    return ok(this.http.api.GET('/api/skills/{id}/agents', { ...options, params: { path: { id } } }));
  }
  unassign(id: string, agentId: string, options?: CallOptions) {
    return none(this.http.api.DELETE('/api/skills/{id}/unassign/{agentId}', { ...options, params: { path: { id, agentId } } }));
  }
  updateAssignment(
    id: string,
    agentId: string,
    body: BodyOf<paths['/api/skills/{id}/assignments/{agentId}']['patch']>,
    options?: CallOptions,
  ) {
    return ok(this.http.api.PATCH('/api/skills/{id}/assignments/{agentId}', { ...options, params: { path: { id, agentId } }, body }));
  }
  assign(id: string, body: BodyOf<paths['/api/skills/{id}/assign']['post']>, options?: CallOptions) {
    return this.http.json<ResponseOf<paths['/api/skills/{id}/assign']['post']>>('POST', `/api/skills/${seg(id)}/assign`, {
      ...options,
      body,
    });
  }
}

/** Connectors to outside services, their connections and the agents' requests for them. */
class Connectors {
  constructor(private readonly http: Http) {}

  list(query: QueryOf<paths['/api/v1/connectors']['get']> = {}, options?: CallOptions) {
    return ok(this.http.api.GET('/api/v1/connectors', { ...options, params: { query } }));
  }
  /** Agents' requests to use a connector, newest first. */
  requests(query: ListQuery<'/api/v1/connectors/requests'> = {}, options?: CallOptions) {
    return paged<Items<'/api/v1/connectors/requests', 'requests'>>(this.http, '/api/v1/connectors/requests', 'requests', query, options);
  }
  get(id: string, options?: CallOptions) {
    return ok(this.http.api.GET('/api/v1/connectors/{id}', { ...options, params: { path: { id } } }));
  }
  /** Connects the tenant to the service with its credentials (sealed at rest on the server). */
  connect(id: string, body: BodyOf<paths['/api/v1/connectors/{id}/connect']['post']>, options?: CallOptions) {
    return ok(this.http.api.POST('/api/v1/connectors/{id}/connect', { ...options, params: { path: { id } }, body }));
  }
  updateConnection(id: string, body: BodyOf<paths['/api/v1/connectors/{id}/connection']['patch']>, options?: CallOptions) {
    return ok(this.http.api.PATCH('/api/v1/connectors/{id}/connection', { ...options, params: { path: { id } }, body }));
  }
  disconnect(id: string, options?: CallOptions) {
    return none(this.http.api.POST('/api/v1/connectors/{id}/disconnect', { ...options, params: { path: { id } } }));
  }
}

class Identity {
  constructor(private readonly http: Http) {}

  /** The agent's OAuth client metadata (public, for relying parties). */
  clientMetadata(agentId: string, options?: CallOptions) {
    return ok(this.http.api.GET('/api/v1/identity/agents/{agentId}/client-metadata.json', { ...options, params: { path: { agentId } } }));
  }
  /** The agent's public keys (JWKS). */
  agentJwks(agentId: string, options?: CallOptions) {
    return ok(this.http.api.GET('/api/v1/identity/agents/{agentId}/jwks.json', { ...options, params: { path: { agentId } } }));
  }
  /** The server's token-signing keys (JWKS). */
  jwks(options?: CallOptions) {
    return ok(this.http.api.GET('/api/v1/identity/.well-known/jwks.json', options));
  }
  /** The SPIFFE trust bundle of the server's trust domain. */
  trustBundle(options?: CallOptions) {
    return ok(this.http.api.GET('/.well-known/spiffe/trust-bundle', options));
  }
  /** An SVID (a JWT naming the agent) for the given audience. */
  svid(agentId: string, body: BodyOf<paths['/api/v1/identity/agents/{agentId}/svid']['post']>, options?: CallOptions) {
    return ok(this.http.api.POST('/api/v1/identity/agents/{agentId}/svid', { ...options, params: { path: { agentId } }, body }));
  }
  revokeKey(agentId: string, keyId: string, options?: CallOptions) {
    return none(
      this.http.api.DELETE('/api/v1/identity/agents/{agentId}/keys/{keyId}', { ...options, params: { path: { agentId, keyId } } }),
    );
  }
  /** Whether a token may call a tool of a callee agent (TBAC), as a callee asks. */
  authorize(body: BodyOf<paths['/api/v1/identity/authorize']['post']>, options?: CallOptions) {
    return ok(this.http.api.POST('/api/v1/identity/authorize', { ...options, body }));
  }
  /** The TBAC mode: `audit` (log denials) or `enforce`. */
  mode(options?: CallOptions) {
    return ok(this.http.api.GET('/api/v1/identity/tbac/mode', options));
  }
  setMode(body: BodyOf<paths['/api/v1/identity/tbac/mode']['put']>, options?: CallOptions) {
    return ok(this.http.api.PUT('/api/v1/identity/tbac/mode', { ...options, body }));
  }
  /** The OAuth token endpoint (client_credentials, token exchange), sent as a form. */
  token(body: TokenRequest, options?: CallOptions) {
    return ok(
      this.http.api.POST('/api/v1/identity/oauth/token', {
        ...options,
        headers: { ...options?.headers, 'content-type': 'application/x-www-form-urlencoded' },
        body,
      }),
    );
  }
  /** Whether a token is active, and what it holds (RFC 7662). */
  introspect(body: BodyOf<paths['/api/v1/identity/oauth/introspect']['post']>, options?: CallOptions) {
    return ok(this.http.api.POST('/api/v1/identity/oauth/introspect', { ...options, body }));
  }

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

/** The tenant the credential belongs to, and its settings. */
class Tenant {
  constructor(private readonly api: Api) {}

  /** The tenant and the credential's own type and permissions. */
  get(options?: CallOptions) {
    return ok(this.api.GET('/api/v1/tenant', options));
  }
  limits(options?: CallOptions) {
    return ok(this.api.GET('/api/v1/limits', options));
  }
  setLimits(body: BodyOf<paths['/api/v1/limits']['put']>, options?: CallOptions) {
    return ok(this.api.PUT('/api/v1/limits', { ...options, body }));
  }
  /** How long runs, conversations and audit events are kept. */
  retention(options?: CallOptions) {
    return ok(this.api.GET('/api/v1/retention', options));
  }
  setRetention(body: BodyOf<paths['/api/v1/retention']['put']>, options?: CallOptions) {
    return ok(this.api.PUT('/api/v1/retention', { ...options, body }));
  }
}

/** Code execution (docs/code-execution.md): the tenant's limits, within the server's maxima. */
class Code {
  constructor(private readonly api: Api) {}

  /** The tenant's limits and the server's maxima. */
  settings(options?: CallOptions) {
    return ok(this.api.GET('/api/v1/code/settings', options));
  }
  /** Sets limits (null: back to the server's maximum); a value above the maximum is a 400. */
  setSettings(body: BodyOf<paths['/api/v1/code/settings']['put']>, options?: CallOptions) {
    return ok(this.api.PUT('/api/v1/code/settings', { ...options, body }));
  }
}

/** Knowledge bases (docs/knowledge.md): documents are ingested in the background; search answers passages with citations. */
class Knowledge {
  /** A knowledge base's documents. */
  readonly documents: KnowledgeDocuments;

  constructor(private readonly http: Http) {
    this.documents = new KnowledgeDocuments(http);
  }

  /** The tenant's knowledge bases, newest first, page after page. */
  list(query: ListQuery<'/api/v1/knowledge-bases'> = {}, options?: CallOptions) {
    return paged<KnowledgeBase>(this.http, '/api/v1/knowledge-bases', 'knowledgeBases', query, options);
  }
  get(id: string, options?: CallOptions) {
    return this.http.json<KnowledgeBase>('GET', `/api/v1/knowledge-bases/${seg(id)}`, options);
  }
  create(body: KnowledgeBaseInput, options?: CallOptions) {
    return this.http.json<KnowledgeBase>('POST', '/api/v1/knowledge-bases', { ...options, body });
  }
  /** Changes the fields given; a new embeddingModel or chunking indexes every document again. */
  update(id: string, body: KnowledgeBaseUpdate, options?: CallOptions) {
    return this.http.json<KnowledgeBase>('PATCH', `/api/v1/knowledge-bases/${seg(id)}`, { ...options, body });
  }
  delete(id: string, options?: CallOptions) {
    return this.http.json<void>('DELETE', `/api/v1/knowledge-bases/${seg(id)}`, options);
  }
  /** Passages with citations, best first (mode hybrid unless given). */
  search(id: string, body: KnowledgeSearchInput, options?: CallOptions) {
    return this.http.json<KnowledgeSearchResult>('POST', `/api/v1/knowledge-bases/${seg(id)}/search`, { ...options, body });
  }
}

class KnowledgeDocuments {
  constructor(private readonly http: Http) {}

  private path(baseId: string, documentId?: string) {
    return `/api/v1/knowledge-bases/${seg(baseId)}/documents${documentId === undefined ? '' : `/${seg(documentId)}`}`;
  }
  /** The base's documents, newest first; `status` for those in it. */
  list(baseId: string, query: ListQuery<'/api/v1/knowledge-bases/{id}/documents'> = {}, options?: CallOptions) {
    return paged<KnowledgeDocument>(this.http, this.path(baseId), 'documents', query, options);
  }
  get(baseId: string, documentId: string, options?: CallOptions) {
    return this.http.json<KnowledgeDocument>('GET', this.path(baseId, documentId), options);
  }
  /** Adds a document (`content`, or `fileId` of an uploaded file): queued, then indexing, then ready or failed. */
  add(baseId: string, body: KnowledgeDocumentInput, options?: CallOptions) {
    return this.http.json<KnowledgeDocument>('POST', this.path(baseId), { ...options, body });
  }
  /**
   * Uploads one file as a document (multipart/form-data, at most 5 MiB: a larger one is a 413
   * AgentryError); `name` defaults to the File's own name, the Blob's type is its media type.
   */
  upload(baseId: string, file: Blob, options: CallOptions & { name?: string } = {}) {
    const form = new FormData();
    const name = options.name ?? ((file as { name?: unknown }).name as string | undefined) ?? 'document';
    form.append('file', file, name);
    return this.http.json<KnowledgeDocument>('POST', `${this.path(baseId)}/upload`, {
      signal: options.signal,
      headers: options.headers,
      form,
    });
  }
  /** A new version; the one indexed before stays searchable until it is ready. */
  replace(baseId: string, documentId: string, body: KnowledgeDocumentInput, options?: CallOptions) {
    return this.http.json<KnowledgeDocument>('PUT', this.path(baseId, documentId), { ...options, body });
  }
  delete(baseId: string, documentId: string, options?: CallOptions) {
    return this.http.json<void>('DELETE', this.path(baseId, documentId), options);
  }
  /** The chunk at `position` of the indexed version: the passage a citation points at (404 when there is none). */
  chunk(baseId: string, documentId: string, position: number, options?: CallOptions) {
    return this.http.json<KnowledgeChunk>('GET', `${this.path(baseId, documentId)}/chunks/${seg(String(position))}`, options);
  }
}

class Usage {
  constructor(private readonly api: Api) {}

  /** Runs, tokens and cost per day and agent between `from` and `to` (YYYY-MM-DD). */
  daily(query: QueryOf<paths['/api/v1/usage/daily']['get']> = {}, options?: CallOptions) {
    return ok(this.api.GET('/api/v1/usage/daily', { ...options, params: { query } }));
  }

  /** Tokens knowledge spent with providers per day, base, kind (ingestion, query, rerank) and model; `runId`: one run's. */
  knowledge(query: QueryOf<paths['/api/v1/knowledge-usage']['get']> = {}, options?: CallOptions) {
    return ok(this.api.GET('/api/v1/knowledge-usage', { ...options, params: { query } }));
  }
}

/** The server's probes (public). */
class Health {
  constructor(private readonly api: Api) {}

  live(options?: CallOptions) {
    return ok(this.api.GET('/healthz', options));
  }
  /** Ready to serve: an AgentryError (503) while it is not. */
  ready(options?: CallOptions) {
    return ok(this.api.GET('/readyz', options));
  }
}
