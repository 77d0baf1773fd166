import { AgentryError, type TbacPolicy } from '@agentry/client';
import { describe, expect, it } from 'vitest';
import {
  candidatePolicies,
  conditionErrorsOf,
  conditionsHold,
  conditionsOf,
  describeConditions,
  draftOf,
  emptyConditionsDraft,
  whyNotHolding,
  type Conditions,
} from '../../packages/console/src/lib/conditions.js';
import { decide } from '../../src/identity/tbac.js';

/* The console's reading of TBAC conditions (the identity page's form and its decision tester), held to the server's. */

const policy = (conditions: Conditions | null, fields: Partial<TbacPolicy> = {}): TbacPolicy => ({
  id: 'p1',
  callerAgentId: 'a',
  calleeAgentId: 'b',
  toolName: 'search',
  effect: 'allow',
  description: null,
  conditions,
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
  ...fields,
});

describe('TBAC conditions in the console', () => {
  it('holds exactly when the server’s decision applies the policy, at every quarter hour of two days', () => {
    const cases: Conditions[] = [
      { timeWindow: { start: '08:00', end: '18:00' } },
      { timeWindow: { start: '22:00', end: '06:00' } },
      { notBefore: '2026-11-26T10:00:00.000Z' },
      { notAfter: '2026-11-26T10:00:00.000Z' },
      { notBefore: '2026-11-26T06:00:00.000Z', notAfter: '2026-11-27T06:00:00.000Z', timeWindow: { start: '23:45', end: '00:15' } },
    ];
    const start = Date.parse('2026-11-25T23:00:00Z');
    for (const conditions of cases) {
      for (let at = start; at < start + 48 * 3_600_000; at += 15 * 60_000) {
        // Enforce mode and an allow policy: allowed exactly when its conditions hold.
        const server = decide([policy(conditions)], 'enforce', { caller: 'a', callee: 'b', tool: 'search' }, at).allowed;
        expect(conditionsHold(conditions, at), `${JSON.stringify(conditions)} at ${new Date(at).toISOString()}`).toBe(server);
      }
    }
  });

  it('says why they do not hold, in words', () => {
    const at = Date.parse('2026-11-26T12:30:00Z');
    expect(whyNotHolding({ timeWindow: { start: '14:00', end: '15:00' } }, at)).toBe('outside its daily window 14:00–15:00 UTC');
    expect(whyNotHolding({ notBefore: '2026-12-01T00:00:00.000Z' }, at)).toBe('not before 2026-12-01 00:00 UTC');
    expect(whyNotHolding({ notAfter: '2026-11-01T00:00:00.000Z' }, at)).toBe('expired at 2026-11-01 00:00 UTC');
    expect(whyNotHolding(null, at)).toBeNull();
    expect(describeConditions({ notAfter: '2099-01-01T00:00:00.000Z', timeWindow: { start: '08:00', end: '18:00' } })).toBe(
      'until 2099-01-01 00:00 UTC, daily 08:00–18:00 UTC',
    );
  });

  it('turns the form into what the API takes and back, empty meaning none; a half window is sent for the server to name', () => {
    expect(conditionsOf(emptyConditionsDraft)).toBeNull();
    const stored = { notBefore: '2026-12-01T09:30:00.000Z', timeWindow: { start: '08:00', end: '18:00' } };
    expect(draftOf(stored)).toEqual({ notBefore: '2026-12-01T09:30', notAfter: '', windowStart: '08:00', windowEnd: '18:00' });
    expect(conditionsOf(draftOf(stored))).toEqual(stored);
    expect(conditionsOf({ ...emptyConditionsDraft, windowStart: '08:00' })).toEqual({ timeWindow: { start: '08:00' } });
  });

  it('places the server’s field errors at their inputs', () => {
    const err = new AgentryError({
      status: 400,
      code: 'validation_failed',
      detail: 'invalid',
      errors: [
        { path: 'body.conditions.notAfter', message: 'must be later than notBefore' },
        { path: 'body.conditions.timeWindow.end', message: 'is required' },
        { path: 'body.conditions.extra', message: 'is not a known field' },
        { path: 'body.toolName', message: 'must match pattern' },
      ],
    });
    expect(conditionErrorsOf(err)).toEqual({
      notAfter: 'must be later than notBefore',
      windowEnd: 'is required',
      conditions: 'is not a known field',
    });
    expect(conditionErrorsOf(new Error('network'))).toEqual({});
  });

  it('lists the policies that could decide a request, wildcards included', () => {
    const policies = [
      policy(null, { id: 'exact' }),
      policy(null, { id: 'any-caller', callerAgentId: '*' }),
      policy(null, { id: 'other-tool', toolName: 'write' }),
      policy(null, { id: 'any-tool', toolName: '*' }),
    ];
    expect(candidatePolicies(policies, 'a', 'b', 'search').map((p) => p.id)).toEqual(['exact', 'any-caller', 'any-tool']);
  });
});
