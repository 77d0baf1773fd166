import { Counter } from 'prom-client';
import type { Metrics } from './registry.js';

/** What one retention sweep pass did (retention/sweep.ts SweepCounts; metrics import no domain). */
interface SweptCounts {
  runs: number;
  compactedRuns: number;
  compactedEvents: number;
  conversations: number;
  files: number;
  auditEvents: number;
  knowledgeUsage: number;
  reclaimedPages: number;
  failures: number;
}

/** Counts the retention sweep's work (docs/operations.md, "Retention"): what the sweep is given to tell each pass's counts. */
export function retentionObserver(metrics: Metrics): (counts: SweptCounts) => void {
  const registers = [metrics.registry];
  const passes = new Counter({ name: 'agentry_retention_sweeps_total', help: 'Retention sweep passes run here', registers });
  const deleted = new Counter({
    name: 'agentry_retention_deleted_total',
    help: 'Rows the retention sweep deleted, by kind (runs, conversations, files, audit_events, knowledge_usage; run_events: by compaction)',
    labelNames: ['kind'],
    registers,
  });
  const compacted = new Counter({ name: 'agentry_retention_compacted_runs_total', help: 'Runs whose events were compacted', registers });
  const reclaimed = new Counter({
    name: 'agentry_retention_reclaimed_pages_total',
    help: 'SQLite pages handed back to the file system after a sweep (incremental vacuum)',
    registers,
  });
  const failures = new Counter({
    name: 'agentry_retention_failures_total',
    help: 'Kinds of a tenant (or the space handed back) a retention pass left to the next one because they kept failing',
    registers,
  });
  return (c) => {
    passes.inc();
    deleted.inc({ kind: 'runs' }, c.runs);
    deleted.inc({ kind: 'run_events' }, c.compactedEvents);
    deleted.inc({ kind: 'conversations' }, c.conversations);
    deleted.inc({ kind: 'files' }, c.files);
    deleted.inc({ kind: 'audit_events' }, c.auditEvents);
    deleted.inc({ kind: 'knowledge_usage' }, c.knowledgeUsage);
    compacted.inc(c.compactedRuns);
    // The same rows by table (agentry_retention_deleted_rows_total, docs/operations.md): run_events deleted by compaction.
    for (const [table, rows] of [
      ['runs', c.runs],
      ['run_events', c.compactedEvents],
      ['conversations', c.conversations],
      ['files', c.files],
      ['audit_events', c.auditEvents],
      ['knowledge_usage', c.knowledgeUsage],
    ] as const)
      metrics.retentionDeleted(table, rows);
    reclaimed.inc(c.reclaimedPages);
    failures.inc(c.failures);
  };
}
