import { DeferredInserts } from '../db/group-commit.js';
import { exportSample, type StoreSamples } from '../db/sql-samples.js';
import * as store from './store.js';

const at = '2026-01-01T00:00:00.000Z';

const conversation: store.ConversationRow = {
  id: 'conversation-1',
  tenant_id: 'tenant-1',
  agent_id: 'agent-1',
  app_id: null,
  name: null,
  status: 'active',
  metadata: '{}',
  message_count: 0,
  last_message_at: null,
  duration_ms: 0,
  active_run_id: null,
  created_by: null,
  created_at: at,
  updated_at: at,
  deleted_at: null,
  user_id: null,
};

const message: store.MessageRow = {
  id: 'message-1',
  tenant_id: 'tenant-1',
  conversation_id: 'conversation-1',
  run_id: 'run-1',
  role: 'user',
  content: 'hello',
  tool_calls: null,
  token_usage: null,
  attachments: null,
  created_at: at,
};

const file: store.FileRow = {
  id: 'file-1',
  tenant_id: 'tenant-1',
  name: 'notes.txt',
  content_type: 'text/plain',
  size: 5,
  data: 'aGVsbG8=',
  created_by: null,
  created_at: at,
  run_id: null,
  tool_call_id: null,
};

export const samples = {
  listConversations: {
    'no filter': [{ tenantId: 'tenant-1', filter: {}, limit: 50, offset: 0 }],
    'every filter': [
      { tenantId: 'tenant-1', filter: { agentId: 'agent-1', status: 'active', appId: 'app-1', userId: 'user-1' }, limit: 50, offset: 0 },
    ],
  },
  findConversation: ['tenant-1', 'conversation-1'],
  insertConversation: [conversation],
  updateConversation: {
    update: ['tenant-1', 'conversation-1', { name: 'Renamed', status: 'completed', metadata: '{}', updated_at: at }],
    delete: ['tenant-1', 'conversation-1', { deleted_at: at }],
  },
  claimConversation: ['tenant-1', 'conversation-1', { runId: 'run-1', at, createdAt: at }],
  releaseConversation: ['conversation-1', 'run-1'],
  deferConversation: async ({ db }) => {
    const later = new DeferredInserts();
    store.deferConversation(later, conversation);
    await later.flush(db);
  },
  deferMessage: async ({ db }) => {
    const later = new DeferredInserts();
    store.deferMessage(later, message);
    store.deferMessage(later, { ...message, id: 'message-2', role: 'assistant' });
    await later.flush(db);
  },
  insertMessage: [message],
  countMessages: {
    count: ['conversation-1', { added: 2, at, createdAt: at }],
    'count and release': ['conversation-1', { added: 2, at, createdAt: at, releaseRunId: 'run-1' }],
  },
  messagesBefore: {
    'first page': ['tenant-1', 'conversation-1', { limit: 50 }],
    'before a message': ['tenant-1', 'conversation-1', { limit: 50, before: 'message-9' }],
  },
  history: ['tenant-1', 'conversation-1', 50],
  findSummary: ['tenant-1', 'conversation-1'],
  saveSummary: [
    { tenant_id: 'tenant-1', conversation_id: 'conversation-1', summary: 'so far', through_message_id: 'message-1', updated_at: at },
  ],
  findMessage: ['tenant-1', 'conversation-1', 'message-1'],
  findReply: ['tenant-1', 'run-1'],
  stats: ['tenant-1'],
  insertFile: [file],
  findFile: ['tenant-1', 'file-1'],
  deleteFile: ['tenant-1', 'file-1'],
  findFiles: ['tenant-1', ['file-1', 'file-2']],
  listFiles: {
    'no filter': [{ tenantId: 'tenant-1', filter: {}, limit: 20, offset: 0 }],
    'by run': [{ tenantId: 'tenant-1', filter: { runId: 'run-1' }, limit: 20, offset: 0 }],
  },
  conversationAttachments: ['tenant-1', 'conversation-1', 100],
  deleteConversationsBefore: ['tenant-1', at, 100],
  deleteFilesBefore: ['tenant-1', at, 100],
  exportSources: exportSample(store.exportSources),
} satisfies StoreSamples<typeof store>;
