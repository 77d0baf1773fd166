import type { RunStream } from '@agentry/client';
import { Alert, Grid, Stack, Text, Title } from '@mantine/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate, useSearch } from '@tanstack/react-router';
import { useCallback, useEffect, useRef, useState } from 'react';
import { messageOf, useClient, useDenied } from '../../api';
import { followTurn, newTurn, pendingTurns, type TurnState } from '../../lib/turn';
import { conversationKeys, conversationMessagesQuery } from '../conversations/queries';
import { runKeys } from '../runs/queries';
import { ChatTranscript, type LiveTurn } from './chat-transcript';
import { ConversationList } from './conversation-list';
import { useLastOpen } from './last-open';
import { MessageComposer } from './message-composer';
import { useAttachments } from './use-attachments';

/** Talk to an agent over the stream; the answer under way survives a reload (replayed from its first event). */
export function PlaygroundPage() {
  const client = useClient();
  const denied = useDenied()('agents:write');
  const queryClient = useQueryClient();
  const navigate = useNavigate({ from: '/playground' });
  const { agentId, conversationId } = useSearch({ from: '/app/playground' });
  useLastOpen(agentId, conversationId);
  const [draft, setDraft] = useState('');
  const [live, setLive] = useState<LiveTurn | null>(null);
  const [error, setError] = useState<string | null>(null);
  const streamRef = useRef<RunStream | null>(null);
  const bottom = useRef<HTMLDivElement>(null);

  const messages = useQuery({ ...conversationMessagesQuery(client, conversationId ?? ''), enabled: !!conversationId });

  const finish = useCallback(
    async (turn: TurnState, conversation: string) => {
      pendingTurns.clear(sessionStorage, turn.runId);
      streamRef.current = null;
      // A read still under way began before the answer was stored: cancelled, or the refetch would join it
      // (a conversation's first read is never cancelled by a refetch) and the answer would never show.
      await queryClient.cancelQueries({ queryKey: conversationKeys.messages(conversation) });
      await queryClient.invalidateQueries({ queryKey: conversationKeys.messages(conversation) });
      queryClient.invalidateQueries({ queryKey: conversationKeys.lists() });
      queryClient.invalidateQueries({ queryKey: runKeys.detail(turn.runId) });
      // Shown until the conversation's messages hold the answer (the effect below), so it never blinks out.
      setLive(turn);
    },
    [queryClient],
  );

  // After a reload, the answer under way when the page went away is replayed from its first event:
  // rebuilt from scratch, so nothing is lost or shown twice, then followed live until it ends.
  useEffect(() => {
    const pending = pendingTurns.get(sessionStorage);
    if (!pending || pending.conversationId !== conversationId || streamRef.current) return;
    const controller = new AbortController();
    const events = client.runs.events(pending.runId, { lastEventId: 0, signal: controller.signal });
    followTurn(events, newTurn(pending.runId), setLive, { live: false })
      .then((turn) => finish(turn, pending.conversationId))
      .catch((err) => {
        if (!controller.signal.aborted) setError(messageOf(err));
      });
    return () => controller.abort();
  }, [client, conversationId, finish]);

  // A finished turn gives way to the stored answer once the messages hold it (a refetch may come first).
  useEffect(() => {
    if (live && live.status !== 'streaming' && messages.data?.some((m) => m.runId === live.runId && m.role === 'assistant')) setLive(null);
  }, [live, messages.data]);

  // Keeps the newest text in view as it arrives.
  const newest = `${messages.data?.length}:${live?.text.length}:${live?.toolCalls.length}`;
  useEffect(() => {
    if (newest) bottom.current?.scrollIntoView({ block: 'end' });
  }, [newest]);

  const streaming = live?.status === 'streaming';
  const canAttach = !!agentId && !denied && !streaming;
  const attachments = useAttachments(canAttach, setError);

  async function send() {
    const text = draft.trim();
    if (!text || !agentId || attachments.uploading) return;
    const files = streaming ? [] : attachments.attached;
    let started = false;
    setDraft('');
    setError(null);
    if (streaming && conversationId) {
      // Said while the agent answers: joins the run (inject), as the next thing the model reads.
      try {
        await client.conversations.inject(conversationId, { content: text });
        queryClient.invalidateQueries({ queryKey: conversationKeys.messages(conversationId) });
      } catch (err) {
        setError(messageOf(err));
      }
      return;
    }
    try {
      const ids = files.length ? files.map((f) => f.id) : undefined;
      const stream = client.agents.stream(agentId, { message: text, conversationId, attachments: ids });
      streamRef.current = stream;
      const runId = await stream.runId();
      started = true;
      attachments.sent(files);
      const conversation = (await stream.conversationId()) ?? conversationId!;
      pendingTurns.set(sessionStorage, { runId, conversationId: conversation, agentId });
      setLive({ ...newTurn(runId), userText: text, userFiles: files });
      if (conversation !== conversationId) navigate({ search: { agentId, conversationId: conversation } });
      queryClient.invalidateQueries({ queryKey: conversationKeys.messages(conversation) });
      const turn = await followTurn(stream, newTurn(runId), (t) => setLive({ ...t, userText: text, userFiles: files }));
      await finish(turn, conversation);
    } catch (err) {
      streamRef.current = null;
      // A message the server refused (no run started) keeps its text and attachments to try again.
      if (!started) {
        setDraft((d) => d || text);
        attachments.restore(files);
      }
      setError(messageOf(err));
      setLive((t) => (t ? { ...t, status: 'error' } : t));
    }
  }

  async function stop() {
    if (!live) return;
    try {
      await client.runs.cancel(live.runId);
    } catch (err) {
      setError(messageOf(err));
    }
  }

  return (
    <Grid>
      <Grid.Col span={{ base: 12, sm: 4, lg: 3 }}>
        <ConversationList agentId={agentId} conversationId={conversationId} />
      </Grid.Col>
      <Grid.Col span={{ base: 12, sm: 8, lg: 9 }}>
        <Stack
          h={{ base: 'auto', sm: 'calc(100vh - 120px)' } as unknown as string}
          gap="sm"
          data-testid="chat-drop-zone"
          {...attachments.dropZone}
          style={attachments.dragging ? { outline: '2px dashed var(--mantine-color-indigo-5)', outlineOffset: 4 } : undefined}
        >
          <Title order={1} size="h3">
            Playground
          </Title>
          {!agentId && <Text c="dimmed">Choose an agent to talk to.</Text>}
          <ChatTranscript messages={messages.data ?? []} live={live} bottomRef={bottom} />
          {error && (
            <Alert color="red" withCloseButton onClose={() => setError(null)}>
              {error}
            </Alert>
          )}
          <MessageComposer
            agentId={agentId}
            draft={draft}
            onDraft={setDraft}
            streaming={streaming}
            denied={denied}
            canAttach={canAttach}
            attachments={attachments}
            onSend={() => void send()}
            onStop={() => void stop()}
          />
        </Stack>
      </Grid.Col>
    </Grid>
  );
}
