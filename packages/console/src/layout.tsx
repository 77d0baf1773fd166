import { ActionIcon, AppShell, Badge, Burger, Group, NavLink, Text, Title, Tooltip, useMantineColorScheme } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { useQuery } from '@tanstack/react-query';
import { Link, useRouterState } from '@tanstack/react-router';
import type { ReactNode } from 'react';
import { useSession } from './api';

const NAV = [
  { to: '/agents', label: 'Agents' },
  { to: '/playground', label: 'Playground' },
  { to: '/runs', label: 'Runs' },
  { to: '/tasks', label: 'Tasks' },
  { to: '/approvals', label: 'Approvals' },
  { to: '/skills', label: 'Skills' },
  { to: '/identity', label: 'Identity' },
  { to: '/usage', label: 'Usage' },
] as const;

/** How many tasks wait for a person: the badge in the navigation (polled while the console is open). */
export function usePendingApprovals() {
  const { client, me } = useSession();
  return useQuery({
    queryKey: ['approvals', 'pending'],
    enabled: me.credential.permissions.includes('agents:read'),
    refetchInterval: 15_000,
    queryFn: () =>
      client.http.json<{ tasks: { id: string; name: string; agentId: string; createdAt: string; input: unknown }[]; total: number }>(
        'GET',
        '/api/v1/tasks/pending-approval',
        { query: { limit: 100 } },
      ),
  });
}

export function Layout({ children }: { children: ReactNode }) {
  const [opened, { toggle, close }] = useDisclosure();
  const { me, signOut } = useSession();
  const { colorScheme, setColorScheme } = useMantineColorScheme();
  const pathname = useRouterState({ select: (s) => s.location.pathname });
  const pending = usePendingApprovals();
  const dark = colorScheme === 'dark';

  return (
    <AppShell header={{ height: 56 }} navbar={{ width: 220, breakpoint: 'sm', collapsed: { mobile: !opened } }} padding="md">
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between" wrap="nowrap">
          <Group gap="sm" wrap="nowrap">
            <Burger opened={opened} onClick={toggle} hiddenFrom="sm" size="sm" aria-label="Toggle navigation" />
            <Title order={4}>Agentry</Title>
            <Text size="sm" c="dimmed" visibleFrom="xs" truncate>
              {me.tenant.name}
            </Text>
          </Group>
          <Group gap="xs" wrap="nowrap">
            <Tooltip label={dark ? 'Light theme' : 'Dark theme'}>
              <ActionIcon
                variant="default"
                size="lg"
                aria-label={dark ? 'Light theme' : 'Dark theme'}
                onClick={() => setColorScheme(dark ? 'light' : 'dark')}
              >
                {dark ? '☀' : '☾'}
              </ActionIcon>
            </Tooltip>
            <ActionIcon variant="default" size="lg" w="auto" px="sm" onClick={signOut} aria-label="Sign out">
              Sign out
            </ActionIcon>
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="xs" aria-label="Main">
        {NAV.map((item) => (
          <NavLink
            key={item.to}
            component={Link}
            to={item.to}
            label={item.label}
            active={pathname.startsWith(item.to)}
            onClick={close}
            rightSection={
              item.to === '/approvals' && pending.data && pending.data.total > 0 ? (
                <Badge size="sm" color="red" circle aria-label={`${pending.data.total} awaiting approval`}>
                  {pending.data.total}
                </Badge>
              ) : null
            }
          />
        ))}
      </AppShell.Navbar>
      <AppShell.Main>{children}</AppShell.Main>
    </AppShell>
  );
}
