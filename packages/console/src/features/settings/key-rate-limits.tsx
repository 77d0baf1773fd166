import type { ApiKey } from '@agentry/client';
import { Alert, Button, Card, NumberInput, Stack, Table, Text, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { messageOf, useClient, useDenied } from '../../api';
import { placeErrors } from '../../lib/form-errors';
import { apiKeyKeys, apiKeysQuery } from '../api-keys/queries';
import { problemOf } from './fields';
import { KEY_RATE_LIMIT_FIELD } from './groups';

/** One key's own request limit: blank for the tenant's; saved on its own, its refusal (a 403 for a key holding more than the caller) in its row. */
function KeyRow({ apiKey, tenantDefault }: { apiKey: ApiKey; tenantDefault: string }) {
  const client = useClient();
  const queryClient = useQueryClient();
  const [typed, setTyped] = useState<number | string>(apiKey.rateLimitPerMinute ?? '');
  useEffect(() => setTyped(apiKey.rateLimitPerMinute ?? ''), [apiKey.rateLimitPerMinute]);
  const next = typed === '' ? null : Number(typed);
  const problem = problemOf(KEY_RATE_LIMIT_FIELD, next);
  const save = useMutation({
    mutationFn: () => client.apiKeys.update(apiKey.id, { rateLimitPerMinute: next }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: apiKeyKeys.all }),
  });
  const error =
    problem ??
    placeErrors(save.error, { rateLimitPerMinute: 'Rate limit' }).fields.rateLimitPerMinute ??
    (save.error ? messageOf(save.error) : null);
  return (
    <Table.Tr data-testid="key-rate-limit">
      <Table.Td>{apiKey.name}</Table.Td>
      <Table.Td>
        <Text size="xs">{apiKey.permissions.join(', ')}</Text>
      </Table.Td>
      <Table.Td>
        <NumberInput
          aria-label={`Requests per minute for ${apiKey.name}`}
          placeholder={tenantDefault}
          value={typed}
          onChange={setTyped}
          allowDecimal={false}
          allowNegative={false}
          error={error}
          w={200}
        />
      </Table.Td>
      <Table.Td>
        <Button
          size="xs"
          variant="light"
          disabled={problem !== null || next === apiKey.rateLimitPerMinute}
          loading={save.isPending}
          onClick={() => save.mutate()}
          aria-label={`Save the limit of ${apiKey.name}`}
        >
          Save
        </Button>
      </Table.Td>
    </Table.Tr>
  );
}

/**
 * Each API key's own requests per minute (PATCH /api/v1/api-keys/:id), over the tenant's. Listing
 * keys takes settings:write, so a key without it is told so instead.
 */
export function KeyRateLimits({ tenantLimit }: { tenantLimit: number | null }) {
  const client = useClient();
  const denied = useDenied()('settings:write');
  const keys = useQuery({ ...apiKeysQuery(client), enabled: !denied });
  const tenantDefault = tenantLimit === null ? 'the tenant’s (platform default)' : `the tenant’s, ${tenantLimit}`;
  return (
    <Card withBorder data-testid="settings-key-limits">
      <Stack>
        <div>
          <Title order={2} size="h3">
            Rate limits per API key
          </Title>
          <Text size="sm" c="dimmed">
            A key’s own requests per minute, counted with the access tokens minted from it; blank: the tenant’s. Changing a key’s takes
            every permission it holds.
          </Text>
        </div>
        {denied && <Alert color="gray">The keys are listed with settings:write: {denied}.</Alert>}
        {keys.error && <Alert color="red">{messageOf(keys.error)}</Alert>}
        {keys.data && (
          <Table.ScrollContainer minWidth={600}>
            <Table>
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Key</Table.Th>
                  <Table.Th>Permissions</Table.Th>
                  <Table.Th>Requests per minute</Table.Th>
                  <Table.Th />
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {keys.data.map((k) => (
                  <KeyRow key={k.id} apiKey={k} tenantDefault={tenantDefault} />
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
      </Stack>
    </Card>
  );
}
