import { describe, expect, it } from 'vitest';
import {
  BudgetExceeded,
  Conflict,
  Forbidden,
  InvalidInput,
  LimitExceeded,
  NotFound,
  RunFailed,
  Unauthenticated,
  Unavailable,
  Unprocessable,
} from '../../src/errors.js';
import { problemOf } from '../../src/http/errors.js';

describe('a domain error, as the HTTP layer answers it', () => {
  it('each kind becomes its status, keeping its code, detail, field errors and Retry-After', () => {
    const cases = [
      [new InvalidInput('body.x is bad', [{ path: 'body.x', message: 'is bad' }]), 400, 'validation_failed', undefined],
      [
        new Unauthenticated('invalid_signature', 'the signature does not match', 'HMAC-SHA256'),
        401,
        'invalid_signature',
        { 'www-authenticate': 'HMAC-SHA256' },
      ],
      [new BudgetExceeded('the tenant has spent $5 of its $5 monthly budget'), 402, 'budget_exceeded', undefined],
      [new Forbidden('not yours'), 403, 'forbidden', undefined],
      [new NotFound('agent'), 404, 'not_found', undefined],
      [new Conflict('agent_paused', 'the agent is paused'), 409, 'agent_paused', undefined],
      [new Unprocessable('idempotency_key_reused', 'the key was used with another request'), 422, 'idempotency_key_reused', undefined],
      [new LimitExceeded('concurrency_limit', 'the tenant runs its maximum', 1), 429, 'concurrency_limit', { 'retry-after': '1' }],
      [new RunFailed('model_error', 'the run failed'), 502, 'model_error', undefined],
      [new Unavailable('shutting_down', 'stopping', 1), 503, 'shutting_down', { 'retry-after': '1' }],
      [new Unavailable('database_unavailable', 'the database does not answer'), 503, 'database_unavailable', undefined],
    ] as const;
    for (const [err, status, code, headers] of cases) {
      const problem = problemOf(err);
      expect(problem).toMatchObject({ status, code, detail: err.detail });
      expect(problem.headers).toEqual(headers);
    }
    expect(problemOf(new NotFound('agent')).detail).toBe('agent not found');
    expect(problemOf(new NotFound('assignment', 'the skill is not assigned to that agent')).detail).toBe(
      'the skill is not assigned to that agent',
    );
    expect(problemOf(new InvalidInput('body.x is bad', [{ path: 'body.x', message: 'is bad' }])).errors).toEqual([
      { path: 'body.x', message: 'is bad' },
    ]);
  });
});
