import { Alert, Badge, Card, Group, SegmentedControl, SimpleGrid, Stack, Text, useComputedColorScheme } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip as ChartTooltip, XAxis, YAxis } from 'recharts';
import { messageOf, useClient } from '../../api';
import { KnowledgeTokens } from './knowledge-tokens';
import { dailyUsageQuery } from './queries';
import { type UsageRow, seriesBy, totalsOf } from './series';
import { everyAgentQuery } from '../agents/queries';

const COLORS = ['#4c6ef5', '#12b886', '#fab005', '#fa5252', '#7950f2', '#15aabf', '#e64980', '#82c91e'];

const isoDay = (d: Date) => d.toISOString().slice(0, 10);

function StackedChart({ data, keys, unit }: { data: Record<string, string | number>[]; keys: string[]; unit: string }) {
  const dark = useComputedColorScheme('light') === 'dark';
  return (
    <ResponsiveContainer width="100%" height={260}>
      <BarChart data={data}>
        <CartesianGrid strokeDasharray="3 3" stroke={dark ? '#444' : '#ddd'} />
        <XAxis dataKey="day" tick={{ fontSize: 12, fill: dark ? '#ccc' : '#333' }} />
        <YAxis tick={{ fontSize: 12, fill: dark ? '#ccc' : '#333' }} unit={unit} width={70} />
        <ChartTooltip />
        <Legend />
        {keys.map((key, i) => (
          <Bar key={key} dataKey={key} stackId="a" fill={COLORS[i % COLORS.length]} isAnimationActive={false} />
        ))}
      </BarChart>
    </ResponsiveContainer>
  );
}

export function UsageCharts() {
  const client = useClient();
  const [days, setDays] = useState('30');
  const [by, setBy] = useState<'agent' | 'model'>('agent');
  const to = new Date();
  const from = new Date(to.getTime() - (Number(days) - 1) * 86_400_000);
  const agents = useQuery(everyAgentQuery(client));
  const usage = useQuery(dailyUsageQuery(client, isoDay(from), isoDay(to)));
  const names = new Map((agents.data ?? []).map((a) => [a.id, a.name]));
  const label = (row: UsageRow) => (by === 'agent' ? (names.get(row.agentId) ?? row.agentId.slice(-8)) : row.model);
  const rows = usage.data?.rows ?? [];
  const cost = seriesBy(rows, isoDay(from), isoDay(to), label, (r) => r.costUsd);
  const tokens = seriesBy(rows, isoDay(from), isoDay(to), label, (r) => r.inputTokens + r.outputTokens);
  const totals = totalsOf(rows);

  return (
    <Stack>
      <Group>
        <SegmentedControl value={days} onChange={setDays} data={['7', '30', '90'].map((d) => ({ value: d, label: `${d} days` }))} />
        <SegmentedControl
          value={by}
          onChange={(v) => setBy(v as 'agent' | 'model')}
          data={[
            { value: 'agent', label: 'per agent' },
            { value: 'model', label: 'per model' },
          ]}
        />
      </Group>
      {usage.error && <Alert color="red">{messageOf(usage.error)}</Alert>}
      <SimpleGrid cols={{ base: 2, md: 4 }}>
        <Card withBorder>
          <Text size="xs" c="dimmed">
            Cost
          </Text>
          <Text fw={700} size="xl" data-testid="usage-cost">
            ${totals.costUsd.toFixed(6)}
          </Text>
        </Card>
        <Card withBorder>
          <Text size="xs" c="dimmed">
            Tokens
          </Text>
          <Text fw={700} size="xl">
            {totals.inputTokens + totals.outputTokens}
          </Text>
        </Card>
        <Card withBorder>
          <Text size="xs" c="dimmed">
            Runs
          </Text>
          <Text fw={700} size="xl">
            {totals.runs}
          </Text>
        </Card>
        <Card withBorder>
          <Text size="xs" c="dimmed">
            By status
          </Text>
          <Group gap={4}>
            {Object.entries(totals.byStatus).map(([status, n]) => (
              <Badge key={status} variant="light">
                {status} {n}
              </Badge>
            ))}
          </Group>
        </Card>
      </SimpleGrid>
      <Text fw={600}>Cost per day (USD)</Text>
      <StackedChart data={cost.data} keys={cost.keys} unit="" />
      <Text fw={600}>Tokens per day</Text>
      <StackedChart data={tokens.data} keys={tokens.keys} unit="" />
      <KnowledgeTokens from={isoDay(from)} to={isoDay(to)} />
    </Stack>
  );
}
