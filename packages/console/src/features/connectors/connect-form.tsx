import { Alert, Button, Checkbox, Group, Modal, PasswordInput, Stack, Text, TextInput } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { messageOf, useClient } from '../../api';
import { FormErrorSummary } from '../../form-error-summary';
import { LocalFieldErrors } from '../../lib/form-errors';
import { connectorKeys } from './queries';
import { type Connector, type ConnectorField, configurationErrorsOf, configurationSummaryOf } from './shared';

type Typed = Record<string, string | boolean>;

/** The form's first values: blank for a new connection; a connection's own, secrets blank (kept unless typed). */
function initial(connector: Connector): Typed {
  const stored = connector.connection?.configuration ?? {};
  return Object.fromEntries(
    connector.fields.map((f) => {
      if (f.type === 'boolean') return [f.name, stored[f.name] === true];
      return [f.name, f.secret || stored[f.name] === undefined ? '' : String(stored[f.name])];
    }),
  );
}

/** What is sent: every field filled for a connection; only the changes for an edit (a cleared optional field is null). */
function bodyOf(connector: Connector, typed: Typed): Record<string, unknown> {
  const start = initial(connector);
  const editing = connector.connected;
  const body: Record<string, unknown> = {};
  for (const f of connector.fields) {
    const value = typed[f.name];
    if (editing) {
      if (value === start[f.name]) continue;
      body[f.name] = value === '' ? null : value;
    } else if (value !== '' && !(f.type === 'boolean' && value === false && !f.required)) {
      body[f.name] = value;
    }
  }
  return body;
}

function Field({
  field,
  value,
  error,
  editing,
  onChange,
}: {
  field: ConnectorField;
  value: string | boolean;
  error?: string;
  editing: boolean;
  onChange(v: string | boolean): void;
}) {
  if (field.type === 'boolean')
    return (
      <Checkbox
        label={field.label}
        description={field.description}
        checked={value === true}
        onChange={(e) => onChange(e.currentTarget.checked)}
        error={error}
      />
    );
  const common = {
    label: field.label,
    description: field.description,
    required: field.required && !(editing && field.secret),
    value: String(value),
    onChange: (e: { currentTarget: { value: string } }) => onChange(e.currentTarget.value),
    error,
  };
  return field.secret ? (
    <PasswordInput {...common} placeholder={editing ? 'unchanged (stored sealed)' : undefined} />
  ) : (
    <TextInput {...common} type={field.type === 'email' ? 'email' : field.type === 'url' ? 'url' : 'text'} />
  );
}

/**
 * Connects a connector, or changes its connection: its fields as inputs (secrets as password inputs,
 * never shown again). A required field left blank is said before sending; the server's checks (a
 * token's shape, a URL) come back under their field, with what was typed kept.
 */
export function ConnectForm({ connector, onClose }: { connector: Connector | null; onClose(): void }) {
  const client = useClient();
  const queryClient = useQueryClient();
  const [typed, setTyped] = useState<Typed>({});
  const [tried, setTried] = useState(false);
  const editing = connector?.connected ?? false;
  const missing = (f: ConnectorField) => f.required && f.type !== 'boolean' && typed[f.name] === '' && !(editing && f.secret);
  const save = useMutation({
    mutationFn: (c: Connector) => {
      // A required field left blank is said before anything is sent, in the summary as the server's complaints are.
      const blanks = c.fields.filter(missing);
      if (blanks.length) throw new LocalFieldErrors(blanks.map((f) => ({ path: `configuration.${f.name}`, message: 'required' })));
      return c.connected
        ? client.connectors.updateConnection(c.id, { configuration: bodyOf(c, typed) })
        : client.connectors.connect(c.id, { configuration: bodyOf(c, typed) });
    },
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: connectorKeys.all });
      onClose();
    },
  });
  // biome-ignore lint/correctness/useExhaustiveDependencies: a dialog opened again starts from the connection, without the last refusal
  useEffect(() => {
    if (!connector) return;
    save.reset();
    setTried(false);
    setTyped(initial(connector));
  }, [connector]);

  const server = configurationErrorsOf(save.error);
  const summary = configurationSummaryOf(save.error, connector?.fields ?? []);
  const otherError = save.error && !summary.length ? messageOf(save.error) : null;

  return (
    <Modal
      opened={connector !== null}
      onClose={onClose}
      title={connector ? `${editing ? 'Edit' : 'Connect'} ${connector.name}` : ''}
      size="lg"
    >
      {connector && (
        <form
          noValidate
          onSubmit={(e) => {
            e.preventDefault();
            setTried(true);
            save.mutate(connector);
          }}
        >
          <Stack>
            <FormErrorSummary summary={summary} title={editing ? 'Not saved' : 'Not connected'} />
            <Text size="sm" c="dimmed">
              {connector.description} Secrets are stored sealed and never shown again.
            </Text>
            {connector.fields.map((f) => (
              <Field
                key={f.name}
                field={f}
                value={typed[f.name] ?? ''}
                editing={editing}
                error={tried && missing(f) ? 'required' : server[f.name]}
                onChange={(v) => setTyped((t) => ({ ...t, [f.name]: v }))}
              />
            ))}
            {otherError && <Alert color="red">{otherError}</Alert>}
            <Group justify="end">
              <Button variant="default" onClick={onClose}>
                Cancel
              </Button>
              <Button type="submit" loading={save.isPending}>
                {editing ? 'Save' : 'Connect'}
              </Button>
            </Group>
          </Stack>
        </form>
      )}
    </Modal>
  );
}
