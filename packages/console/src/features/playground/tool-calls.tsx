import type { Message } from '@agentry/client';
import { Accordion, Badge, Code, Group, Text } from '@mantine/core';
import { CodeCall, isCodeCall } from '../../code-call';
import type { ToolCallView } from '../../lib/turn';

/** A stored answer's tool calls, as the cards show them: by the call's id, as streamed, so a card keeps its element. */
export const asToolViews = (message: Message): ToolCallView[] =>
  message.toolCalls.map((call, i) => ({
    id: call.id ?? `${message.id}-${i}`,
    name: call.name,
    input: call.input,
    result: call.result ?? {},
  }));

/**
 * Which cards are open, over the whole conversation: a card is `<turn>:<n>` (its run, its place), so one
 * opened while the answer streams stays open when the stored answer takes the streamed one's place.
 */
export interface OpenCards {
  turn: string;
  open: string[];
  setOpen: (open: string[]) => void;
}

/** Tool calls as collapsible cards: arguments and result, or a code call's code, output and files. */
export function ToolCalls({ calls, cards }: { calls: ToolCallView[]; cards: OpenCards }) {
  if (!calls.length) return null;
  return (
    <Accordion variant="separated" multiple chevronPosition="left" value={cards.open} onChange={cards.setOpen}>
      {calls.map((call, i) => (
        <Accordion.Item key={call.id} value={`${cards.turn}:${i}`} data-testid="tool-call">
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
