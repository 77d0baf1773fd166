import type { Message } from '@agentry/client';
import { Accordion, Badge, Code, Group, Text } from '@mantine/core';
import { CodeCall, isCodeCall } from '../../code-call';
import type { ToolCallView } from '../../lib/turn';

/** A stored answer's tool calls, as the cards show them. */
export const asToolViews = (message: Message): ToolCallView[] =>
  message.toolCalls.map((call, i) => ({ id: `${message.id}-${i}`, name: call.name, input: call.input, result: call.result ?? {} }));

/** Tool calls as collapsible cards: arguments and result, or a code call's code, output and files. */
export function ToolCalls({ calls }: { calls: ToolCallView[] }) {
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
