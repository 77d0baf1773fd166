import { Alert, Loader, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { messageOf, useClient, useDenied } from '../../api';
import { NumberSettingsForm } from './number-form';
import { codeFields, LIMIT_FIELDS, RETENTION_FIELDS } from './groups';
import { KeyRateLimits } from './key-rate-limits';
import { codeSettingsQuery, limitsQuery, retentionQuery, settingsKeys } from './queries';

const usd = (n: number) => `$${n.toFixed(2)}`;

function Figure({ label, value }: { label: string; value: string }) {
  return (
    <div>
      <Text size="xs" c="dimmed">
        {label}
      </Text>
      <Text fw={600}>{value}</Text>
    </div>
  );
}

/**
 * The tenant's settings, a form per group: limits and budget, retention, code execution. Reading
 * takes settings:read, changing settings:write; a key without it sees the forms read-only with why.
 */
export function SettingsPage() {
  const client = useClient();
  const denied = useDenied();
  const readDenied = denied('settings:read');
  const writeDenied = denied('settings:write');
  const queryClient = useQueryClient();
  const limits = useQuery({ ...limitsQuery(client), enabled: !readDenied });
  const retention = useQuery({ ...retentionQuery(client), enabled: !readDenied });
  const code = useQuery({ ...codeSettingsQuery(client), enabled: !readDenied });
  // Each save answers the group's new state: it becomes the form's values at once.
  const saved = (key: 'limits' | 'retention' | 'code') => (data: unknown) => queryClient.setQueryData(settingsKeys[key](), data);

  return (
    <Stack maw={980}>
      <Title order={1} size="h2">
        Settings
      </Title>
      <Text size="sm" c="dimmed">
        The tenant’s limits, how long its data is kept, and what code execution may use. A blank field means what its placeholder says. An
        agent’s own budget is on its page.
      </Text>
      {readDenied && <Alert color="gray">The settings are hidden: {readDenied}.</Alert>}
      {[limits, retention, code].some((q) => q.isPending && !readDenied) && <Loader size="sm" aria-label="Loading settings" />}
      {[limits, retention, code].map(
        (q, i) =>
          q.error && (
            <Alert key={['limits', 'retention', 'code'][i]} color="red">
              {messageOf(q.error)}
            </Alert>
          ),
      )}
      {limits.data && (
        <>
          <SimpleGrid cols={{ base: 2, sm: 4 }} data-testid="settings-usage">
            <Figure label={`Spent in ${limits.data.usage.month}`} value={usd(limits.data.usage.spentUsd)} />
            <Figure label="Reserved by running runs" value={usd(limits.data.usage.reservedUsd)} />
            <Figure
              label="Left of the budget"
              value={
                limits.data.monthlyBudgetUsd === null
                  ? 'no budget'
                  : usd(Math.max(0, limits.data.monthlyBudgetUsd - limits.data.usage.spentUsd - limits.data.usage.reservedUsd))
              }
            />
            <Figure label="Runs running" value={String(limits.data.usage.runningRuns)} />
          </SimpleGrid>
          <NumberSettingsForm
            testId="settings-limits"
            title="Limits and budget"
            description="What the tenant’s runs and requests may use."
            fields={LIMIT_FIELDS}
            values={limits.data}
            denied={writeDenied}
            onSave={(body) => client.tenant.setLimits(body).then(saved('limits'))}
          />
          <KeyRateLimits tenantLimit={limits.data.rateLimitPerMinute} />
        </>
      )}
      {retention.data && (
        <NumberSettingsForm
          testId="settings-retention"
          title="Retention"
          description="What the background sweep deletes, and when. Export first (agentry export) to keep a copy."
          fields={RETENTION_FIELDS}
          values={retention.data}
          denied={writeDenied}
          onSave={(body) => client.tenant.setRetention(body).then(saved('retention'))}
        />
      )}
      {code.data && (
        <Stack gap="xs">
          {!code.data.available && (
            <Alert color="yellow" title="Code does not run on this server">
              {code.data.unavailableReason}: the code tools are not offered to agents. The limits below apply once it does.
            </Alert>
          )}
          <NumberSettingsForm
            testId="settings-code"
            title="Code execution"
            description="Each execution of code_run and skill scripts, within the server’s maxima."
            fields={codeFields(code.data.maxima)}
            values={code.data.limits}
            denied={writeDenied}
            onSave={(body) => client.code.setSettings(body).then(saved('code'))}
          />
        </Stack>
      )}
    </Stack>
  );
}
