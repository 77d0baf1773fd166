import type { ConversationSummary, FileInfo, Message, RunStream } from '@agentry/client';
import {
  Accordion,
  Alert,
  Badge,
  Button,
  Card,
  Code,
  FileButton,
  Grid,
  Group,
  NavLink,
  Paper,
  Pill,
  ScrollArea,
  Select,
  Stack,
  Text,
  TextInput,
  Textarea,
  Title,
  Tooltip,
} from '@mantine/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate, useSearch } from '@tanstack/react-router';
import { type DragEvent, useCallback, useEffect, useRef, useState } from 'react';
import { messageOf, useClient, useDenied } from '../api';
import { TurnWarnings } from '../features/runs/run-warnings';
import { type ApprovalView, followTurn, newTurn, pendingTurns, type ToolCallView, type TurnState } from '../lib/turn';
import { apiPath } from '../lib/api-path.js';
import { CodeCall, downloadFile, isCodeCall, sizeOf } from '../code-call';
import { AnchorLink } from '../links';
import { RunCitations } from '../features/knowledge/citations';

function ToolCalls({ calls }: { calls: ToolCallView[] }) {
  if (!calls.length) return null;
  return (
    <Accordion variant="separated" multiple chevronPosition="left">
      {calls.map((call) => (
        <Accordion.Item key={call.id} value={call.id} data-testid="tool-call">
          <Accordion.Control>
            <Group gap="xs">
              <Badge variant="light">tool</Badge>
              <Text ff="monospace" size="sm">
                {call.name}
              </Text>
              <Text size="xs" c="dimmed">
                {call.result === undefined ? 'running…' : call.durationMs !== undefined ? `${call.durationMs} ms` : 'done'}
              </Text>
            </Group>
          </Accordion.Control>
          <Accordion.Panel>
            {isCodeCall(call.name) ? (
              <CodeCall name={call.name} input={call.input} result={call.result} />
            ) : (
              <>
                <Text size="xs" fw={600}>
                  Arguments
                </Text>
                <Code block>{JSON.stringify(call.input, null, 2)}</Code>
                {call.result !== undefined && (
                  <>
                    <Text size="xs" fw={600} mt="xs">
                      Result
                    </Text>
                    <Code block>{JSON.stringify(call.result, null, 2)}</Code>
                  </>
                )}
              </>
            )}
          </Accordion.Panel>
        </Accordion.Item>
      ))}
    </Accordion>
  );
}

/**
 * How a turn ended, read from its run: cost and tokens of a completed answer; a stopped or failed one
 * says so (its text is only the part written before), never a cost line that reads as finished.
 */
function TurnCost({ runId }: { runId: string }) {
  const client = useClient();
  const run = useQuery({ queryKey: ['run', runId], queryFn: () => client.runs.get(runId), staleTime: 60_000 });
  if (!run.data) return null;
  const { status, error, cost, tokenUsage } = run.data;
  const ended =
    status === 'cancelled' || status === 'failed' ? (
      <Text size="xs" c={status === 'cancelled' ? 'orange' : 'red'} data-testid="turn-cost">
        {status === 'cancelled'
          ? 'Stopped before the answer was finished'
          : `Failed: ${error?.message ?? error?.code ?? 'no reason given'}`}
        {tokenUsage ? ` · ${tokenUsage.inputTokens} in / ${tokenUsage.outputTokens} out tokens` : ''}
      </Text>
    ) : (
      <CostLine cost={cost} input={tokenUsage?.inputTokens} output={tokenUsage?.outputTokens} />
    );
  return (
    <Group gap="xs" wrap="nowrap">
      {ended}
      <AnchorLink to="/runs/$runId" params={{ runId }} size="xs" data-testid="turn-run">
        Run
      </AnchorLink>
    </Group>
  );
}

function CostLine({ cost, input, output }: { cost?: number; input?: number; output?: number }) {
  return (
    <Text size="xs" c="dimmed" data-testid="turn-cost">
      ${(cost ?? 0).toFixed(6)} · {input ?? 0} in / {output ?? 0} out tokens
    </Text>
  );
}

