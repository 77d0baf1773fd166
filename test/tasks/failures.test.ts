import { describe, expect, it } from 'vitest';
import { Conflict, LimitExceeded, NotFound, Unavailable } from '../../src/errors.js';
import { errorColumn, objectColumn, optionalObjectColumn } from '../../src/tasks/columns.js';
import { startFailure } from '../../src/tasks/failures.js';

describe('a refused start, as the task worker reads it', () => {
  it('the tenant at its limit, or a replica stopping: try later, after Retry-After (5 s without one)', () => {
    const limited = new LimitExceeded('concurrency_limit', 'the tenant runs its maximum', 2);
    expect(startFailure(limited)).toEqual({
      kind: 'refused_for_now',
      retryAfterSeconds: 2,
      error: { code: 'concurrency_limit', message: 'the tenant runs its maximum' },
    });
    expect(startFailure(new Unavailable('shutting_down', 'the server is stopping'))).toMatchObject({
      kind: 'refused_for_now',
      retryAfterSeconds: 5,
    });
  });

  it('the database away: queued again after 5 s, whether the driver says so or a domain error does', () => {
    const expected = {
      kind: 'database_unavailable',
      retryAfterSeconds: 5,
      error: { code: 'database_unavailable', message: 'the database could not be reached' },
    };
    expect(startFailure(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }))).toEqual(expected);
    expect(startFailure(new Error('Connection terminated unexpectedly'))).toEqual(expected);
    expect(startFailure(new Unavailable('database_unavailable', 'the database does not answer'))).toEqual(expected);
  });

  it('a storage fault (disk full, EIO, read-only): queued again after 30 s, the attempt not spent', () => {
    const expected = {
      kind: 'database_unavailable',
      retryAfterSeconds: 30,
      error: { code: 'storage_unavailable', message: 'the database could not write (disk full, failing or read-only)' },
    };
    for (const code of ['SQLITE_FULL', 'SQLITE_IOERR_WRITE', 'SQLITE_READONLY', '53100', '25006']) {
      expect(startFailure(Object.assign(new Error('database or disk is full'), { code }))).toEqual(expected);
    }
  });

  it('a transaction PostgreSQL aborted as a deadlock or a serialization failure: tried again after 1 s, the attempt not spent', () => {
    for (const code of ['40P01', '40001']) {
      expect(startFailure(Object.assign(new Error('deadlock detected'), { code }))).toEqual({
        kind: 'refused_for_now',
        retryAfterSeconds: 1,
        error: {
          code: 'transaction_conflict',
          message: 'the database aborted the start’s transaction for meeting another one (a deadlock); nothing of it was written',
        },
      });
    }
  });

  it('a missing agent, a rule that refuses, and a fault are told apart', () => {
    expect(startFailure(new NotFound('agent'))).toEqual({
      kind: 'agent_gone',
      error: { code: 'agent_not_found', message: 'the task’s agent no longer exists' },
    });
    expect(startFailure(new Conflict('agent_paused', 'the agent is paused'))).toEqual({
      kind: 'refused',
      error: { code: 'agent_paused', message: 'the agent is paused' },
    });
    expect(startFailure(new Error('boom'))).toMatchObject({ kind: 'unexpected', error: { code: 'internal_error' } });
  });
});

describe('JSON columns of tasks', () => {
  it('parse through their schemas; a damaged value is an error naming the column', () => {
    expect(objectColumn('{"a":1}', 'tasks.input')).toEqual({ a: 1 });
    expect(optionalObjectColumn(null, 'tasks.approval_payload')).toBeNull();
    expect(errorColumn('{"code":"model_error","message":"no"}', 'tasks.last_error')).toEqual({ code: 'model_error', message: 'no' });
    expect(() => objectColumn('[1,2]', 'tasks.input')).toThrow('the stored tasks.input does not fit its schema');
    expect(() => errorColumn('{"code":1}', 'tasks.last_error')).toThrow('tasks.last_error');
  });
});
