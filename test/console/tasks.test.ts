import { expect, it } from 'vitest';
import { describeConsole } from './browser.js';

/*
 * What a task's badge says (issue 39): a task's status is its latest run's, so a recurring or webhook
 * task whose run completed read COMPLETED, as if it were over. Its badge now says what it does (scheduled,
 * waiting for its trigger) with the latest run's outcome beside it; a one-time task keeps its status.
 */

describeConsole('task badges', 'test/console/tasks.test.ts', (session) => {
  it('a recurring or webhook task whose run completed is still scheduled or waiting; a one-time one is completed', async () => {
    const { t, key, page } = session;
    const agentId = (await t.agent(key, { name: 'Reporter' })).id;
    const tasks = [
      { name: 'Nightly report', type: 'scheduled' as const, schedule: '0 3 * * *' },
      { name: 'Inbound order', type: 'triggered' as const, trigger: { type: 'webhook' as const } },
      { name: 'Once', type: 'one_time' as const },
    ];
    const ids: string[] = [];
    for (const task of tasks) {
      const created = await t.api(key).POST('/api/v1/tasks', { body: { description: 'say hello', agentId, ...task } });
      expect(created.response.status, JSON.stringify(created.error)).toBe(201);
      ids.push(created.data!.id);
      if (task.type !== 'one_time') {
        const run = await t.api(key).POST('/api/v1/tasks/{id}/run', { params: { path: { id: created.data!.id } } });
        expect(run.response.status, JSON.stringify(run.error)).toBe(202);
      }
    }
    for (const id of ids) {
      await expect
        .poll(async () => (await t.api(key).GET('/api/v1/tasks/{id}', { params: { path: { id } } })).data!.status, { timeout: 20_000 })
        .toBe('completed');
    }
    await page
      .getByRole('navigation')
      .getByRole('link', { name: /^Tasks/ })
      .click();
    const badgeOf = (name: string) => page.getByRole('row').filter({ hasText: name }).getByTestId('task-status');
    await badgeOf('Nightly report').waitFor();
    expect(await badgeOf('Nightly report').textContent()).toBe('scheduledlast run completed');
    expect(await badgeOf('Inbound order').textContent()).toBe('waiting for its triggerlast run completed');
    expect(await badgeOf('Once').textContent()).toBe('completed');
    // The task's own page says the same.
    await page.getByRole('link', { name: 'Nightly report' }).click();
    await page.getByRole('heading', { name: 'Nightly report' }).waitFor();
    expect(await page.getByTestId('task-status').textContent()).toBe('scheduledlast run completed');
  });

  it('raised no page error', () => {
    expect(session.pageErrors).toEqual([]);
  });
});
