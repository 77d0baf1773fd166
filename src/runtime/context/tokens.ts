import type { LanguageModelV3Message, LanguageModelV3Prompt } from '@ai-sdk/provider';

/**
 * Token counts for fitting a prompt into a model's window, estimated: a character count over four
 * (about what the GPT and Claude tokenizers give for English prose and JSON), plus a few tokens of
 * framing per message. No tokenizer is loaded, so one estimate serves every provider; the output
 * reserve and the window's margin absorb the error. builtin/echo counts words, which this
 * overestimates (a word is about 1.5 estimated tokens): its prompts fit with room to spare.
 */

const CHARS_PER_TOKEN = 4;
/** Role markers and separators each message costs whatever its content. */
const TOKENS_PER_MESSAGE = 4;

export function estimateTokens(text: string): number {
  return Math.ceil(text.length / CHARS_PER_TOKEN);
}

function messageTokens(m: LanguageModelV3Message): number {
  if (typeof m.content === 'string') return TOKENS_PER_MESSAGE + estimateTokens(m.content);
  let tokens = TOKENS_PER_MESSAGE;
  for (const part of m.content) {
    switch (part.type) {
      case 'text':
      case 'reasoning':
        tokens += estimateTokens(part.text);
        break;
      case 'tool-call':
        tokens += estimateTokens(part.toolName) + estimateTokens(JSON.stringify(part.input ?? {}));
        break;
      case 'tool-result':
        tokens += estimateTokens(part.toolName) + estimateTokens(JSON.stringify(part.output));
        break;
      default:
        // Files: their size says little of their tokens; a flat estimate of one image.
        tokens += 1000;
    }
  }
  return tokens;
}

export function promptTokens(prompt: LanguageModelV3Prompt): number {
  let tokens = 0;
  for (const m of prompt) tokens += messageTokens(m);
  return tokens;
}
