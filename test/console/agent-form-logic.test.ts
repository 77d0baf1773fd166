import { describe, expect, it } from 'vitest';
import {
  type AgentFormValues,
  LocalFormError,
  agentErrors,
  bodyOf,
  emptyMcpRow,
  formOf,
  skillChanges,
} from '../../packages/console/src/lib/agent-form.js';

/* The agent form's logic (packages/console/src/lib/agent-form.ts): the body it sends, where the server's errors land. */

const form = (patch: Partial<AgentFormValues> = {}): AgentFormValues => ({ ...formOf(), name: 'a', appId: 'b', ...patch });

describe('the agent form', () => {
  it('names every built-in group, then the MCP rows, then the other tools', () => {
    const mcp = { ...emptyMcpRow(), url: ' https://mcp.example.com/mcp ', headers: [{ key: 'h', name: 'X-Key', value: 'v' }] };
    const body = bodyOf(form({ builtins: ['memory'], mcp: [mcp], otherTools: '[{"type":"agent","agentId":"x"}]', summaryModel: ' ' }));
    expect(body.tools).toEqual([
      { type: 'builtin', name: 'skills', enabled: false },
      { type: 'builtin', name: 'connectors', enabled: false },
      { type: 'builtin', name: 'memory', enabled: true },
      { type: 'mcp', url: 'https://mcp.example.com/mcp', headers: { 'X-Key': 'v' } },
      { type: 'agent', agentId: 'x' },
    ]);
    expect(body.configuration).toEqual({ fallbackModels: [], summaryModel: null });
    expect(() => bodyOf(form({ configuration: '[1]' }))).toThrow(LocalFormError);
  });

  it('puts the server’s errors at the row and field they name', () => {
    const v = form({ mcp: [emptyMcpRow(), emptyMcpRow()], otherTools: '[{}]' });
    const errors = agentErrors(v, [
      { path: 'body.tools.4.url', message: 'must match pattern' },
      { path: 'body.tools.5', message: 'must match a schema in anyOf' },
      { path: 'body.configuration.fallbackModels.1', message: 'model openai/* needs OPENAI_API_KEY' },
      { path: '/model', message: 'must be provider/model-name' },
    ]);
    expect(errors).toEqual({
      fields: {
        otherTools: '0 must match a schema in anyOf',
        fallbackModels: '#2 model openai/* needs OPENAI_API_KEY',
        model: 'must be provider/model-name',
      },
      mcp: { '1.url': 'must match pattern' },
      skills: {},
    });
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
