import { exportSample, type StoreSamples } from '../db/sql-samples.js';
import * as store from './store.js';

const at = '2026-01-01T00:00:00.000Z';
const later = '2026-01-02T00:00:00.000Z';

const platformKey: store.PlatformKeyRow = {
  kid: 'platform-key-2',
  generation: 2,
  public_jwk: '{}',
  private_jwk: 'v1.sealed',
  created_at: at,
  activates_at: at,
  retires_at: null,
  revoked_at: null,
};

const agentKey: store.AgentKeyRow = {
  kid: 'agent-key-1',
  tenant_id: 'tenant-1',
  agent_id: 'agent-1',
  generation: 1,
  public_jwk: '{}',
  private_jwk: 'v1.sealed',
  status: 'active',
  created_at: at,
  rotated_at: null,
  expires_at: null,
  revoked_at: null,
};

const token: store.TokenRow = {
  jti: 'token-1',
  tenant_id: 'tenant-1',
  kind: 'svid',
  agent_id: 'agent-1',
  client_id: null,
  api_key_id: null,
  agent_key_id: 'agent-key-1',
  parent_jti: null,
  issued_at: at,
  expires_at: later,
  revoked_at: null,
};

const policy: store.PolicyRow = {
  id: 'policy-1',
  tenant_id: 'tenant-1',
  caller_agent_id: 'agent-1',
  callee_agent_id: '*',
  tool_name: 'search',
  effect: 'allow',
  description: null,
  conditions: null,
  created_at: at,
  updated_at: at,
};

export const samples = {
  isUniqueViolation: null,
  listPlatformKeys: [],
  insertPlatformKeyIfAbsent: [platformKey],
  retirePlatformKeys: [2, later],
  revokePlatformKey: ['platform-key-2', at],
  unretirePlatformKeys: [later, at],
  newestSealedKeys: [],
  revokePlatformKeys: [['platform-key-1', 'platform-key-2'], at],
  listAgentKeys: ['tenant-1', 'agent-1'],
  findAgentKey: ['tenant-1', 'agent-1', 'agent-key-1'],
  insertAgentKeyIfAbsent: [agentKey],
  insertAgentKey: [agentKey],
  rotateAgentKeys: ['tenant-1', 'agent-1', { at, expiresAt: later }],
  updateAgentKey: ['tenant-1', 'agent-key-1', { status: 'revoked', revoked_at: at }],
  insertToken: [token],
  findTokenStateByJti: ['token-1'],
  insertAssertionIfAbsent: [
    { ...token, jti: 'assertion:agent-1:jti-1', kind: 'assertion', client_id: 'agent-1', agent_key_id: 'agent-key-1' },
  ],
  activeTokensOfAgentKey: ['tenant-1', 'agent-key-1'],
  activeTokensOfAgent: ['tenant-1', 'agent-1'],
  revokeAgentKeys: ['tenant-1', 'agent-1', at],
  revokeTokens: ['tenant-1', ['token-1', 'token-2'], at],
  activeChildTokens: ['tenant-1', ['token-1', 'token-2']],
  pruneTokens: [at],
  listPolicies: {
    'no filter': [{ tenantId: 'tenant-1', filter: {}, limit: 50, offset: 0 }],
    'every filter': [
      { tenantId: 'tenant-1', filter: { callerAgentId: 'agent-1', calleeAgentId: 'agent-2', toolName: 'search' }, limit: 50, offset: 0 },
    ],
  },
  candidatePolicies: ['tenant-1', { caller: 'agent-1', callee: 'agent-2', tool: 'search' }],
  findPolicy: ['tenant-1', 'policy-1'],
  insertPolicy: [policy],
  updatePolicy: ['tenant-1', 'policy-1', { updated_at: at, effect: 'deny', description: null, conditions: null }],
  deletePolicy: ['tenant-1', 'policy-1'],
  exportSources: exportSample(store.exportSources),
} satisfies StoreSamples<typeof store>;
