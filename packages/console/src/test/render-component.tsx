import '@mantine/core/styles.css';
import { Agentry } from '@agentry/client';
import { MantineProvider } from '@mantine/core';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { createMemoryHistory, createRootRoute, createRoute, createRouter, RouterContextProvider } from '@tanstack/react-router';
import type { ReactNode } from 'react';
import { render } from 'vitest-browser-react';
import { type Me, SessionProvider } from '../api';
import { cssVariablesResolver, theme } from '../theme';

/*
 * One component mounted as the console mounts its pages (Mantine with the console's theme, TanStack
 * Query, a signed-in session, a router for its links), for the component tests (*.browser.test.tsx).
 * The API is `answer`, a fetch the test writes, not a server: these tests check what one component
 * shows and does with the answers it is given; test/console checks the console against a real server.
 */

export interface RenderOptions {
  /** The SDK's fetch: answers the calls the component makes (by default none is expected: any is refused, naming its URL). */
  answer?: typeof fetch;
  /** The signed-in API key's permissions (default none: what needs one is greyed out, as for such a key). */
  permissions?: string[];
  /** The route the component is part of (e.g. '/knowledge/$baseId') and the URL it is opened at, for a component that navigates. */
  route?: { path: string; url: string };
}

const refuse: typeof fetch = async (input) => {
  throw new Error(`the component test answers no request, but ${String(input)} was asked`);
};

export async function renderComponent(ui: ReactNode, { answer = refuse, permissions = [], route }: RenderOptions = {}) {
  const client = new Agentry({ baseUrl: 'http://agentry.test', apiKey: 'agk_component_test', fetch: answer, maxRetries: 0 });
  const me: Me = { tenant: { id: 'ten_test', name: 'Acme' }, credential: { type: 'api_key', id: 'key_test', permissions } };
  const queryClient = new QueryClient({ defaultOptions: { queries: { retry: false }, mutations: { retry: false } } });
  const rootRoute = createRootRoute();
  const routeTree = route ? rootRoute.addChildren([createRoute({ getParentRoute: () => rootRoute, path: route.path })]) : rootRoute;
  const router = createRouter({ routeTree, history: createMemoryHistory({ initialEntries: [route?.url ?? '/'] }) });
  await router.load();
  // A wrapper, so that a rerender keeps the providers; the router's context without its pages, for links and navigation.
  const wrapper = ({ children }: { children: ReactNode }) => (
    <MantineProvider theme={theme} cssVariablesResolver={cssVariablesResolver}>
      <QueryClientProvider client={queryClient}>
        <SessionProvider session={{ client, me, signOut() {} }}>
          <RouterContextProvider router={router}>{children}</RouterContextProvider>
        </SessionProvider>
      </QueryClientProvider>
    </MantineProvider>
  );
  return { ...(await render(ui, { wrapper })), router };
}

/** An answer as the server sends one: JSON, or problem+json (`{ code, detail, errors }`) from 400 on; none with a 204. */
export const answerWith = (status: number, body?: unknown) =>
  new Response(body === undefined ? null : JSON.stringify(body), {
    status,
    headers: { 'content-type': status < 400 ? 'application/json' : 'application/problem+json' },
  });
