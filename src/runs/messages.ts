import type { RunStarter } from '../conversations/service.js';
import { isInjected, type RunsService } from './service.js';

/** The run engine as the conversations domain's RunStarter (app.ts hands it over): a posted message starts a run. */
export function messageRuns(runs: RunsService): RunStarter {
  return {
    async answer({ conversation, ...message }) {
      const handle = await runs.start({ ...message, kind: 'message', conversationId: conversation.id, conversation });
      return isInjected(handle) ? { injected: handle } : { ended: await runs.outcome(message.principal.tenantId, handle) };
    },
    inject: (tenantId, conversationId, content) => runs.inject(tenantId, conversationId, content),
  };
}
