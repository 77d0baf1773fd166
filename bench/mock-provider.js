// A local OpenAI-compatible provider for the `execute-openai-compatible` scenario: aimock
// (@copilotkit/aimock) answering every chat completion that mentions the scenario's order with the
// canned streamed answer of bench/fixtures/openai-compatible.json, in OpenAI's SSE chunks.
// bench/run.js starts it as a child process, so its CPU is not the harness's nor the server's.
//
//   PORT=4010 node bench/mock-provider.js     # then OPENAI_COMPATIBLE_BASE_URL=http://127.0.0.1:4010/v1
import path from 'node:path';
import { LLMock } from '@copilotkit/aimock';

const port = Number(process.env.PORT ?? 4010);
const host = process.env.HOST ?? '127.0.0.1';
// No delay between chunks: the figure is what Agentry adds to a provider that answers at once.
const mock = new LLMock({ port, host, latency: 0, logLevel: 'warn', journalMaxEntries: 100 });
mock.loadFixtureFile(path.join(import.meta.dirname, 'fixtures', 'openai-compatible.json'));
await mock.start();
process.stdout.write(`mock provider listening on ${mock.url}\n`);

const stop = () => mock.stop().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
