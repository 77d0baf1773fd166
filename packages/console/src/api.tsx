import { Agentry, AgentryError } from '@agentry/client';
import { createContext, type ReactNode, useContext } from 'react';

/** Who signed in: GET /api/v1/tenant (the tenant and the credential's permissions). */
export interface Me {
  tenant: { id: string; name: string };
  credential: { type: string; id: string | null; permissions: string[] };
}

export interface Session {
  client: Agentry;
  me: Me;
  signOut(): void;
}

const SessionContext = createContext<Session | null>(null);

export function SessionProvider({ session, children }: { session: Session; children: ReactNode }) {
  return <SessionContext.Provider value={session}>{children}</SessionContext.Provider>;
}

export function useSession(): Session {
  const session = useContext(SessionContext);
  if (!session) throw new Error('useSession outside a signed-in page');
  return session;
}

export const useClient = () => useSession().client;

/**
 * Why the signed-in credential may not do what needs `permission`, or null when it may: controls
 * that would fail are disabled with this as their reason, instead of an error after the click.
 */
export function useDenied(): (permission: string) => string | null {
  const { me } = useSession();
  return (permission) =>
    me.credential.permissions.includes(permission)
      ? null
      : `this ${me.credential.type === 'api_key' ? 'key' : 'token'} lacks ${permission}`;
}

/**
 * The console's requests skip the browser's HTTP cache: a page shows the state now (an agent's client
 * metadata is public, max-age=300 for relying parties, and would show a badge minutes old).
 */
const uncached: typeof fetch = (input, init) => globalThis.fetch(input, { ...init, cache: 'no-store' });

/** A client for `credential` at `baseUrl`: an API key, or an OAuth access token. */
export function clientFor(baseUrl: string, credential: string): Agentry {
  return credential.startsWith('agk_')
    ? new Agentry({ baseUrl, apiKey: credential, fetch: uncached })
    : new Agentry({ baseUrl, accessToken: () => credential, fetch: uncached });
}

/** One line for an error: the problem's detail, else the message. */
export function messageOf(err: unknown): string {
  if (err instanceof AgentryError) return err.detail || err.code;
  return err instanceof Error ? err.message : String(err);
}
