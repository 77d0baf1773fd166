import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { type Db, ping } from '../db/database.js';
import { ProblemError, storageUnavailable } from './errors.js';
import { problems } from './schemas.js';

export interface HealthPluginOptions {
  /** The database /readyz asks. */
  db: Db;
}

/** Liveness (/healthz: the process answers) and readiness (/readyz: the database answers too); both public. */
export const healthPlugin: FastifyPluginAsyncTypebox<HealthPluginOptions> = async (app, { db }) => {
  app.get(
    '/healthz',
    {
      config: { public: true },
      schema: {
        operationId: 'getHealth',
        tags: ['health'],
        summary: 'Liveness',
        response: { 200: Type.Object({ status: Type.Literal('ok') }) },
      },
    },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      config: { public: true },
      schema: {
        operationId: 'getReadiness',
        tags: ['health'],
        summary: 'Readiness: the database answers, and has not been refusing writes (disk full, read-only, I/O errors)',
        response: { 200: Type.Object({ status: Type.Literal('ready'), database: Type.String() }), ...problems(503) },
      },
    },
    async () => {
      try {
        await ping(db);
      } catch {
        throw new ProblemError(503, 'database_unavailable', 'the database does not answer');
      }
      // Reads may work while writes fail: a recent storage fault with no successful write since is not ready.
      if (db.writeHealth.recentFault()) throw storageUnavailable();
      return { status: 'ready' as const, database: db.dialect };
    },
  );
};
