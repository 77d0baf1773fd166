import zlib from 'node:zlib';
import { zipSync, strToU8, type Zippable } from 'fflate';
import tar from 'tar-stream';
import { expect } from 'vitest';
import type { paths } from '../../packages/client/src/generated/openapi.js';
import type { ActionHandler, ApprovalActions, ApprovalGateway } from '../../src/tasks/approvals.js';
import type { Actor } from '../../src/tenancy/permissions.js';
import type { TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';

type SkillInput = NonNullable<paths['/api/skills']['post']['requestBody']>['content']['application/json'];
type AssignInput = NonNullable<paths['/api/skills/{id}/assign']['post']['requestBody']>['content']['application/json'];

export async function createSkill(t: TestApp, key: string, body: Partial<SkillInput> = {}) {
  const { data, error, response } = await t.api(key).POST('/api/skills', {
    body: { name: 'pricing', description: 'Answers pricing questions', category: 'sales', instructions: 'Quote list prices.', ...body },
  });
  expect(response.status, JSON.stringify(error)).toBe(201);
  return data!;
}

export async function assign(t: TestApp, key: string, skillId: string, agentId: string, extra: Omit<AssignInput, 'agentId'> = {}) {
  const { data, error, response } = await t.api(key).POST('/api/skills/{id}/assign', {
    params: { path: { id: skillId } },
    body: { agentId, ...extra },
  });
  expect(response.status, JSON.stringify(error)).toBe(201);
  return data!;
}

/** Runs the agent on builtin/echo with `/tool <name> <input>` and answers the tool's recorded result. */
export async function callTool(t: TestApp, key: string, agentId: string, name: string, input: unknown) {
  const { run, error, response } = await execute(t.api(key), agentId, { message: `/tool ${name} ${JSON.stringify(input)}` });
  expect(response.status, JSON.stringify(error)).toBe(200);
  const call = run!.toolCalls.find((c) => c.name === name);
  expect(call, `no ${name} call in ${JSON.stringify(run)}`).toBeTruthy();
  return call!.result as Record<string, any>;
}

/** A multipart/form-data body holding one file field. */
export function multipartFile(fileName: string, data: Buffer | string, contentType = 'application/octet-stream') {
  const boundary = `----agentry${Math.random().toString(16).slice(2)}`;
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${fileName}"\r\nContent-Type: ${contentType}\r\n\r\n`;
  return {
    payload: Buffer.concat([Buffer.from(head), Buffer.from(data), Buffer.from(`\r\n--${boundary}--\r\n`)]),
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
  };
}

export function zip(files: Record<string, string | Buffer | [string | Buffer, { os?: number; attrs?: number }]>): Buffer {
  const z: Zippable = {};
  for (const [name, v] of Object.entries(files)) {
    if (Array.isArray(v)) z[name] = [typeof v[0] === 'string' ? strToU8(v[0]) : new Uint8Array(v[0]), v[1]];
    else z[name] = typeof v === 'string' ? strToU8(v) : new Uint8Array(v);
  }
  return Buffer.from(zipSync(z, { level: 6 }));
}

export interface TarEntry {
  name: string;
  content?: string | Buffer;
  type?: 'file' | 'directory' | 'symlink' | 'link';
  linkname?: string;
}

export async function tarball(entries: TarEntry[], gzip = false): Promise<Buffer> {
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  pack.on('data', (c: unknown) => chunks.push(c as Buffer));
  const done = new Promise<void>((r) => pack.on('end', () => r()));
  for (const e of entries) {
    if (e.type === 'symlink' || e.type === 'link' || e.type === 'directory')
      pack.entry({ name: e.name, type: e.type, linkname: e.linkname });
    else pack.entry({ name: e.name }, Buffer.from(e.content ?? ''));
  }
  pack.finalize();
  await done;
  const buf = Buffer.concat(chunks);
  return gzip ? zlib.gzipSync(buf) : buf;
}

export const SKILL_MD = `---
name: refund-policy
description: How to decide and explain refunds. Use for refund requests.
category: support
license: MIT
metadata:
  owner: support-team
  version: 2
---

# Refunds

1. Check the order date.
2. Apply the refund rules in references/rules.md.
`;

/** An in-memory approval gateway: what the tasks domain does with these approval actions, reduced to deciding. */
export function fakeGateway(actions: ApprovalActions) {
  const tasks: {
    taskId: string;
    tenantId: string;
    action: string;
    payload: Record<string, unknown>;
    name: string;
    description: string;
    requestedBy: Actor;
  }[] = [];
  const approved = new Map<string, ActionHandler>(Object.entries(actions).map(([name, action]) => [name, action.approved]));
  const rejected = new Map<string, ActionHandler>(
    Object.entries(actions).flatMap(([name, action]) => (action.rejected ? [[name, action.rejected] as const] : [])),
  );
  const gateway: ApprovalGateway = {
    async createApprovalTask(input) {
      const taskId = `task-${tasks.length + 1}`;
      tasks.push({ taskId, ...input });
      return { taskId };
    },
  };
  const decide = async (taskId: string, approve: boolean, decidedBy: Actor) => {
    const task = tasks.find((x) => x.taskId === taskId)!;
    await (approve ? approved : rejected).get(task.action)?.({ tenantId: task.tenantId, taskId, payload: task.payload, decidedBy });
  };
  return { gateway, tasks, approved, rejected, decide };
}
