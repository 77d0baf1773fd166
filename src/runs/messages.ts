import type { RunStarter } from '../conversations/service.js';
import { isInjected, type RunsService } from './service.js';

/** The run engine as the conversations domain's RunStarter (app.ts hands it over): a posted message starts a run. */
export function messageRuns(runs: RunsService): RunStarter {
  return {
    async answer({ conversation, ...message }, started) {
      const handle = await runs.start({ ...message, kind: 'message', conversationId: conversation.id, conversation });
      await started?.(isInjected(handle) ? { runId: handle.runId, injectedMessageId: handle.messageId } : { runId: handle.runId });
      return isInjected(handle) ? { injected: handle } : { ended: await runs.outcome(message.principal.tenantId, handle) };
    },
    endOf: (tenantId, runId) => runs.outcomeOf(tenantId, runId),
    inject: (tenantId, conversationId, content) => runs.inject(tenantId, conversationId, content),
  };
}
