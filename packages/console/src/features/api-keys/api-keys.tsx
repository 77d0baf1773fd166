import type { ApiKey, CreatedApiKey } from '@agentry/client';
import { Alert, Badge, Button, Code, Group, Modal, MultiSelect, Stack, Table, Text, TextInput } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { messageOf, useClient, useDenied, useSession } from '../../api';
import { FormErrorSummary } from '../../form-error-summary';
import { LocalFieldErrors, placeErrors } from '../../lib/form-errors.js';
import { checkFields, LIMITS } from '../../lib/form-limits.js';
import { apiKeyKeys, apiKeysQuery } from './queries';

const PERMISSIONS = ['agents:read', 'agents:write', 'settings:read', 'settings:write', 'skills:read', 'skills:write'];

/**
 * The tenant's API keys: create one (its secret shown once), revoke one after a confirmation saying it
 * stops working at once (the console's own key signs it out). Managing keys takes settings:write.
 */
export function ApiKeys() {
  const client = useClient();
  const session = useSession();
  /** The key whose revocation waits for confirmation. */
  const [confirming, setConfirming] = useState<ApiKey | null>(null);
  const ownKey = (k: ApiKey) => session.me.credential.type === 'api_key' && session.me.credential.id === k.id;
  const denied = useDenied()('settings:write');
  const queryClient = useQueryClient();
  const keys = useQuery({ ...apiKeysQuery(client), enabled: !denied });
  const [name, setName] = useState('');
  const [permissions, setPermissions] = useState<string[]>(['agents:read']);
  const [created, setCreated] = useState<CreatedApiKey | null>(null);
  const create = useMutation({
    mutationFn: () => {
      const local = checkFields({ name }, LIMITS.createApiKey);
      if (local.length) throw new LocalFieldErrors(local);
      return client.apiKeys.create({ name, permissions: permissions as Parameters<typeof client.apiKeys.create>[0]['permissions'] });
    },
    onSuccess: (key) => {
      setCreated(key);
      setName('');
      queryClient.invalidateQueries({ queryKey: apiKeyKeys.all });
    },
  });
  const revoke = useMutation({
    mutationFn: (key: ApiKey) => client.apiKeys.revoke(key.id),
    onSuccess: (_answer, key) => {
      setConfirming(null);
      // The console's own credential no longer works: back to the sign-in page rather than failing everywhere.
      if (ownKey(key)) session.signOut();
    },
    onSettled: () => queryClient.invalidateQueries({ queryKey: apiKeyKeys.all }),
  });
  if (denied) return <Alert color="gray">{denied}: API keys are managed with settings:write.</Alert>;
  const { fields: errors, summary } = placeErrors(create.error, { name: 'Name', permissions: 'Permissions' });
  return (
    <Stack>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          create.mutate();
        }}
      >
        <Group align="end">
          <TextInput label="Name" value={name} onChange={(e) => setName(e.currentTarget.value)} error={errors.name} required />
          <MultiSelect
            label="Permissions"
            data={PERMISSIONS}
            value={permissions}
            onChange={setPermissions}
            error={errors.permissions}
            miw={300}
          />
          <Button type="submit" loading={create.isPending}>
            Create key
          </Button>
        </Group>
      </form>
      <FormErrorSummary summary={summary} title="Not created" />
      {create.error && !summary.length && <Alert color="red">{messageOf(create.error)}</Alert>}
      {created && (
        <Alert color="yellow" title="Copy the key now: it is shown this once" withCloseButton onClose={() => setCreated(null)}>
          <Code>{created.key}</Code>
        </Alert>
      )}
      <Table.ScrollContainer minWidth={600}>
        <Table>
          <Table.Tbody>
            {(keys.data ?? []).map((k) => (
              <Table.Tr key={k.id}>
                <Table.Td>{k.name}</Table.Td>
                <Table.Td>
                  <Group gap={4}>
                    {k.permissions.map((p) => (
                      <Badge key={p} size="sm" variant="light">
                        {p}
                      </Badge>
                    ))}
                  </Group>
                </Table.Td>
                <Table.Td>{new Date(k.createdAt).toLocaleDateString()}</Table.Td>
                <Table.Td>
                  {k.revokedAt ? (
                    <Badge color="gray">revoked</Badge>
                  ) : (
                    <Button
                      size="xs"
                      color="red"
                      variant="subtle"
                      onClick={() => {
                        revoke.reset();
                        setConfirming(k);
                      }}
                    >
                      Revoke
                    </Button>
                  )}
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      <Modal opened={confirming !== null} onClose={() => setConfirming(null)} title="Revoke API key">
        {confirming && (
          <Stack>
            <Text>
              Revoke the key <b>{confirming.name}</b>? It stops working at once, for every client that uses it and every access token minted
              from it. This cannot be undone.
            </Text>
            {ownKey(confirming) && (
              <Alert color="red" title="This is the key you are signed in with">
                The console signs out as soon as it is revoked, and this key can never sign in again: make sure you hold another key with
                the permissions you need.
              </Alert>
            )}
            {revoke.error && (
              <Alert color="red" title="Not revoked">
                {messageOf(revoke.error)}
              </Alert>
            )}
            <Group justify="end">
              <Button variant="default" onClick={() => setConfirming(null)}>
                Keep
              </Button>
              <Button color="red" loading={revoke.isPending} onClick={() => revoke.mutate(confirming)}>
                Revoke
              </Button>
            </Group>
          </Stack>
        )}
      </Modal>
    </Stack>
  );
}
