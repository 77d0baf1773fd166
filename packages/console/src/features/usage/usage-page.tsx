import { Stack, Tabs, Title, Tooltip } from '@mantine/core';
import { useSession } from '../../api';
import { ApiKeys } from '../api-keys/api-keys';
import { AuditLog } from '../audit/audit-log';
import { LimitsSummary } from './limits-summary';
import { UsageCharts } from './usage-charts';

export function UsagePage() {
  const { me } = useSession();
  const settingsRead = me.credential.permissions.includes('settings:read');
  return (
    <Stack>
      <Title order={1} size="h2">
        Usage
      </Title>
      <Tabs defaultValue="usage">
        <Tabs.List>
          <Tabs.Tab value="usage">Cost and tokens</Tabs.Tab>
          <Tooltip label="needs settings:write" disabled={me.credential.permissions.includes('settings:write')}>
            <Tabs.Tab value="keys">API keys</Tabs.Tab>
          </Tooltip>
          <Tabs.Tab value="audit" disabled={!settingsRead} title={settingsRead ? undefined : 'needs settings:read'}>
            Audit log
          </Tabs.Tab>
        </Tabs.List>
        <Tabs.Panel value="usage" pt="md">
          <Stack>
            <LimitsSummary />
            <UsageCharts />
          </Stack>
        </Tabs.Panel>
        <Tabs.Panel value="keys" pt="md">
          <ApiKeys />
        </Tabs.Panel>
        <Tabs.Panel value="audit" pt="md">
          <AuditLog />
        </Tabs.Panel>
      </Tabs>
    </Stack>
  );
}