function Bubble({ author, children }: { author: string; children: React.ReactNode }) {
  const user = author === 'user';
  return (
    <Group justify={user ? 'flex-end' : 'flex-start'}>
      <Paper p="sm" radius="md" withBorder maw="85%" bg={user ? 'var(--mantine-color-indigo-light)' : undefined} data-author={author}>
        {children}
      </Paper>
    </Group>
  );
}

/** A paperclip, drawn inline: the console carries no icon font, and an emoji depends on the system's fonts. */
function PaperclipIcon({ size = 14 }: { size?: number }) {
  return (
    <svg width={size} height={size} viewBox="0 0 24 24" fill="none" stroke="currentColor" strokeWidth="2" aria-hidden="true">
      <path d="M21 12.5l-8.5 8.5a5 5 0 0 1-7-7L14 5.5a3.5 3.5 0 0 1 5 5L10.5 19a2 2 0 0 1-3-3L15 8.5" />
    </svg>
  );
}

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

/** The server's limit on a message's attachments (the execute body's `attachments`, maxItems). */
const MAX_ATTACHMENTS = 20;

/** A file a sent message names: its name and size read once by id, a click downloads it. */
function Attachment({ id, known }: { id: string; known?: FileInfo }) {
  const client = useClient();
  const file = useQuery({ queryKey: ['file', id], queryFn: () => client.files.get(id), initialData: known, staleTime: Infinity });
  const [failed, setFailed] = useState<string | null>(null);
  if (file.error)
    return (
      <Badge color="gray">
        attachment {id.slice(0, 8)}… ({messageOf(file.error)})
      </Badge>
    );
  if (!file.data) return <Badge variant="light">attachment…</Badge>;
  return (
    <Button
      size="compact-xs"
      variant="light"
      data-testid="attachment"
      title={failed ?? `Download ${file.data.name}`}
      color={failed ? 'red' : undefined}
      onClick={() => downloadFile(client, file.data).catch((err) => setFailed(messageOf(err)))}
      leftSection={<PaperclipIcon size={12} />}
    >
      {file.data.name} · {sizeOf(file.data.size)}
    </Button>
  );
}

function Attachments({ ids, known = [] }: { ids: string[]; known?: FileInfo[] }) {
  if (!ids.length) return null;
  return (
    <Group gap={4} mt={4}>
      {ids.map((id) => (
        <Attachment key={id} id={id} known={known.find((f) => f.id === id)} />
      ))}
    </Group>
  );
}

const asToolViews = (message: Message): ToolCallView[] =>
  message.toolCalls.map((call, i) => ({ id: `${message.id}-${i}`, name: call.name, input: call.input, result: call.result ?? {} }));

