import type { FileInfo, Message } from '@agentry/client';
import { Group, Paper, ScrollArea, Stack, Text } from '@mantine/core';
import { type ReactNode, type Ref, useState } from 'react';
import type { ToolCallView, TurnState } from '../../lib/turn';
import { RunCitations } from '../knowledge/citations';
import { TurnWarnings } from '../runs/run-warnings';
import { Attachments } from './attachments';
import { asToolViews, type OpenCards, ToolCalls } from './tool-calls';
import { CostLine, TurnCost } from './turn-cost';
import { WaitingApproval } from './waiting-approval';

/** The answer under way (or just ended), with the message that asked for it. */
export type LiveTurn = TurnState & { userText?: string; userFiles?: FileInfo[] };

function Bubble({ author, children }: { author: string; children: ReactNode }) {
  const user = author === 'user';
  return (
    <Group justify={user ? 'flex-end' : 'flex-start'}>
      <Paper p="sm" radius="md" withBorder maw="85%" bg={user ? 'var(--mantine-color-indigo-light)' : undefined} data-author={author}>
        {children}
      </Paper>
    </Group>
  );
}

/**
 * An answer, streamed (`live`) or stored, in one shape: tool calls, then the text, then how it ended.
 * The stored answer takes the streamed one's place as the same element, so its cards stay mounted and a
 * click on one (a file's download) is not lost when the turn ends.
 */
function Answer({
  calls,
  cards,
  text,
  attachments,
  runId,
  live,
}: {
  calls: ToolCallView[];
  cards: OpenCards;
  text: string;
  attachments?: string[];
  runId?: string | null;
  live?: LiveTurn;
}) {
  return (
    <Bubble author="assistant">
      <ToolCalls calls={calls} cards={cards} />
      {(live?.approvals ?? []).map((a) => (
        <WaitingApproval key={a.approvalId} approval={a} />
      ))}
      <Text style={{ whiteSpace: 'pre-wrap' }} data-testid={live ? 'live-answer' : undefined}>
        {text}
        {live?.status === 'streaming' ? '▍' : ''}
      </Text>
      {attachments && <Attachments ids={attachments} />}
      {live
        ? live.status === 'done' && (
            <CostLine cost={live.cost} input={live.tokenUsage?.inputTokens} output={live.tokenUsage?.outputTokens} />
          )
        : runId && (
            <>
              <RunCitations runId={runId} />
              <TurnCost runId={runId} />
              <TurnWarnings runId={runId} />
            </>
          )}
      {live?.error && (
        <Text c="red" size="sm">
          {live.error.code}: {live.error.message}
        </Text>
      )}
    </Bubble>
  );
}

/**
 * The conversation: its stored messages, each answer with its tool calls, citations, cost and warnings,
 * then the answer under way as it streams (its own stored copy is left out while it shows).
 */
export function ChatTranscript({
  messages,
  live,
  bottomRef,
}: {
  messages: Message[];
  live: LiveTurn | null;
  bottomRef: Ref<HTMLDivElement>;
}) {
  const [open, setOpen] = useState<string[]>([]);
  const cards = (turn: string) => ({ turn, open, setOpen });
  const shown = messages.filter((m) => !(live && m.runId === live.runId && m.role === 'assistant'));
  const userShown = live && shown.some((m) => m.runId === live.runId && m.role === 'user');
  // A bubble's key is its run's question or answer where it has one, so the streamed turn and its stored copy share it.
  const taken = new Set<string>();
  const place = (role: string, runId: string | null | undefined, id: string) => {
    const key = runId ? `${role}:${runId}` : id;
    if (taken.has(key)) return id;
    taken.add(key);
    return key;
  };
  const bubbles = shown.map((m) =>
    m.role === 'assistant' ? (
      <Answer
        key={place(m.role, m.runId, m.id)}
        calls={asToolViews(m)}
        cards={cards(m.runId ?? m.id)}
        text={m.content}
        attachments={m.attachments}
        runId={m.runId}
      />
    ) : (
      <Bubble key={place(m.role, m.runId, m.id)} author={m.role}>
        <Text style={{ whiteSpace: 'pre-wrap' }}>{m.content}</Text>
        <Attachments ids={m.attachments} />
      </Bubble>
    ),
  );
  if (live?.userText && !userShown)
    bubbles.push(
      <Bubble key={place('user', live.runId, 'live-user')} author="user">
        <Text style={{ whiteSpace: 'pre-wrap' }}>{live.userText}</Text>
        <Attachments ids={(live.userFiles ?? []).map((f) => f.id)} known={live.userFiles} />
      </Bubble>,
    );
  if (live)
    bubbles.push(
      <Answer
        key={place('assistant', live.runId, 'live-answer')}
        calls={live.toolCalls}
        cards={cards(live.runId)}
        text={live.text}
        live={live}
      />,
    );
  return (
    <ScrollArea style={{ flex: 1 }} type="auto" aria-live="polite">
      <Stack gap="sm" p="xs" data-testid="chat">
        {bubbles}
        <div ref={bottomRef} />
      </Stack>
    </ScrollArea>
  );
}
