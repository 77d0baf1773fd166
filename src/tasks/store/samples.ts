import { exportSample, type StoreSamples } from '../../db/sql-samples.js';
import * as exports from './export.js';
import * as store from './index.js';

type Store = typeof store & typeof exports;

const at = '2026-01-01T00:00:00.000Z';
const later = '2026-01-01T00:05:00.000Z';

const task = store.newTaskRow({
  id: 'task-1',
  tenant_id: 'tenant-1',
  agent_id: 'agent-1',
  app_id: 'app-1',
  name: 'Nightly report',
  description: 'Summarise the day',
  status: 'pending',
  created_at: at,
});

const job: store.JobRow = {
  id: 'job-1',
  tenant_id: 'tenant-1',
  task_id: 'task-1',
  kind: 'run',
  reason: 'schedule',
  input: '{}',
  serial: 0,
  priority_rank: 2,
  due_at: null,
  state: 'queued',
  attempts: 0,
  max_attempts: 3,
  backoff_seconds: 10,
  available_at: at,
  lease_owner: null,
  lease_expires_at: null,
  claimed_by: null,
  run_id: null,
  error: null,
  created_at: at,
  updated_at: at,
  traceparent: null,
};

const fire: store.FireRow = {
  id: 'fire-1',
  tenant_id: 'tenant-1',
  task_id: 'task-1',
  source: 'schedule',
  fire_key: '2026-01-01T00:00:00.000Z',
  scheduled_for: at,
  decided_at: at,
  decision: 'queued',
  reason: null,
  missed: 0,
  job_id: 'job-1',
  detail: '{}',
};

const claim: store.ClaimInput = { owner: 'process-1', now: at, leaseUntil: later };
const page = { limit: 50, offset: 0 };

export const samples = {
  // tasks.ts
  listTasks: {
    'no filter': [{ tenantId: 'tenant-1', filter: {}, ...page }],
    'every filter': [
      {
        tenantId: 'tenant-1',
        filter: { agentId: 'agent-1', teamId: 'team-1', appId: 'app-1', status: 'pending', type: 'scheduled' },
        ...page,
      },
    ],
  },
  findTask: ['tenant-1', 'task-1'],
  findTaskById: ['task-1'],
  newTaskRow: null,
  insertTask: [task],
  updateTask: {
    // tasks/worker.ts: an approval action started.
    started: ['task-1', { status: 'running', last_run_at: at, updated_at: at }],
    // tasks/service.ts: deleted.
    deleted: ['task-1', { deleted_at: at, next_run_at: null, updated_at: at }],
  },
  transitionTask: [
    {
      taskId: 'task-1',
      from: ['awaiting_approval'],
      set: {
        status: 'pending',
        decision: 'approved',
        decided_by_type: 'api_key',
        decided_by_id: 'key-1',
        decided_at: at,
        next_run_at: null,
        updated_at: at,
      },
    },
  ],
  recordRunEnd: [{ taskId: 'task-1', runId: 'run-1', status: 'completed', error: null, at }],
  listPendingApproval: [{ tenantId: 'tenant-1', ...page }],
  dueSchedules: [at, 100],
  claimFireTime: [{ taskId: 'task-1', due: at, next: later, at }],
  eventListeners: [{ tenantId: 'tenant-1', sourceTaskId: 'task-0', event: 'completed' }],
  countAwaitingApproval: [],
  // jobs.ts
  insertJob: [job],
  setJobInput: ['job-1', '{}'],
  findJobByRun: ['run-1'],
  jobsOfTask: ['task-1', store.ACTIVE_JOB_STATES],
  claimNextJobs: ({ db, dialect }) => store.claimNextJobs(db, dialect, claim, 4),
  claimJob: ['job-1', claim],
  markJobRunning: [{ jobId: 'job-1', owner: 'process-1', runId: 'run-1', at }],
  renewJobLeases: ({ db, dialect }) => store.renewJobLeases(db, dialect, { owner: 'process-1', jobIds: ['job-1', 'job-2'], until: later }),
  moveJob: {
    // tasks/settling.ts: a run ended, its job is done.
    'of a run': [{ jobId: 'job-1', from: ['running'], set: { state: 'done', error: null, updated_at: at }, runId: 'run-1' }],
    // tasks/settling.ts: a claim given back, unless renewed meanwhile.
    'of a lease': [
      {
        jobId: 'job-1',
        from: ['claimed'],
        set: { state: 'queued', lease_owner: null, lease_expires_at: null, updated_at: at },
        leaseExpiresAt: later,
        leaseOwner: 'process-1',
      },
    ],
    'of no lease': [{ jobId: 'job-1', from: ['claimed'], set: { state: 'cancelled', updated_at: at }, leaseExpiresAt: null }],
  },
  expiredClaims: [at, 100],
  runningJobs: [at, 100],
  queueStats: [at],
  // fires.ts
  insertFire: [fire],
  findFire: ['task-1', '2026-01-01T00:00:00.000Z'],
  listFires: [{ tenantId: 'tenant-1', taskId: 'task-1', ...page }],
  // export.ts
  exportSources: exportSample(exports.exportSources),
  newestWebhookSecret: [],
} satisfies StoreSamples<Store>;
