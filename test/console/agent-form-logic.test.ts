import { describe, expect, it } from 'vitest';
import {
  type AgentFormValues,
  LocalFormError,
  agentErrors,
  localAgentErrors,
  bodyOf,
  emptyA2aRow,
  emptyDelegationRow,
  emptyMcpRow,
  formOf,
  skillChanges,
} from '../../packages/console/src/lib/agent-form.js';

/* The agent form's logic (packages/console/src/lib/agent-form.ts): the body it sends, where the server's errors land. */

const form = (patch: Partial<AgentFormValues> = {}): AgentFormValues => ({ ...formOf(), name: 'a', appId: 'b', ...patch });

describe('the agent form', () => {
  it('names every built-in group, then the MCP rows, the delegations and the A2A agents', () => {
    const mcp = { ...emptyMcpRow(), url: ' https://mcp.example.com/mcp ', headers: [{ key: 'h', name: 'X-Key', value: 'v' }] };
    const delegations = [
      { ...emptyDelegationRow(), agentId: 'x' },
      { ...emptyDelegationRow(), agentId: 'y', name: ' ask_billing ', description: ' Billing questions ' },
    ];
    const a2a = [{ ...emptyA2aRow(), name: ' billing ', cardUrl: ' https://a2a.example.com/card.json ', credential: 'v1.sealed' }];
    const body = bodyOf(form({ builtins: ['memory'], mcp: [mcp], delegations, a2a, summaryModel: ' ' }));
    expect(body.tools).toEqual([
      { type: 'builtin', name: 'skills', enabled: false },
      { type: 'builtin', name: 'connectors', enabled: false },
      { type: 'builtin', name: 'memory', enabled: true },
      { type: 'builtin', name: 'code', enabled: false },
      { type: 'builtin', name: 'knowledge', enabled: false },
      { type: 'mcp', url: 'https://mcp.example.com/mcp', headers: { 'X-Key': 'v' } },
      { type: 'agent', agentId: 'x' },
      { type: 'agent', agentId: 'y', name: 'ask_billing', description: 'Billing questions' },
      { type: 'a2a', name: 'billing', cardUrl: 'https://a2a.example.com/card.json', credential: 'v1.sealed' },
    ]);
    expect(body.configuration).toEqual({ fallbackModels: [], summaryModel: null });
    expect(() => bodyOf(form({ configuration: '[1]' }))).toThrow(LocalFormError);
    // A delegation row without its agent is refused before asking the server, at its field.
    const unchosen = (() => {
      try {
        bodyOf(form({ delegations: [delegations[0], emptyDelegationRow()] }));
      } catch (err) {
        return err;
      }
    })();
    expect(unchosen).toBeInstanceOf(LocalFormError);
    expect((unchosen as LocalFormError).errors).toEqual({ 'delegations.1.agentId': 'choose the agent to delegate to' });
  });

  it('fills the rows from a saved agent, and sends them back as they were', () => {
    const tools = [
      { type: 'builtin' as const, name: 'skills' as const },
      { type: 'agent' as const, agentId: 'x', name: 'ask_x' },
      {
        type: 'a2a' as const,
        name: 'billing',
        cardUrl: 'https://a2a.example.com/card.json',
        description: 'Bills',
        credential: 'v1.sealed',
      },
    ];
    const agent = { ...formOf(), id: 'a1', tools, configuration: { fallbackModels: [], summaryModel: null } } as unknown as Parameters<
      typeof formOf
    >[0];
    const v = formOf(agent);
    expect(v.delegations.map(({ key: _, ...row }) => row)).toEqual([{ agentId: 'x', name: 'ask_x', description: '' }]);
    expect(v.a2a.map(({ key: _, ...row }) => row)).toEqual([
      { name: 'billing', cardUrl: 'https://a2a.example.com/card.json', description: 'Bills', credential: 'v1.sealed' },
    ]);
    expect(bodyOf({ ...v, name: 'a', appId: 'b' }).tools.slice(5)).toEqual(tools.slice(1));
  });

  it('keeps the code and knowledge groups of a saved agent, the knowledge bases it is limited to with them', () => {
    const tools = [
      { type: 'builtin' as const, name: 'code' as const },
      { type: 'builtin' as const, name: 'knowledge' as const, knowledgeBases: ['kb-1', 'kb-2'] },
    ];
    const agent = { ...formOf(), id: 'a1', tools, configuration: { fallbackModels: [], summaryModel: null } } as unknown as Parameters<
      typeof formOf
    >[0];
    const sent = bodyOf({ ...formOf(agent), name: 'a', appId: 'b' }).tools.filter((t) => t.type === 'builtin' && t.enabled);
    expect(sent).toEqual([
      { type: 'builtin', name: 'code', enabled: true },
      { type: 'builtin', name: 'knowledge', enabled: true, knowledgeBases: ['kb-1', 'kb-2'] },
    ]);
  });

  it('puts the server’s errors at the row and field they name', () => {
    const v = form({
      mcp: [emptyMcpRow(), emptyMcpRow()],
      delegations: [{ ...emptyDelegationRow(), agentId: 'x' }],
      a2a: [emptyA2aRow(), emptyA2aRow()],
    });
    const errors = agentErrors(v, [
      { path: 'body.tools.6.url', message: 'must match pattern' },
      { path: 'body.tools.7.agentId', message: 'names no agent of this tenant' },
      { path: 'body.tools.9.cardUrl', message: 'must match pattern "^https?://"' },
      { path: 'body.tools.8', message: 'must match a schema in anyOf' },
      { path: 'body.tools.1.enabled', message: 'must be boolean' },
      { path: 'body.configuration.fallbackModels.1', message: 'model openai/* needs OPENAI_API_KEY' },
      { path: '/model', message: 'must be provider/model-name' },
    ]);
    expect(errors).toEqual({
      fields: {
        builtins: 'enabled: must be boolean',
        fallbackModels: '#2: model openai/* needs OPENAI_API_KEY',
        model: 'must be provider/model-name',
      },
      mcp: { '1.url': 'must match pattern' },
      delegations: { '0.agentId': 'names no agent of this tenant' },
      a2a: { '1.cardUrl': 'must match pattern "^https?://"', '0': 'must match a schema in anyOf' },
      skills: {},
      // Every error, named as the form names its fields, never by the request's path.
      summary: [
        'MCP server 2 URL: must match pattern',
        'Delegation 1 agent: names no agent of this tenant',
        'A2A agent 2 Agent Card URL: must match pattern "^https?://"',
        'A2A agent 1: must match a schema in anyOf',
        'Built-in tools › enabled: must be boolean',
        'Fallback models › #2: model openai/* needs OPENAI_API_KEY',
        'Model: must be provider/model-name',
      ],
    });
  });

  it('keeps every error of a field, not only the first', () => {
    const errors = agentErrors(form(), [
      { path: 'body.configuration.temperature', message: 'must be <= 2' },
      { path: 'body.configuration.approval.rules.0.tool', message: 'must match pattern' },
    ]);
    expect(errors.fields).toEqual({ configuration: 'temperature: must be <= 2\napproval › rules 1 › tool: must match pattern' });
    expect(errors.summary).toEqual([
      'Configuration › temperature: must be <= 2',
      'Configuration › approval › rules 1 › tool: must match pattern',
    ]);
  });

  it('finds the schema’s limits before sending, named as the server would name them', () => {
    const v = form({
      name: 'x'.repeat(201),
      mcp: [{ ...emptyMcpRow(), url: 'mcp.example.com' }],
      a2a: [{ ...emptyA2aRow(), name: 'bad name', cardUrl: 'https://a2a.example.com/card' }],
    });
    const local = localAgentErrors(bodyOf(v));
    expect(local).toEqual([
      { path: 'body.name', message: 'must have at most 200 characters (has 201)' },
      { path: 'body.tools.5.url', message: 'must be a URL starting with https:// or http://' },
      { path: 'body.tools.6.name', message: 'must match ^[a-zA-Z0-9_-]{1,60}$' },
    ]);
    expect(agentErrors(v, local).summary).toEqual([
      'Name: must have at most 200 characters (has 201)',
      'MCP server 1 URL: must be a URL starting with https:// or http://',
      'A2A agent 1 name: must match ^[a-zA-Z0-9_-]{1,60}$',
    ]);
    expect(localAgentErrors(bodyOf(form({ name: 'Fine', mcp: [{ ...emptyMcpRow(), url: 'https://mcp.example.com/mcp' }] })))).toEqual([]);
  });

  it('assigns, re-prioritises and unassigns to match the rows; a skill chosen twice is refused', () => {
    const current = [
      { id: 's1', assignment: { priority: 1 } },
      { id: 's2', assignment: { priority: 0 } },
    ];
    const rows = [
      { key: 'a', skillId: 's1', priority: 5 },
      { key: 'b', skillId: 's3', priority: '' },
      { key: 'c', skillId: null, priority: 9 },
    ];
    expect(skillChanges(rows, current, ['s1', 's2'])).toEqual({
      assign: [{ skillId: 's3', priority: 0, row: 1 }],
      update: [{ skillId: 's1', priority: 5, row: 0 }],
      unassign: ['s2'],
    });
    expect(() => skillChanges([...rows, { key: 'd', skillId: 's1', priority: 0 }], current, ['s1', 's2'])).toThrow(LocalFormError);
  });

  it('unassigns only the loaded skills the person removed, never one assigned since the form was filled', () => {
    const current = [
      { id: 's1', assignment: { priority: 1 } },
      { id: 's2', assignment: { priority: 0 } },
      { id: 'late', assignment: { priority: 3 } },
    ];
    const filled = formOf(undefined, current.slice(0, 2));
    expect(filled.loadedSkills).toEqual(['s1', 's2']);
    const rows = filled.skills.filter((r) => r.skillId === 's1');
    expect(skillChanges(rows, current, filled.loadedSkills)).toEqual({ assign: [], update: [], unassign: ['s2'] });
    // A form filled with no rows (nothing loaded) unassigns nothing on save.
    expect(skillChanges([], current, formOf().loadedSkills)).toEqual({ assign: [], update: [], unassign: [] });
  });
});
