import { Alert, Anchor, Button, Center, Code, Paper, PasswordInput, Stack, Text, Title } from '@mantine/core';
import { useState } from 'react';
import { messageOf } from '../api';
import { useAuth } from '../auth';

export function SignInPage() {
  const { signIn } = useAuth();
  const [credential, setCredential] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  return (
    <Center mih="100vh" p="md">
      <Paper withBorder shadow="sm" p="xl" w={440} maw="100%">
        <form
          onSubmit={async (event) => {
            event.preventDefault();
            setBusy(true);
            setError(null);
            try {
              await signIn(credential);
            } catch (err) {
              setError(messageOf(err));
            } finally {
              setBusy(false);
            }
          }}
        >
          <Stack>
            <Title order={1} size="h2">
              Sign in to Agentry
            </Title>
            <Text size="sm" c="dimmed">
              Paste an API key (<Code>agk_...</Code>, e.g. the one <Code>npx agentry tenants create</Code> printed) or an OAuth access
              token. It is kept in this tab only and forgotten when you sign out or close the tab.
            </Text>
            <PasswordInput
              label="API key or access token"
              value={credential}
              onChange={(e) => setCredential(e.currentTarget.value)}
              required
              autoFocus
              autoComplete="off"
              error={error}
            />
            <Button type="submit" loading={busy} disabled={!credential.trim()}>
              Sign in
            </Button>
            {error && (
              <Alert color="red" title="Not signed in">
                {error}
              </Alert>
            )}
            <Text size="xs" c="dimmed">
              The API itself: <Anchor href="./docs">./docs</Anchor>
            </Text>
          </Stack>
        </form>
      </Paper>
    </Center>
  );
}
