import fs from 'node:fs';
import type { Metrics } from './registry.js';

/** What the gauges read, as app.ts hands it over (shapes, not the domains' types: metrics import no domain). */
interface Observed {
  app: object;
  db: { dialect: string; location: string; poolStats?: () => { total: number; idle: number; waiting: number } };
  runs: { activeCount: number };
  tasks: { queueStats(): Promise<{ queued: number; running: number; lagSeconds: number; awaitingApproval: number }> };
  /** Tool calls waiting for a person (approvals/service.ts). */
  approvals?: { pendingCount(): Promise<number> };
  /** The model providers: this process's breakers (runtime/models/breaker.ts). */
  models?: { breakers: { states(): { model: string; status: string; opened: number }[] } };
  /** Open SSE streams of `app` (http/sse.ts). */
  openStreams(app: object): number;
}

/** Points the metrics' gauges at the services: each is read when Prometheus scrapes, never on a request's path. */
export function observeServices(metrics: Metrics, o: Observed) {
  const s = metrics.sources;
  s.activeRuns = () => o.runs.activeCount;
  s.openStreams = () => o.openStreams(o.app);
  s.tasks = () => o.tasks.queueStats();
  if (o.approvals) {
    const approvals = o.approvals;
    s.toolApprovals = () => approvals.pendingCount();
  }
  if (o.db.poolStats) s.pool = o.db.poolStats;
  if (o.models) {
    const breakers = o.models.breakers;
    s.breakers = () => breakers.states();
  }
  if (o.db.dialect === 'sqlite') {
    const wal = `${o.db.location}-wal`;
    s.walBytes = () => {
      try {
        return fs.statSync(wal).size;
      } catch {
        return 0; // no WAL file (checkpointed and removed, or not yet written)
      }
    };
  }
}
