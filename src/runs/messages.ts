import type { MessageRuns } from '../conversations/service.js';
import type { RunsService } from './service.js';

/** The run engine as the conversations domain's MessageRuns (app.ts hands it over): a posted message starts a run. */
export function messageRuns(runs: RunsService): MessageRuns {
  return {
    async answer({ principal, idempotency, message, trace }) {
      const started = await runs.start({
        principal,
        idempotency,
        trace,
        run: async () => {
          const { agent, content, attachments, conversation, onActiveRun, responseFormat } = await message();
          return {
            kind: 'message',
            agent,
            input: { content, attachments },
            where: { conversationId: conversation.id, conversation },
            options: { onActiveRun, responseFormat },
          };
        },
      });
      if (!('run' in started)) return started;
      return { ended: await runs.outcome(principal.tenantId, started.run) };
    },
    endOf: (tenantId, runId) => runs.outcomeOf(tenantId, runId),
    inject: (tenantId, conversationId, content) => runs.inject(tenantId, conversationId, content),
  };
}
