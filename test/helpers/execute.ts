import type { Client } from 'openapi-fetch';
import type { paths } from '../../packages/client/src/generated/openapi.js';

type Execute = paths['/api/v1/agents/{id}/execute']['post'];
export type ExecuteBody = NonNullable<Execute['requestBody']>['content']['application/json'];
/** A finished run's answer: the 200 JSON of execute. */
export type RunAnswer = Execute['responses'][200]['content']['application/json'];

/**
 * POST /api/v1/agents/{id}/execute through the typed client. Its success types are a union (the run's
 * JSON, an SSE stream when `stream` is set, a 202 when a message is injected); `run` is the run's JSON
 * when the answer is one (200 JSON), so tests need not narrow it themselves.
 */
export async function execute(api: Client<paths>, agentId: string, body: ExecuteBody) {
  const result = await api.POST('/api/v1/agents/{id}/execute', { params: { path: { id: agentId } }, body });
  const json = result.response.status === 200 && typeof result.data === 'object';
  return { ...result, run: json ? (result.data as RunAnswer) : undefined };
}
