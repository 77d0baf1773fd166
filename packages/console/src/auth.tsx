import { Center, Loader } from '@mantine/core';
import { createContext, type ReactNode, useCallback, useContext, useEffect, useMemo, useState } from 'react';
import { clientFor, type Me, type Session, SessionProvider } from './api';
import { apiBaseUrl, forgetCredential, loadCredential, saveCredential } from './lib/session';

interface Auth {
  session: Session | null;
  /** Checks the credential against the API (GET /api/v1/tenant) and keeps it for this tab; throws when refused. */
  signIn(credential: string): Promise<void>;
  signOut(): void;
}

const AuthContext = createContext<Auth | null>(null);

export function useAuth(): Auth {
  const auth = useContext(AuthContext);
  if (!auth) throw new Error('useAuth outside AuthProvider');
  return auth;
}

async function open(credential: string): Promise<Omit<Session, 'signOut'>> {
  const client = clientFor(apiBaseUrl(), credential);
  const me = await client.http.json<Me>('GET', '/api/v1/tenant');
  return { client, me };
}

export function AuthProvider({ children, onSignOut }: { children: ReactNode; onSignOut(): void }) {
  const [opened, setOpened] = useState<Omit<Session, 'signOut'> | null>(null);
  const [restoring, setRestoring] = useState(() => loadCredential() !== null);

  const signOut = useCallback(() => {
    forgetCredential();
    setOpened(null);
    onSignOut();
  }, [onSignOut]);

  // A reload keeps the tab's credential: check it again (it may have been revoked meanwhile).
  useEffect(() => {
    const stored = loadCredential();
    if (!stored) return;
    open(stored)
      .then(setOpened)
      .catch(() => forgetCredential())
      .finally(() => setRestoring(false));
  }, []);

  const auth = useMemo<Auth>(
    () => ({
      session: opened ? { ...opened, signOut } : null,
      async signIn(credential) {
        const session = await open(credential.trim());
        saveCredential(credential);
        setOpened(session);
      },
      signOut,
    }),
    [opened, signOut],
  );

  if (restoring)
    return (
      <Center h="100vh">
        <Loader aria-label="Loading" />
      </Center>
    );
  const content = auth.session ? <SessionProvider session={auth.session}>{children}</SessionProvider> : children;
  return <AuthContext.Provider value={auth}>{content}</AuthContext.Provider>;
}
