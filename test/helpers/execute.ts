import type { Client } from 'openapi-fetch';
import type { paths } from '../../packages/client/src/generated/openapi.js';

type Execute = paths['/api/v1/agents/{id}/execute']['post'];
export type ExecuteBody = NonNullable<Execute['requestBody']>['content']['application/json'];

/**
 * POST /api/v1/agents/{id}/execute through the typed client. Its success types are a union (the run's
 * JSON, an SSE stream when `stream` is set, a 202 when a message is injected); `run` is the run's JSON
 * when the answer is one (200 JSON), so tests need not narrow it themselves.
 */
export async function execute(api: Client<paths>, agentId: string, body: ExecuteBody) {
  const result = await api.POST('/api/v1/agents/{id}/execute', { params: { path: { id: agentId } }, body });
  const { data } = result;
  return { ...result, run: typeof data === 'object' && 'toolCalls' in data ? data : undefined };
}
