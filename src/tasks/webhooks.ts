import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { Db } from '../db/database.js';
import { Conflict, InvalidInput, Unauthenticated } from '../errors.js';
import type { SecretBox } from '../identity/secret-box.js';
import type { Actor } from '../tenancy/permissions.js';
import type { TaskExecutor } from './executor.js';
import type { TraceContext } from '../tracing/tracing.js';
import { auditTask } from './lookup.js';
import * as store from './store/index.js';
import { SIGNATURE_HEADER, TIMESTAMP_HEADER, checkSignature, newWebhookSecret } from './webhook-signatures.js';

const WEBHOOK_ACTOR: Actor = { type: 'system', id: 'webhook' };
/**
 * What a delivery to an id with no webhook is checked against: a secret no one holds, so an unknown id
 * answers the same 401 as a known one with a bad signature, after the same work, and ids cannot be probed.
 */
const NO_ONES_SECRET = newWebhookSecret();

export interface WebhookDeliveriesOptions {
  db: Db;
  executor: TaskExecutor;
  /** Opens the tasks' sealed webhook secrets. */
  secrets: SecretBox;
  /** The app's clock: how far a delivery's timestamp may be from now. */
  clock: Clock;
  log: FastifyBaseLogger;
}

/** A delivery to POST /api/v1/hooks/:taskId, as the route hands it over. */
export interface Delivery {
  taskId: string;
  headers: Record<string, string | string[] | undefined>;
  rawBody: Buffer;
  /** The JSON parser of the other routes (size and depth limits). */
  parse: (raw: Buffer) => Promise<unknown>;
  /** Traced, the delivery's request span: the parent of the fire. */
  trace?: TraceContext;
}

/** Webhook deliveries of triggered tasks (docs/scheduling.md, "Webhook triggers"). */
export class WebhookDeliveries {
  constructor(private readonly o: WebhookDeliveriesOptions) {}

  /**
   * A delivery signed with the task's secret over `<timestamp>.<raw body>`. A bad, missing or stale
   * signature runs nothing (Unauthenticated), and so does any delivery to an id that has no webhook.
   * The same signed delivery twice fires once.
   */
  async deliver({ taskId, headers, rawBody, parse, trace }: Delivery) {
    const { db, executor, secrets, log } = this.o;
    const found = await store.findTaskById(db.kysely, taskId);
    const sealed = found?.trigger_type === 'webhook' ? found.webhook_secret : null;
    const task = sealed ? found : undefined;
    const header = (name: string) => {
      const v = headers[name];
      return Array.isArray(v) ? v[0] : v;
    };
    const secret = sealed && task ? secrets.open(sealed, task.id) : NO_ONES_SECRET;
    if (secret === null) log.warn({ taskId }, 'the webhook secret cannot be opened with this master key (MASTER_KEY changed?)');
    const signatureHeader = header(SIGNATURE_HEADER);
    const check =
      secret === null
        ? 'invalid_signature'
        : checkSignature(secret, { timestamp: header(TIMESTAMP_HEADER), signatureHeader, rawBody }, this.o.clock.now());
    if (check !== 'ok' || !task) {
      // (A signature checking out against no one's secret cannot happen; were it to, it is still refused.)
      const code = check === 'ok' ? 'invalid_signature' : check;
      const detail = {
        missing_signature: `send ${TIMESTAMP_HEADER} (unix seconds) and ${SIGNATURE_HEADER}: sha256=<hex HMAC-SHA256 of "<timestamp>.<body>" with the task secret>`,
        invalid_signature: 'the signature does not match the body and timestamp',
        signature_expired: 'the timestamp is more than 5 minutes away from the server time',
      }[code];
      throw new Unauthenticated(code, detail, 'HMAC-SHA256');
    }
    const body = rawBody.length ? await parse(rawBody) : {};
    if (!body || typeof body !== 'object' || Array.isArray(body)) {
      throw new InvalidInput('the body must be a JSON object (it becomes the run input)', [{ path: 'body', message: 'must be object' }]);
    }
    if (task.status === 'awaiting_approval')
      throw new Conflict('task_awaiting_approval', 'the task awaits approval; deliveries are refused until then');
    const key = `webhook:${signatureHeader!.trim().slice('sha256='.length).toLowerCase()}`;
    const result = await db.kysely.transaction().execute(async (trx) => {
      const r = await executor.fire(trx, task, { source: 'webhook', key, input: body as Record<string, unknown>, parent: trace });
      if (!r.duplicate) {
        const who = { tenantId: task.tenant_id, actor: WEBHOOK_ACTOR };
        await auditTask(trx, {
          who,
          action: 'task.webhook_received',
          taskId: task.id,
          detail: { fireId: r.fire.id, decision: r.fire.decision },
        });
      }
      return r;
    });
    if (result.job) executor.onEnqueued();
    return {
      accepted: true as const,
      taskId: task.id,
      fireId: result.fire.id,
      decision: result.fire.decision,
      reason: result.fire.reason,
      duplicate: result.duplicate,
    };
  }
}
