import { randomUUID } from 'node:crypto';
import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3Content,
  LanguageModelV3FinishReason,
  LanguageModelV3Prompt,
  LanguageModelV3StreamPart,
  LanguageModelV3Usage,
} from '@ai-sdk/provider';

/**
 * `builtin/echo`: an offline, deterministic stand-in for a language model. It is NOT a language
 * model: it repeats the user's last message word by word, and obeys directives on lines of their own:
 *
 *   /tool <name> <json-input>   call that tool (several lines: several calls), then answer with the result
 *   /delay <ms>                 wait that long before each streamed token (at most 10000)
 *   /fail <message>             make the model call fail with that message
 *   /system                     answer with the system prompt it was given (what a run's prompt holds, for tests)
 *
 * It exists for development, demos, tests and benchmarks; it goes through the same AI SDK interface,
 * tool loop, streaming and accounting as every real model. Token counts are words (whitespace-split).
 */

const ECHO_MAX_DELAY_MS = 10_000;

interface Directives {
  text: string;
  tools: { name: string; input: string }[];
  delayMs: number;
  fail?: string;
  revealSystem?: boolean;
}

function parseDirectives(message: string): Directives {
  const out: Directives = { text: '', tools: [], delayMs: 0 };
  // A directive is a line starting with '/': without any '/', the message is all text.
  if (!message.includes('/')) {
    out.text = message.trim();
    return out;
  }
  const textLines: string[] = [];
  for (const line of message.split('\n')) {
    const m = /^\/(tool|delay|fail|system)(?:\s+(.*))?$/.exec(line.trim());
    if (!m) {
      textLines.push(line);
      continue;
    }
    const arg = (m[2] ?? '').trim();
    if (m[1] === 'tool') {
      const space = arg.search(/\s/);
      const name = space < 0 ? arg : arg.slice(0, space);
      const input = space < 0 ? '{}' : arg.slice(space + 1).trim();
      if (name) out.tools.push({ name, input });
    } else if (m[1] === 'delay') {
      const ms = Number.parseInt(arg, 10);
      if (Number.isFinite(ms) && ms > 0) out.delayMs = Math.min(ms, ECHO_MAX_DELAY_MS);
    } else if (m[1] === 'system') {
      out.revealSystem = true;
    } else {
      out.fail = arg || 'builtin/echo was told to fail';
    }
  }
  out.text = textLines.join('\n').trim();
  return out;
}

/** JavaScript's `\s`: white space and line terminators. */
function isSpace(c: number): boolean {
  return (
    c === 32 ||
    (c >= 9 && c <= 13) ||
    (c > 127 &&
      (c === 0xa0 ||
        c === 0x1680 ||
        (c >= 0x2000 && c <= 0x200a) ||
        c === 0x2028 ||
        c === 0x2029 ||
        c === 0x202f ||
        c === 0x205f ||
        c === 0x3000 ||
        c === 0xfeff))
  );
}

/** Whitespace-separated words, counted without splitting: every run's prompt is counted. */
function words(text: string): number {
  let n = 0;
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const space = isSpace(text.charCodeAt(i));
    if (!space && !inWord) n++;
    inWord = !space;
  }
  return n;
}

/** The prompt's words: its messages' texts and tool results, as if joined with spaces. */
function promptWords(prompt: LanguageModelV3Prompt): number {
  let n = 0;
  for (const m of prompt) {
    if (typeof m.content === 'string') n += words(m.content);
    else for (const p of m.content) n += p.type === 'text' ? words(p.text) : p.type === 'tool-result' ? words(JSON.stringify(p.output)) : 0;
  }
  return n;
}

function lastUserText(prompt: LanguageModelV3Prompt): string {
  for (let i = prompt.length - 1; i >= 0; i--) {
    const m = prompt[i];
    if (m.role === 'user') return m.content.map((p) => (p.type === 'text' ? p.text : '')).join('');
  }
  return '';
}

/** The system prompt as the model was given it (its system messages, joined). */
function systemText(prompt: LanguageModelV3Prompt): string {
  return prompt
    .flatMap((m) => (m.role === 'system' ? [m.content] : []))
    .join('\n\n')
    .trim();
}

interface Plan {
  content: LanguageModelV3Content[];
  finishReason: LanguageModelV3FinishReason;
  usage: LanguageModelV3Usage;
  delayMs: number;
  fail?: string;
}

