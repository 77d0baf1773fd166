import { useNavigate } from '@tanstack/react-router';
import { useEffect } from 'react';

const LAST_OPEN = 'agentry.playground';

function lastOpen(): { agentId: string; conversationId?: string } | null {
  try {
    const value = JSON.parse(sessionStorage.getItem(LAST_OPEN) ?? 'null');
    return value && typeof value.agentId === 'string'
      ? { agentId: value.agentId, conversationId: typeof value.conversationId === 'string' ? value.conversationId : undefined }
      : null;
  } catch {
    return null;
  }
}

/**
 * The agent and conversation open are kept for the tab: the navigation's Playground link (no search)
 * comes back to them instead of an empty page.
 */
export function useLastOpen(agentId: string | undefined, conversationId: string | undefined) {
  const navigate = useNavigate({ from: '/playground' });
  useEffect(() => {
    if (agentId) sessionStorage.setItem(LAST_OPEN, JSON.stringify({ agentId, conversationId }));
  }, [agentId, conversationId]);
  // biome-ignore lint/correctness/useExhaustiveDependencies: once, when the page opens
  useEffect(() => {
    if (agentId || conversationId) return;
    const last = lastOpen();
    if (last) navigate({ search: last, replace: true });
  }, []);
}
