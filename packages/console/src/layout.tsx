import { ActionIcon, AppShell, Badge, Burger, Group, NavLink, Text, Tooltip, useMantineColorScheme } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { Link, useRouterState } from '@tanstack/react-router';
import type { MouseEvent, ReactNode } from 'react';
import { useSession } from './api';
import { useInbox } from './features/approvals/queries';

const NAV = [
  { to: '/agents', label: 'Agents' },
  { to: '/playground', label: 'Playground' },
  { to: '/runs', label: 'Runs' },
  { to: '/tasks', label: 'Tasks' },
  { to: '/approvals', label: 'Approvals' },
  { to: '/knowledge', label: 'Knowledge' },
  { to: '/memory', label: 'Memory' },
  { to: '/skills', label: 'Skills' },
  { to: '/connectors', label: 'Connectors' },
  { to: '/identity', label: 'Identity' },
  { to: '/usage', label: 'Usage' },
  { to: '/settings', label: 'Settings' },
] as const;

export function Layout({ children }: { children: ReactNode }) {
  const [opened, { toggle, close }] = useDisclosure();
  const { me, signOut } = useSession();
  const { colorScheme, setColorScheme } = useMantineColorScheme();
  const pathname = useRouterState({ select: (s) => s.location.pathname });
  const inbox = useInbox();
  const waiting = inbox.data?.items.length ?? 0;
  const dark = colorScheme === 'dark';

  // Focus (not only the scroll position) moves to main, so that the next Tab starts in the page.
  const skipToContent = (event: MouseEvent) => {
    event.preventDefault();
    document.getElementById('main-content')?.focus();
  };

  return (
    <AppShell header={{ height: 56 }} navbar={{ width: 220, breakpoint: 'sm', collapsed: { mobile: !opened } }} padding="md">
      {/* The page's <base href> would turn a bare #fragment into a reload: the click focuses main itself. */}
      {/* biome-ignore lint/a11y/useValidAnchor: a skip link is a link to a section, with the focus moved by hand */}
      <a className="skip-link" href="#main-content" onClick={skipToContent}>
        Skip to content
      </a>
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between" wrap="nowrap">
          <Group gap="sm" wrap="nowrap">
            <Burger opened={opened} onClick={toggle} hiddenFrom="sm" size="sm" aria-label="Toggle navigation" />
            <Text fw={700} size="lg">
              Agentry
            </Text>
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
              item.to === '/approvals' && waiting > 0 ? (
                <Badge size="sm" color="red" circle aria-label={`${waiting} awaiting approval`} data-testid="approvals-badge">
                  {waiting}
                </Badge>
              ) : null
            }
          />
        ))}
      </AppShell.Navbar>
      <AppShell.Main id="main-content" tabIndex={-1}>
        {children}
      </AppShell.Main>
    </AppShell>
  );
}
