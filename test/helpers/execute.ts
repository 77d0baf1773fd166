import type { Client } from 'openapi-fetch';
import type { paths } from '../../packages/client/src/generated/openapi.js';
import type { TestApp } from './app.js';

type Execute = paths['/api/v1/agents/{id}/execute']['post'];
export type ExecuteBody = NonNullable<Execute['requestBody']>['content']['application/json'];
/** A finished run's answer: the 200 JSON of execute. */
export type RunAnswer = Execute['responses'][200]['content']['application/json'];
/** Its headers: an Idempotency-Key, and Last-Event-ID for a stream's replay. */
export type ExecuteHeader = Execute['parameters']['header'];

async function post(
  api: Client<paths>,
  agentId: string,
  body: ExecuteBody,
  init: { headers?: Record<string, string>; header?: ExecuteHeader } = {},
) {
  const result = await api.POST('/api/v1/agents/{id}/execute', {
    params: { path: { id: agentId }, header: init.header },
    body,
    headers: init.headers,
  });
  const json = result.response.status === 200 && typeof result.data === 'object';
  return { ...result, run: json ? (result.data as RunAnswer) : undefined };
}

/**
 * POST /api/v1/agents/{id}/execute through the typed client. Its success types are a union (the run's
 * JSON, an SSE stream when `stream` is set, a 202 when a message is injected); `run` is the run's JSON
 * when the answer is one (200 JSON), so tests need not narrow it themselves. Called with the test app
 * and a key, `data` itself is typed as the run's JSON.
 */
export function execute(api: Client<paths>, agentId: string, body: ExecuteBody, header?: ExecuteHeader): ReturnType<typeof post>;
export function execute(
  t: Pick<TestApp, 'api'>,
  key: string,
  agentId: string,
  body: ExecuteBody,
  init?: { headers?: Record<string, string> },
): Promise<Omit<Awaited<ReturnType<typeof post>>, 'data'> & { data: RunAnswer | undefined }>;
export async function execute(
  target: Client<paths> | Pick<TestApp, 'api'>,
  ...args: [string, string | ExecuteBody, (ExecuteBody | ExecuteHeader)?, { headers?: Record<string, string> }?]
) {
  if ('api' in target) {
    const [key, agentId, body, init] = args as [string, string, ExecuteBody, { headers?: Record<string, string> }?];
    const result = await post(target.api(key), agentId, body, init);
    return { ...result, data: result.data as RunAnswer | undefined };
  }
  const [agentId, body, header] = args as [string, ExecuteBody, ExecuteHeader?];
  return post(target, agentId, body, { header });
}
