// The machine's own limit: a bare Fastify server answering one fixed JSON body, no logger, no
// hooks, no database (and for the streaming scenario a fixed-form SSE answer, POST /stream).
// `bench/run.js` starts it as a child process next to the real server and divides every scenario's
// requests/s by this one's, measured in the same run.
//
//   PORT=3000 node bench/baseline.js
//
// BURN_US=100 makes each request busy-wait that many microseconds first (default 0; bench/run.js
// never sets it). Experiments only: it shows what a slower server does to the cost of the socket
// writes themselves (docs/benchmarks.md, "where the time goes").
import Fastify from 'fastify';

const BODY = { status: 'ok', service: 'baseline', items: [1, 2, 3] };
const BURN_NS = BigInt(Math.round(Number(process.env.BURN_US ?? 0) * 1000));

const app = Fastify({ logger: false });

// The same with a stream: POST /stream answers the message back as Server-Sent Events in the form
// Agentry streams an echo run (a token per word, then done), all in one write. The machine's own
// limit for the sse-stream scenario, driven by the same client (bench/scenarios.js).
app.post('/stream', (req, reply) => {
  const words = String(/** @type {{ message?: string } | undefined} */ (req.body)?.message ?? '').split(/(?<=\s)/);
  const event = (id, name, data) => `id: ${id}\nevent: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
  let out = '';
  for (const [i, text] of words.entries()) out += event(i + 1, 'token', { text });
  out += event(words.length + 1, 'done', {
    conversationId: 'bare',
    runId: 'bare',
    cost: 0,
    tokenUsage: { inputTokens: words.length, outputTokens: words.length },
  });
  reply.hijack();
  reply.raw.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
  });
  reply.raw.end(out);
});
app.get(
  '/',
  BURN_NS > 0n
    ? async () => {
        const until = process.hrtime.bigint() + BURN_NS;
        while (process.hrtime.bigint() < until);
        return BODY;
      }
    : async () => BODY,
);

const port = Number(process.env.PORT ?? 3000);
const host = process.env.HOST ?? '127.0.0.1';
await app.listen({ port, host });
process.stdout.write(`baseline listening on http://${host}:${port}\n`);

const stop = () => app.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