export function PlaygroundPage() {
  const client = useClient();
  const denied = useDenied()('agents:write');
  const queryClient = useQueryClient();
  const navigate = useNavigate({ from: '/playground' });
  const { agentId, conversationId } = useSearch({ from: '/app/playground' });
  // The agent and conversation open here are kept for the tab: the navigation's Playground link (no
  // search) comes back to them instead of an empty page.
  useEffect(() => {
    if (agentId) sessionStorage.setItem(LAST_OPEN, JSON.stringify({ agentId, conversationId }));
  }, [agentId, conversationId]);
  // biome-ignore lint/correctness/useExhaustiveDependencies: once, when the page opens
  useEffect(() => {
    if (agentId || conversationId) return;
    const last = lastOpen();
    if (last) navigate({ search: last, replace: true });
  }, []);
  const [draft, setDraft] = useState('');
  const [live, setLive] = useState<(TurnState & { userText?: string; userFiles?: FileInfo[] }) | null>(null);
  const [error, setError] = useState<string | null>(null);
  // Uploaded for the next message, named by id when it is sent.
  const [attached, setAttached] = useState<FileInfo[]>([]);
  const [uploading, setUploading] = useState(0);
  // Attached plus uploading, counted when an upload starts: a drop during an upload sees the slots it took.
  const taken = useRef(0);
  const [dragging, setDragging] = useState(false);
  const streamRef = useRef<RunStream | null>(null);
  const bottom = useRef<HTMLDivElement>(null);

  const agents = useQuery({ queryKey: ['agents', 'all'], queryFn: () => client.agents.list({ limit: 100 }).toArray() });
  const conversations = useQuery({
    queryKey: ['conversations', agentId],
    enabled: !!agentId,
    queryFn: () =>
      client.http.json<{ conversations: ConversationSummary[] }>('GET', '/api/v1/conversations', { query: { agentId, limit: 50 } }),
  });
  const messages = useQuery({
    queryKey: ['messages', conversationId],
    enabled: !!conversationId,
    queryFn: async () => {
      const all: Message[] = [];
      for await (const message of client.conversations.messages(conversationId!, { limit: 100 })) {
        all.push(message);
        if (all.length >= 300) break;
      }
      return all.reverse();
    },
  });

  const finish = useCallback(
    async (turn: TurnState, conversation: string) => {
      pendingTurns.clear(sessionStorage, turn.runId);
      streamRef.current = null;
      await queryClient.invalidateQueries({ queryKey: ['messages', conversation] });
      queryClient.invalidateQueries({ queryKey: ['conversations'] });
      queryClient.invalidateQueries({ queryKey: ['run', turn.runId] });
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

  /** Uploads files as they are chosen or dropped; what the server refuses (413, the count) is said per file. */
  async function attach(files: File[]) {
    if (!canAttach || !files.length) return;
    setError(null);
    const room = Math.max(MAX_ATTACHMENTS - taken.current, 0);
    const accepted = files.slice(0, room);
    taken.current += accepted.length;
    const problems: string[] = [];
    if (files.length > room) problems.push(`a message takes at most ${MAX_ATTACHMENTS} attachments: ${files.length - room} not attached`);
    setUploading((n) => n + accepted.length);
    await Promise.all(
      accepted.map(async (file) => {
        try {
          const uploaded = await client.files.upload(file);
          queryClient.setQueryData(['file', uploaded.id], uploaded);
          setAttached((list) => [...list, uploaded]);
        } catch (err) {
          taken.current -= 1;
          problems.push(`${file.name}: ${messageOf(err)}`);
        } finally {
          setUploading((n) => n - 1);
        }
      }),
    );
    if (problems.length) setError(problems.join('; '));
  }

  const dropZone = {
    onDragOver: (e: DragEvent) => {
      if (!canAttach || !e.dataTransfer.types.includes('Files')) return;
      e.preventDefault();
      setDragging(true);
    },
    onDragLeave: (e: DragEvent) => {
      if (!e.currentTarget.contains(e.relatedTarget as Node | null)) setDragging(false);
    },
    onDrop: (e: DragEvent) => {
      e.preventDefault();
      setDragging(false);
      void attach([...e.dataTransfer.files]);
    },
  };

  async function send() {
    const text = draft.trim();
    if (!text || !agentId || uploading) return;
    const files = streaming ? [] : attached;
    let started = false;
    setDraft('');
    setError(null);
    if (streaming && conversationId) {
      // Said while the agent answers: joins the run (inject), as the next thing the model reads.
      try {
        await client.http.json('POST', apiPath`/api/v1/conversations/${conversationId}/inject`, { body: { content: text } });
        queryClient.invalidateQueries({ queryKey: ['messages', conversationId] });
      } catch (err) {
        setError(messageOf(err));
      }
      return;
    }
    try {
      const attachments = files.length ? files.map((f) => f.id) : undefined;
      const stream = client.agents.stream(agentId, { message: text, conversationId, attachments });
      streamRef.current = stream;
      const runId = await stream.runId();
      started = true;
      taken.current -= files.length;
      setAttached([]);
      const conversation = (await stream.conversationId()) ?? conversationId!;
      pendingTurns.set(sessionStorage, { runId, conversationId: conversation, agentId });
      setLive({ ...newTurn(runId), userText: text, userFiles: files });
      if (conversation !== conversationId) navigate({ search: { agentId, conversationId: conversation } });
      queryClient.invalidateQueries({ queryKey: ['messages', conversation] });
      const turn = await followTurn(stream, newTurn(runId), (t) => setLive({ ...t, userText: text, userFiles: files }));
      await finish(turn, conversation);
    } catch (err) {
      streamRef.current = null;
      // A message the server refused (no run started) keeps its text and attachments to try again.
      if (!started) {
        setDraft((d) => d || text);
        setAttached((list) => (list.length ? list : files));
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

  const shown = (messages.data ?? []).filter((m) => !(live && m.runId === live.runId && m.role === 'assistant'));
  const userShown = live && shown.some((m) => m.runId === live.runId && m.role === 'user');

  return (
    <Grid>
      <Grid.Col span={{ base: 12, sm: 4, lg: 3 }}>
        <Stack gap="xs">
          <Select
            label="Agent"
            searchable
            placeholder="Choose an agent"
            data={(agents.data ?? []).map((a) => ({ value: a.id, label: a.name }))}
            value={agentId ?? null}
            onChange={(id) => navigate({ search: { agentId: id ?? undefined, conversationId: undefined } })}
          />
          {agentId && (
            <Button variant="light" onClick={() => navigate({ search: { agentId, conversationId: undefined } })}>
              New conversation
            </Button>
          )}
          <ScrollArea.Autosize mah={{ base: 160, sm: 'calc(100vh - 260px)' } as unknown as number} type="auto">
            {(conversations.data?.conversations ?? []).map((c) => (
              <NavLink
                key={c.id}
                label={c.name ?? new Date(c.createdAt).toLocaleString()}
                description={`${c.messageCount ?? 0} messages`}
                active={c.id === conversationId}
                onClick={() => navigate({ search: { agentId, conversationId: c.id } })}
              />
            ))}
          </ScrollArea.Autosize>
        </Stack>
      </Grid.Col>
      <Grid.Col span={{ base: 12, sm: 8, lg: 9 }}>
        <Stack
          h={{ base: 'auto', sm: 'calc(100vh - 120px)' } as unknown as string}
          gap="sm"
          data-testid="chat-drop-zone"
          {...dropZone}
          style={dragging ? { outline: '2px dashed var(--mantine-color-indigo-5)', outlineOffset: 4 } : undefined}
        >
          <Title order={1} size="h3">
            Playground
          </Title>
          {!agentId && <Text c="dimmed">Choose an agent to talk to.</Text>}
          <ScrollArea style={{ flex: 1 }} type="auto" aria-live="polite">
            <Stack gap="sm" p="xs" data-testid="chat">
              {shown.map((m) => (
                <Bubble key={m.id} author={m.role}>
                  <Text style={{ whiteSpace: 'pre-wrap' }}>{m.content}</Text>
                  <Attachments ids={m.attachments} />
                  {m.role === 'assistant' && <ToolCalls calls={asToolViews(m)} />}
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
                    <ToolCalls calls={live.toolCalls} />
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
              <div ref={bottom} />
            </Stack>
          </ScrollArea>
          {error && (
            <Alert color="red" withCloseButton onClose={() => setError(null)}>
              {error}
            </Alert>
          )}
          <form
            onSubmit={(e) => {
              e.preventDefault();
              void send();
            }}
          >
            {(attached.length > 0 || uploading > 0) && (
              <Group gap={4} mb={4} data-testid="pending-attachments">
                {attached.map((f) => (
                  <Pill
                    key={f.id}
                    withRemoveButton
                    removeButtonProps={{ 'aria-label': `Remove ${f.name}` }}
                    onRemove={() => {
                      taken.current -= 1;
                      setAttached((list) => list.filter((x) => x.id !== f.id));
                      // Nothing names it yet, so it goes from the server too; one that could not be deleted
                      // harms nothing and the tenant's retention removes it.
                      client.files.delete(f.id).catch(() => {});
                    }}
                  >
                    {f.name} · {sizeOf(f.size)}
                  </Pill>
                ))}
                {uploading > 0 && (
                  <Text size="xs" c="dimmed">
                    uploading {uploading}…
                  </Text>
                )}
              </Group>
            )}
            <Group align="end" wrap="nowrap">
              <FileButton multiple onChange={(files) => void attach(files)} disabled={!canAttach}>
                {(props) => (
                  <Tooltip
                    label={
                      denied ??
                      (streaming
                        ? 'attach to the next message, once this answer ends'
                        : `attach files (or drop them on the chat): at most ${MAX_ATTACHMENTS}, 5 MiB each`)
                    }
                  >
                    <Button {...props} variant="default" px="xs" aria-label="Attach files" disabled={!canAttach}>
                      <PaperclipIcon size={18} />
                    </Button>
                  </Tooltip>
                )}
              </FileButton>
              <Textarea
                style={{ flex: 1 }}
                aria-label="Message"
                placeholder={streaming ? 'Add to the answer under way (inject)…' : 'Message (Enter sends, Shift+Enter a new line)'}
                autosize
                minRows={1}
                maxRows={6}
                value={draft}
                disabled={!agentId || !!denied}
                onChange={(e) => setDraft(e.currentTarget.value)}
                onKeyDown={(e) => {
                  if (e.key === 'Enter' && !e.shiftKey) {
                    e.preventDefault();
                    void send();
                  }
                }}
              />
              <Tooltip label={denied} disabled={!denied}>
                <Button type="submit" disabled={!agentId || !draft.trim() || !!denied || uploading > 0}>
                  {streaming ? 'Inject' : 'Send'}
                </Button>
              </Tooltip>
              {streaming && (
                <Button color="red" variant="light" onClick={stop}>
                  Stop
                </Button>
              )}
            </Group>
          </form>
        </Stack>
      </Grid.Col>
    </Grid>
  );
}

/** A tool call of the answer under way that waits for a person: decided here or in the inbox; the chat goes on once it is. */
function WaitingApproval({ approval }: { approval: ApprovalView }) {
  const client = useClient();
  const denied = useDenied()('agents:write');
  const queryClient = useQueryClient();
  const [reason, setReason] = useState('');
  const [decided, setDecided] = useState<string | null>(null);
  const [failure, setFailure] = useState<string | null>(null);
  // The navigation's badge counts it now rather than at its next poll.
  useEffect(() => {
    void queryClient.invalidateQueries({ queryKey: ['approvals'] });
  }, [queryClient]);
  const decide = async (decision: 'approve' | 'reject') => {
    try {
      await client.http.json('POST', apiPath`/api/v1/approvals/${approval.approvalId}/${decision}`, {
        body: decision === 'reject' ? { reason: reason.trim() } : {},
      });
      setDecided(decision === 'approve' ? 'approved' : 'rejected');
    } catch (err) {
      setFailure(messageOf(err));
    } finally {
      void queryClient.invalidateQueries({ queryKey: ['approvals'] });
    }
  };
  return (
    <Card withBorder p="xs" data-testid="chat-approval">
      <Stack gap={4}>
        <Text size="sm" fw={600}>
          {approval.name} waits for approval: {approval.reason}
        </Text>
        <Code block>{JSON.stringify(approval.arguments, null, 2)}</Code>
        {failure && (
          <Text c="red" size="sm">
            {failure}
          </Text>
        )}
        {decided ? (
          <Text size="sm" c="dimmed">
            {decided}
          </Text>
        ) : (
          <Group gap="xs" align="end">
            <Button size="xs" color="green" disabled={!!denied} onClick={() => void decide('approve')}>
              Approve
            </Button>
            <TextInput
              size="xs"
              aria-label="Reason to reject"
              placeholder="reason"
              value={reason}
              onChange={(e) => setReason(e.currentTarget.value)}
              maxLength={1000}
            />
            <Button size="xs" color="red" variant="light" disabled={!!denied || !reason.trim()} onClick={() => void decide('reject')}>
              Reject
            </Button>
          </Group>
        )}
      </Stack>
    </Card>
  );
}
