import { Button, Group, Stack, Text, TextInput, type TextInputProps, Title } from '@mantine/core';
import { Fragment, type ReactNode } from 'react';

/** A section of rows (MCP servers, delegations, A2A agents): each row edited or removed on its own, and an add button. */
export function RowSection<R extends { key: string }>({
  title,
  hint,
  empty,
  rows,
  onRows,
  newRow,
  addLabel,
  max,
  row,
}: {
  title: string;
  hint?: string;
  empty?: string;
  rows: R[];
  onRows: (rows: R[]) => void;
  newRow: () => R;
  addLabel: string;
  max?: number;
  row: (row: R, index: number, edit: { onChange: (next: R) => void; onRemove: () => void }) => ReactNode;
}) {
  return (
    <Stack gap="xs">
      <Title order={4}>{title}</Title>
      {(hint || (empty && rows.length === 0)) && (
        <Text size="sm" c="dimmed">
          {rows.length === 0 && empty ? empty : hint}
        </Text>
      )}
      {rows.map((r, i) => (
        <Fragment key={r.key}>
          {row(r, i, {
            onChange: (next) => onRows(rows.map((x) => (x.key === r.key ? next : x))),
            onRemove: () => onRows(rows.filter((x) => x.key !== r.key)),
          })}
        </Fragment>
      ))}
      <Group>
        <Button variant="default" disabled={max !== undefined && rows.length >= max} onClick={() => onRows([...rows, newRow()])}>
          {addLabel}
        </Button>
      </Group>
    </Stack>
  );
}

/** A text field of a row: the row's value, the row changed as it is typed, the server's error for it. */
export function RowTextInput<R, F extends keyof R & string>({
  row,
  field,
  at,
  onChange,
  ...props
}: { row: R; field: F; at: (field: string) => string | undefined; onChange: (row: R) => void } & Omit<
  TextInputProps,
  'value' | 'onChange' | 'error'
>) {
  return (
    <TextInput
      {...props}
      value={row[field] as string}
      onChange={(e) => onChange({ ...row, [field]: e.currentTarget.value })}
      error={at(field)}
    />
  );
}

/** Errors of a row as a whole (`${index}`) above its fields. */
export function RowError({ errors, index }: { errors: Record<string, string>; index: number }) {
  const message = errors[`${index}`];
  return message ? (
    <Text c="red" size="sm">
      {message}
    </Text>
  ) : null;
}
