import { expect, test } from 'vitest';
import { answerWith, renderComponent } from '../../test/render-component';
import { ApiKeys } from './api-keys';

/** The API keys' server: no keys yet, and `created` as the answer to a new key. */
function server(created: Response) {
  const sent: { method: string; path: string; body: unknown }[] = [];
  const answer: typeof fetch = async (input, init) => {
    const method = init?.method ?? 'GET';
    const { pathname } = new URL(String(input));
    sent.push({ method, path: pathname, body: init?.body ? JSON.parse(String(init.body)) : undefined });
    if (method === 'GET') return answerWith(200, { apiKeys: [], total: 0, page: 1, limit: 100 });
    return created;
  };
  return { answer, posted: () => sent.filter((r) => r.method === 'POST') };
}

const refused = answerWith(400, {
  code: 'validation_failed',
  detail: 'the request is invalid',
  errors: [
    { path: 'body.name', message: 'must not start with a space' },
    { path: 'body.permissions.1', message: 'must be one of the permissions the caller holds' },
  ],
});

test("every error of the server's 400 is under its field and in a summary, which takes the focus", async () => {
  const { answer, posted } = server(refused);
  const screen = await renderComponent(<ApiKeys />, { answer, permissions: ['settings:write'] });
  await screen.getByLabelText('Name').fill('deploy bot');
  await screen.getByRole('button', { name: 'Create key' }).click();

  const summary = screen.getByTestId('form-errors');
  await expect.element(summary).toHaveTextContent('Not created: 2 problems');
  await expect.element(summary.getByRole('listitem').nth(0)).toHaveTextContent('Name: must not start with a space');
  await expect
    .element(summary.getByRole('listitem').nth(1))
    .toHaveTextContent('Permissions › #2: must be one of the permissions the caller holds');
  await expect.element(summary).toHaveFocus();
  await expect.element(screen.getByLabelText('Name')).toHaveAccessibleDescription('must not start with a space');
  await expect.element(screen.getByText('#2: must be one of the permissions the caller holds', { exact: true })).toBeVisible();
  // What was typed stays.
  await expect.element(screen.getByLabelText('Name')).toHaveValue('deploy bot');
  expect(posted()).toEqual([{ method: 'POST', path: '/api/v1/api-keys', body: { name: 'deploy bot', permissions: ['agents:read'] } }]);
});

test('a name over the schema’s limit is refused at its field before anything is sent', async () => {
  const { answer, posted } = server(refused);
  const screen = await renderComponent(<ApiKeys />, { answer, permissions: ['settings:write'] });
  await screen.getByLabelText('Name').fill('k'.repeat(201));
  await screen.getByRole('button', { name: 'Create key' }).click();
  const summary = screen.getByTestId('form-errors');
  await expect.element(summary).toHaveTextContent('Not created: 1 problem');
  await expect.element(summary.getByRole('listitem')).toHaveTextContent(/^Name: .*200/);
  await expect.element(screen.getByLabelText('Name')).toHaveAccessibleDescription(/200/);
  expect(posted()).toEqual([]);
});

test('a created key is shown once, to be copied now', async () => {
  const { answer } = server(
    answerWith(201, {
      id: 'key_2',
      name: 'deploy bot',
      permissions: ['agents:read'],
      key: 'agk_secret_shown_once',
      createdAt: '2026-12-06T10:00:00.000Z',
    }),
  );
  const screen = await renderComponent(<ApiKeys />, { answer, permissions: ['settings:write'] });
  await screen.getByLabelText('Name').fill('deploy bot');
  await screen.getByRole('button', { name: 'Create key' }).click();
  await expect.element(screen.getByText('Copy the key now: it is shown this once')).toBeVisible();
  await expect.element(screen.getByText('agk_secret_shown_once')).toBeVisible();
  await expect.element(screen.getByLabelText('Name')).toHaveValue('');
});

test('a key without settings:write is told why it cannot manage keys, and nothing is asked', async () => {
  const { answer, posted } = server(refused);
  const screen = await renderComponent(<ApiKeys />, { answer, permissions: ['agents:read'] });
  await expect.element(screen.getByText('this key lacks settings:write: API keys are managed with settings:write.')).toBeVisible();
  await expect.element(screen.getByRole('button', { name: 'Create key' })).not.toBeInTheDocument();
  expect(posted()).toEqual([]);
});
