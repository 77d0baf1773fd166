import { createParser, type EventSourceMessage } from 'eventsource-parser';

export interface SseEvent {
  id: string | undefined;
  event: string;
  data: any;
}

/**
 * Reads an SSE response with a real parser (eventsource-parser) until the stream ends or `stopAfter`
 * says to stop (the connection is then dropped, like a client going away).
 */
export async function readSse(
  res: Response,
  options: { stopAfter?: (events: SseEvent[]) => boolean; controller?: AbortController; comments?: string[] } = {},
): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  let stop = false;
  const parser = createParser({
    onEvent(msg: EventSourceMessage) {
      // Events that came in the same chunk after the one it stopped at are not taken: a client that
      // stops there reconnects from that event's id.
      if (stop) return;
      events.push({ id: msg.id, event: msg.event ?? 'message', data: JSON.parse(msg.data) });
      if (options.stopAfter?.(events)) stop = true;
    },
    onComment(comment) {
      options.comments?.push(comment);
    },
  });
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  try {
    while (!stop) {
      const { done, value } = await reader.read();
      if (done) break;
      parser.feed(decoder.decode(value, { stream: true }));
    }
  } finally {
    if (stop) {
      options.controller?.abort();
      await reader.cancel().catch(() => {});
    }
  }
  return events;
}
