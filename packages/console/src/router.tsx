import type { Agentry } from '@agentry/client';
import { type QueryClient, useQueryClient } from '@tanstack/react-query';
import {
  Navigate,
  Outlet,
  RouterProvider,
  createRootRouteWithContext,
  createRoute,
  createRouter,
  lazyRouteComponent,
} from '@tanstack/react-router';
import { useAuth } from './auth';
import { agentQuery, agentsPageQuery, appsQuery } from './features/agents/queries';
import { modelsQuery } from './features/models/queries';
import { runQuery } from './features/runs/queries';
import { taskQuery, tasksQuery } from './features/tasks/queries';
import { skillStoreQuery, skillsQuery } from './features/skills/queries';
import { Layout } from './layout';
import { routerBasePath } from './lib/session';
import { SignInPage } from './pages/sign-in';

/*
 * The console's pages. Their first path segments are the server's list of console routes
 * (CONSOLE_SECTIONS in src/http/console.ts): a reload of any of them gets index.html. Each page is
 * its own chunk, loaded when first opened: the first load carries the shell (layout, sign-in) only.
 */

const AgentsPage = lazyRouteComponent(() => import('./features/agents/agents-page'), 'AgentsPage');
const AgentEditPage = lazyRouteComponent(() => import('./features/agents/agent-edit-page'), 'AgentEditPage');
const ApprovalsPage = lazyRouteComponent(() => import('./features/approvals/approvals-page'), 'ApprovalsPage');
const ConnectorsPage = lazyRouteComponent(() => import('./features/connectors/connectors-page'), 'ConnectorsPage');
const IdentityPage = lazyRouteComponent(() => import('./features/identity/identity-page'), 'IdentityPage');
const KnowledgeBasePage = lazyRouteComponent(() => import('./features/knowledge/base-page'), 'KnowledgeBasePage');
const KnowledgePage = lazyRouteComponent(() => import('./features/knowledge/bases-page'), 'KnowledgePage');
const MemoryPage = lazyRouteComponent(() => import('./features/memory/memory-page'), 'MemoryPage');
const PlaygroundPage = lazyRouteComponent(() => import('./features/playground/playground-page'), 'PlaygroundPage');
const RunPage = lazyRouteComponent(() => import('./features/runs/run-page'), 'RunPage');
const RunsPage = lazyRouteComponent(() => import('./pages/runs'), 'RunsPage');
const SettingsPage = lazyRouteComponent(() => import('./features/settings/settings-page'), 'SettingsPage');
const SkillsPage = lazyRouteComponent(() => import('./features/skills/skills-page'), 'SkillsPage');
const TaskPage = lazyRouteComponent(() => import('./features/tasks/task-page'), 'TaskPage');
const TasksPage = lazyRouteComponent(() => import('./features/tasks/tasks-page'), 'TasksPage');
const UsagePage = lazyRouteComponent(() => import('./features/usage/usage-page'), 'UsagePage');

/**
 * What loaders get: the query cache and the signed-in client (null before sign-in). A page's loader
 * starts its data as the page's chunk starts loading, instead of after it; it awaits nothing, so
 * the page shows its own loading and error states, from the cache its queries share.
 */
interface RouterContext {
  queryClient: QueryClient;
  client: Agentry | null;
}

const rootRoute = createRootRouteWithContext<RouterContext>()({ component: Outlet });

function SignedIn() {
  const { session } = useAuth();
  if (!session) return <Navigate to="/sign-in" />;
  return (
    <Layout>
      <Outlet />
    </Layout>
  );
}

function SignInRoute() {
  const { session } = useAuth();
  if (session) return <Navigate to="/agents" />;
  return <SignInPage />;
}

