import type { MemoryBlock, MemoryVersion } from '@agentry/client';
import { Alert, Badge, Button, Card, Code, Group, Loader, Modal, Stack, Text } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect } from 'react';
import { messageOf, useClient, useDenied } from '../../api';
import { AnchorLink } from '../../links';
import { actorName, useNames } from '../audit/names';
import type { MemoryScope } from './limits';

/** Versions shown at most (the newest): a block changed more often than this shows its latest changes. */
const VERSIONS_SHOWN = 50;

const when = (iso: string) => new Date(iso).toLocaleString();

function Actor({ version }: { version: MemoryVersion }) {
  // Keys and agents by name, as the audit log names them (an id's tail where the credential may not list them).
  const names = useNames();
  const who = version.actor.type === 'agent' ? 'the agent' : actorName(names.data ?? new Map(), version.actor.type, version.actor.id);
  return (
    <Text size="xs" c="dimmed">
      {when(version.createdAt)} · by {who}
      {version.runId && (
        <>
          {' · '}
          <AnchorLink size="xs" to="/runs/$runId" params={{ runId: version.runId }}>
            its run
          </AnchorLink>
        </>
      )}
    </Text>
  );
}

/**
 * A block's versions, newest first, each with who changed it; an older text can be restored (a new
 * version with that text, made only if the block is still at the version shown).
 */
export function BlockHistory({
  agentId,
  scope,
  block,
  onClose,
}: {
  agentId: string;
  scope: MemoryScope;
  block: MemoryBlock | null;
  onClose(): void;
}) {
  const client = useClient();
  const denied = useDenied()('agents:write');
  const queryClient = useQueryClient();
  const label = block?.label ?? '';
  const versions = useQuery({
    queryKey: ['memory', agentId, scope.userId ?? null, label, 'versions'],
    enabled: block !== null,
    queryFn: async () => {
      const pages = client.agents.memory.versions(agentId, label, { ...scope, limit: VERSIONS_SHOWN }).pages();
      const first = await pages.next();
      return first.done ? { items: [], total: 0 } : first.value;
    },
  });
  const restore = useMutation({
    mutationFn: (value: string) => client.agents.memory.set(agentId, label, { value, version: block?.version }, scope),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ['memory', agentId] });
      onClose();
    },
  });
  // biome-ignore lint/correctness/useExhaustiveDependencies: a new dialog starts without the last refusal
  useEffect(() => {
    if (block) restore.reset();
  }, [block]);

  return (
    <Modal opened={block !== null} onClose={onClose} title={`History of ${label}`} size="xl">
      <Stack>
        {versions.isPending && <Loader size="sm" aria-label="Loading versions" />}
        {versions.error && <Alert color="red">{messageOf(versions.error)}</Alert>}
        {restore.error && <Alert color="red">{messageOf(restore.error)}</Alert>}
        {versions.data && versions.data.total > versions.data.items.length && (
          <Text size="sm" c="dimmed">
            The latest {versions.data.items.length} of {versions.data.total} versions.
          </Text>
        )}
        {versions.data?.items.map((v) => (
          <Card key={v.version} withBorder padding="sm" data-testid="memory-version">
            <Group justify="space-between" align="start">
              <Stack gap={2}>
                <Group gap="xs">
                  <Text fw={600}>Version {v.version}</Text>
                  <Badge variant="light" color={v.change === 'deleted' ? 'red' : 'blue'}>
                    {v.change}
                  </Badge>
                  {v.version === block?.version && <Badge variant="outline">current</Badge>}
                </Group>
                <Actor version={v} />
              </Stack>
              {v.value !== null && v.value !== block?.value && (
                <Button
                  size="xs"
                  variant="light"
                  disabled={denied !== null}
                  title={denied ?? undefined}
                  loading={restore.isPending && restore.variables === v.value}
                  onClick={() => restore.mutate(v.value ?? '')}
                >
                  Restore version {v.version}
                </Button>
              )}
            </Group>
            {v.value === null ? (
              <Text size="sm" c="dimmed" mt="xs">
                (deleted)
              </Text>
            ) : (
              <Code block mt="xs">
                {v.value || '(empty)'}
              </Code>
            )}
          </Card>
        ))}
      </Stack>
    </Modal>
  );
}
