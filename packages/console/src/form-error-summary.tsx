import { Alert, List } from '@mantine/core';

/**
 * Every field error of a failed save, readable, at the top of the form (each is also at its field when
 * the form shows it); nothing when there are none.
 */
export function FormErrorSummary({ summary, title = 'Not saved' }: { summary: string[]; title?: string }) {
  if (!summary.length) return null;
  return (
    <Alert color="red" title={`${title}: ${summary.length === 1 ? '1 problem' : `${summary.length} problems`}`} data-testid="form-errors">
      <List size="sm">
        {summary.map((line) => (
          <List.Item key={line}>{line}</List.Item>
        ))}
      </List>
    </Alert>
  );
}
