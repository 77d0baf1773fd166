import { List, Stack, Text } from '@mantine/core';
import { useMemo } from 'react';
import { cronPreview } from '../../lib/cron-preview';

/** The next five fire times of a cron expression in the task's time zone, as the form is filled. */
export function CronPreviewList({ expression, timeZone }: { expression: string; timeZone: string }) {
  const preview = useMemo(() => cronPreview(expression, timeZone), [expression, timeZone]);
  if (!preview.ok)
    return (
      <Text size="sm" c="red" data-testid="cron-preview">
        {preview.error}
      </Text>
    );
  return (
    <Stack gap={2} data-testid="cron-preview">
      <Text size="sm" fw={500}>
        Next five fire times ({timeZone})
      </Text>
      <List size="sm">
        {preview.times.map((t) => (
          <List.Item key={t.iso}>{t.local}</List.Item>
        ))}
      </List>
    </Stack>
  );
}
