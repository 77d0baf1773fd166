import type { FileInfo, Message } from '@agentry/client';
import { Group, Paper, ScrollArea, Stack, Text } from '@mantine/core';
import { type ReactNode, type Ref, useState } from 'react';
import type { TurnState } from '../../lib/turn';
import { RunCitations } from '../knowledge/citations';
import { TurnWarnings } from '../runs/run-warnings';
import { Attachments } from './attachments';
import { asToolViews, ToolCalls } from './tool-calls';
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
  return (
    <ScrollArea style={{ flex: 1 }} type="auto" aria-live="polite">
      <Stack gap="sm" p="xs" data-testid="chat">
        {shown.map((m) => (
          <Bubble key={m.id} author={m.role}>
            <Text style={{ whiteSpace: 'pre-wrap' }}>{m.content}</Text>
            <Attachments ids={m.attachments} />
            {m.role === 'assistant' && <ToolCalls calls={asToolViews(m)} cards={cards(m.runId ?? m.id)} />}
            {m.role === 'assistant' && m.runId && <RunCitations runId={m.runId} />}
            {m.role === 'assistant' && m.runId && <TurnCost runId={m.runId} />}
            {m.role === 'assistant' && m.runId && <TurnWarnings runId={m.runId} />}
          </Bubble>
        ))}
        {live && (
          <>
            {live.userText && !userShown && (
              <Bubble author="user">
                <Text style={{ whiteSpace: 'pre-wrap' }}>{live.userText}</Text>
                <Attachments ids={(live.userFiles ?? []).map((f) => f.id)} known={live.userFiles} />
              </Bubble>
            )}
            <Bubble author="assistant">
              <ToolCalls calls={live.toolCalls} cards={cards(live.runId)} />
              {(live.approvals ?? []).map((a) => (
                <WaitingApproval key={a.approvalId} approval={a} />
              ))}
              <Text style={{ whiteSpace: 'pre-wrap' }} data-testid="live-answer">
                {live.text}
                {live.status === 'streaming' ? '▍' : ''}
              </Text>
              {live.status === 'done' && (
                <CostLine cost={live.cost} input={live.tokenUsage?.inputTokens} output={live.tokenUsage?.outputTokens} />
              )}
              {live.error && (
                <Text c="red" size="sm">
                  {live.error.code}: {live.error.message}
                </Text>
              )}
            </Bubble>
          </>
        )}
        <div ref={bottomRef} />
      </Stack>
    </ScrollArea>
  );
}