/** Decides the whole answer up front; streaming only paces it out. */
function plan(options: LanguageModelV3CallOptions): Plan {
  const prompt = options.prompt;
  const directives = parseDirectives(lastUserText(prompt));
  const last = prompt[prompt.length - 1];
  const inputTokens = promptWords(prompt);
  const usage = (output: number): LanguageModelV3Usage => ({
    inputTokens: { total: inputTokens, noCache: inputTokens, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: output, text: output, reasoning: 0 },
  });
  const base = { delayMs: directives.delayMs, fail: directives.fail };

  const available = new Set((options.tools ?? []).map((t) => t.name));
  // After tool results came back: answer with them.
  if (last?.role === 'tool') {
    const text = last.content
      .map((p) =>
        p.type === 'tool-result' ? `${p.toolName} returned ${JSON.stringify('value' in p.output ? p.output.value : p.output)}` : '',
      )
      .filter(Boolean)
      .join('\n');
    return {
      ...base,
      fail: undefined,
      content: [{ type: 'text', text }],
      finishReason: { unified: 'stop', raw: 'stop' },
      usage: usage(words(text)),
    };
  }
  const calls = directives.tools.filter(() => options.toolChoice?.type !== 'none');
  if (calls.length && available.size) {
    const content: LanguageModelV3Content[] = calls.map((c, i) => ({
      type: 'tool-call',
      // Unique across runs and steps, as tool call ids must be.
      toolCallId: `echo-${randomUUID()}-${i}`,
      toolName: c.name,
      input: c.input,
    }));
    return { ...base, content, finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage: usage(calls.length) };
  }
  let text = directives.revealSystem
    ? systemText(prompt)
    : directives.text || (directives.tools.length ? 'no tools are available to this run' : '');
  let finish: LanguageModelV3FinishReason = { unified: 'stop', raw: 'stop' };
  const cap = options.maxOutputTokens;
  if (cap !== undefined && words(text) > cap) {
    const tokens = text.split(/(\s+)/).filter(Boolean);
    let kept = 0;
    const out: string[] = [];
    for (const t of tokens) {
      if (/\S/.test(t) && kept++ >= cap) break;
      out.push(t);
    }
    text = out.join('').trimEnd();
    finish = { unified: 'length', raw: 'length' };
  }
  return { ...base, content: text ? [{ type: 'text', text }] : [], finishReason: finish, usage: usage(words(text)) };
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export class EchoLanguageModel implements LanguageModelV3 {
  readonly specificationVersion = 'v3' as const;
  readonly provider = 'builtin';
  readonly modelId = 'echo';
  readonly supportedUrls = {};

  async doGenerate(options: LanguageModelV3CallOptions) {
    const p = plan(options);
    if (p.fail) throw new Error(p.fail);
    return { content: p.content, finishReason: p.finishReason, usage: p.usage, warnings: [] };
  }

  async doStream(options: LanguageModelV3CallOptions) {
    const p = plan(options);
    const signal = options.abortSignal;
    const stream = new ReadableStream<LanguageModelV3StreamPart>({
      async start(controller) {
        try {
          controller.enqueue({ type: 'stream-start', warnings: [] });
          if (p.fail) throw new Error(p.fail);
          for (const part of p.content) {
            if (part.type === 'text') {
              controller.enqueue({ type: 'text-start', id: 'echo-text' });
              // Word by word, each with its following whitespace, so the deltas rebuild the text exactly.
              for (const token of part.text.match(/\S+\s*/g) ?? []) {
                if (p.delayMs) await sleep(p.delayMs, signal);
                else if (signal?.aborted) throw signal.reason;
                controller.enqueue({ type: 'text-delta', id: 'echo-text', delta: token });
              }
              controller.enqueue({ type: 'text-end', id: 'echo-text' });
            } else {
              if (p.delayMs) await sleep(p.delayMs, signal);
              controller.enqueue(part as LanguageModelV3StreamPart);
            }
          }
          controller.enqueue({ type: 'finish', usage: p.usage, finishReason: p.finishReason });
          controller.close();
        } catch (err) {
          controller.enqueue({ type: 'error', error: err });
          controller.close();
        }
      },
    });
    return { stream };
  }
}
