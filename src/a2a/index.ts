import type { FastifyPluginAsync } from 'fastify';
import type { Agent } from '../agents/schemas.js';
import type { RunsService } from '../runs/service.js';
import type { OutboundFetch, ToolProvider } from '../runtime/tools/types.js';
import { a2aPlugin } from './plugin.js';
import type { A2aOptions } from './service.js';
import { type CredentialOpener, type ToolPolicies, a2aToolProvider } from './tools.js';

export interface A2aDomainOptions extends Omit<A2aOptions, 'runs'> {
  /** Lazy port to the runs service (built after a2a, whose tools it is given): resolved when the plugin is registered. */
  runs: () => RunsService;
  /** What calling remote A2A agents as tools needs. */
  remoteAgents: {
    /** The outbound guard's fetch (traced when tracing is on). */
    fetch: OutboundFetch;
    /** The TBAC decision each call asks (identity's policies). */
    policies: ToolPolicies;
    /** Opens an agent's sealed credential for a call. */
    credentials: CredentialOpener;
    /** Hosts a credential may reach over plain http: those the operator lists. */
    plainHttpAllowed: (url: URL) => boolean;
  };
}

export interface A2aDomain {
  /** Each agent's Agent Card and JSON-RPC endpoint; the domain keeps no state and runs nothing in the background. */
  plugin: FastifyPluginAsync;
  contributions: {
    /** Remote A2A agents as tools (a2a_<name>), for agents whose `tools` list them. */
    toolProviders: { a2a: ToolProvider<Agent> };
  };
}

/** Builds the Agent2Agent domain (docs/clients.md): agents served over A2A, and remote A2A agents as tools. */
export function createA2aDomain({ runs, remoteAgents, ...options }: A2aDomainOptions): A2aDomain {
  const { fetch, policies, credentials, plainHttpAllowed } = remoteAgents;
  return {
    plugin: (app) => a2aPlugin(app, { ...options, runs: runs() }),
    contributions: { toolProviders: { a2a: a2aToolProvider(fetch, policies, credentials, plainHttpAllowed) } },
  };
}