const signIn = createRoute({ getParentRoute: () => rootRoute, path: '/sign-in', component: SignInRoute });
const app = createRoute({ getParentRoute: () => rootRoute, id: 'app', component: SignedIn });
const index = createRoute({ getParentRoute: () => app, path: '/', component: () => <Navigate to="/agents" /> });
const agents = createRoute({
  getParentRoute: () => app,
  path: '/agents',
  component: AgentsPage,
  validateSearch: (s: Record<string, unknown>): { page?: number; status?: string; appId?: string } => ({
    page: Number(s.page) > 0 ? Number(s.page) : undefined,
    status: typeof s.status === 'string' ? s.status : undefined,
    appId: typeof s.appId === 'string' ? s.appId : undefined,
  }),
  loaderDeps: ({ search }) => search,
  loader: ({ context: { queryClient, client }, deps }) => {
    if (!client) return;
    void queryClient.prefetchQuery(agentsPageQuery(client, deps));
    void queryClient.prefetchQuery(appsQuery(client));
  },
});
const agentEdit = createRoute({
  getParentRoute: () => app,
  path: '/agents/$agentId',
  component: AgentEditPage,
  loader: ({ context: { queryClient, client }, params }) => {
    if (!client) return;
    if (params.agentId !== 'new') void queryClient.prefetchQuery(agentQuery(client, params.agentId));
    void queryClient.prefetchQuery(modelsQuery(client));
  },
});
const playground = createRoute({
  getParentRoute: () => app,
  path: '/playground',
  component: PlaygroundPage,
  validateSearch: (s: Record<string, unknown>): { agentId?: string; conversationId?: string } => ({
    agentId: typeof s.agentId === 'string' ? s.agentId : undefined,
    conversationId: typeof s.conversationId === 'string' ? s.conversationId : undefined,
  }),
});
const runs = createRoute({
  getParentRoute: () => app,
  path: '/runs',
  component: RunsPage,
  validateSearch: (s: Record<string, unknown>): { agentId?: string; status?: string; kind?: string; page?: number } => ({
    agentId: typeof s.agentId === 'string' ? s.agentId : undefined,
    status: typeof s.status === 'string' ? s.status : undefined,
    kind: typeof s.kind === 'string' ? s.kind : undefined,
    page: Number(s.page) > 0 ? Number(s.page) : undefined,
  }),
});
const run = createRoute({
  getParentRoute: () => app,
  path: '/runs/$runId',
  component: RunPage,
  loader: ({ context: { queryClient, client }, params }) => {
    if (client) void queryClient.prefetchQuery(runQuery(client, params.runId));
  },
});
const tasks = createRoute({
  getParentRoute: () => app,
  path: '/tasks',
  component: TasksPage,
  loader: ({ context: { queryClient, client } }) => {
    if (client) void queryClient.prefetchQuery(tasksQuery(client));
  },
});
const task = createRoute({
  getParentRoute: () => app,
  path: '/tasks/$taskId',
  component: TaskPage,
  loader: ({ context: { queryClient, client }, params }) => {
    if (client) void queryClient.prefetchQuery(taskQuery(client, params.taskId));
  },
});
const approvals = createRoute({ getParentRoute: () => app, path: '/approvals', component: ApprovalsPage });
const identity = createRoute({ getParentRoute: () => app, path: '/identity', component: IdentityPage });
const usage = createRoute({ getParentRoute: () => app, path: '/usage', component: UsagePage });
const skills = createRoute({
  getParentRoute: () => app,
  path: '/skills',
  component: SkillsPage,
  loader: ({ context: { queryClient, client } }) => {
    if (!client) return;
    void queryClient.prefetchQuery(skillsQuery(client));
    void queryClient.prefetchQuery(skillStoreQuery(client));
  },
});
const connectors = createRoute({ getParentRoute: () => app, path: '/connectors', component: ConnectorsPage });
const settings = createRoute({ getParentRoute: () => app, path: '/settings', component: SettingsPage });
const memory = createRoute({
  getParentRoute: () => app,
  path: '/memory',
  component: MemoryPage,
  validateSearch: (s: Record<string, unknown>): { agentId?: string; userId?: string } => ({
    agentId: typeof s.agentId === 'string' && s.agentId ? s.agentId : undefined,
    userId: typeof s.userId === 'string' && s.userId ? s.userId : undefined,
  }),
});

/** A chunk's position from the URL: a whole number from 0 (the router parses `2` as a number, `"2"` stays text). */
function positionOf(value: unknown): number | undefined {
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : Number.NaN;
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

const knowledge = createRoute({ getParentRoute: () => app, path: '/knowledge', component: KnowledgePage });
// A citation's link: the base's page showing one document's chunk (`document`, `position`).
const knowledgeBase = createRoute({
  getParentRoute: () => app,
  path: '/knowledge/$baseId',
  component: KnowledgeBasePage,
  validateSearch: (s: Record<string, unknown>): { document?: string; position?: number } => ({
    document: typeof s.document === 'string' && s.document ? s.document : undefined,
    position: positionOf(s.position),
  }),
});

const routeTree = rootRoute.addChildren([
  signIn,
  app.addChildren([
    index,
    agents,
    agentEdit,
    playground,
    runs,
    run,
    tasks,
    task,
    approvals,
    knowledge,
    knowledgeBase,
    identity,
    usage,
    skills,
    memory,
    connectors,
    settings,
  ]),
]);

export const router = createRouter({
  routeTree,
  basepath: routerBasePath() || '/',
  // Set by AppRouter on every render (the client changes with a sign-in).
  context: { queryClient: undefined as unknown as QueryClient, client: null },
});

declare module '@tanstack/react-router' {
  interface Register {
    router: typeof router;
  }
}

export function AppRouter() {
  const queryClient = useQueryClient();
  const client = useAuth().session?.client ?? null;
  return <RouterProvider router={router} context={{ queryClient, client }} />;
}
