import { Alert, List } from '@mantine/core';
import { useEffect, useRef } from 'react';

/**
 * Every field error of a failed save, readable, at the top of the form (each is also at its field when
 * the form shows it); nothing when there are none. A new list takes the focus, so that the keyboard and
 * a screen reader start from it rather than from the button that was pressed.
 */
export function FormErrorSummary({ summary, title = 'Not saved' }: { summary: string[]; title?: string }) {
  const box = useRef<HTMLDivElement>(null);
  const lines = summary.join('\n');
  useEffect(() => {
    if (lines) box.current?.focus();
  }, [lines]);
  if (!summary.length) return null;
  return (
    <Alert
      ref={box}
      tabIndex={-1}
      color="red"
      title={`${title}: ${summary.length === 1 ? '1 problem' : `${summary.length} problems`}`}
      data-testid="form-errors"
    >
      <List size="sm">
        {summary.map((line) => (
          <List.Item key={line}>{line}</List.Item>
        ))}
      </List>
    </Alert>
  );
}
