// MODEL, not part of `npm run bench`: a bare Fastify server that streams as Agentry's sse-stream
// answer does (a token per word of the message, then done), spending given CPU time per stream, to see
// what the order of the work alone does to the first token at 50 clients, without a database, a
// collector or the platform's own costs. docs/benchmarks-history.md (ninth round) reads it.
//
//   BURN_FIRST_US=230 BURN_REST_US=100 SCHEDULE=background BATCH=8 PORT=3999 node bench/experiments/sse-scheduling-model.mjs
//   node bench/experiments/sse-lean-client.mjs http://127.0.0.1:3999 /stream
//
// Per stream it busy-waits BURN_FIRST_US before writing the head and the first token, and
// BURN_REST_US before writing the rest and done:
//   SCHEDULE=each        the rest of every stream on its own setImmediate: all streams read in one turn
//                        of the event loop run their rest in the next, together (what a server does
//                        that lets each request's work run to its end as it comes);
//   SCHEDULE=background  the rests wait in one queue, BATCH of them per turn, so the requests read in
//                        between go first (the first token before any other stream's rest).
import Fastify from 'fastify';

const burnFirst = BigInt(Math.round(Number(process.env.BURN_FIRST_US ?? 0) * 1000));
const burnRest = BigInt(Math.round(Number(process.env.BURN_REST_US ?? 0) * 1000));
const schedule = process.env.SCHEDULE ?? 'each';
const batch = Number(process.env.BATCH ?? 1);
if (!['each', 'background'].includes(schedule)) throw new Error(`SCHEDULE is each or background, not ${schedule}`);

const burn = (ns) => {
  if (!ns) return;
  const until = process.hrtime.bigint() + ns;
  while (process.hrtime.bigint() < until);
};
const event = (id, name, data) => `id: ${id}\nevent: ${name}\ndata: ${JSON.stringify(data)}\n\n`;

const rests = [];
let draining = false;
const drain = () => {
  for (let i = 0; i < batch && rests.length; i++) rests.shift()();
  if (rests.length) setImmediate(drain);
  else draining = false;
};

const app = Fastify({ logger: false });
// Also at Agentry's path, so that bench/scenarios.js's client can be pointed at it.
app.post('/stream', answer);
app.post('/api/v1/agents/:id/stream', answer);

function answer(req, reply) {
  burn(burnFirst);
  const words = String(req.body?.message ?? '').split(/(?<=\s)/);
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform' });
  res.write(event(1, 'token', { text: words[0] }));
  const rest = () => {
    burn(burnRest);
    let out = '';
    for (const [i, text] of words.slice(1).entries()) out += event(i + 2, 'token', { text });
    res.end(out + event(words.length + 1, 'done', { runId: 'model' }));
  };
  if (schedule === 'each') return void setImmediate(rest);
  rests.push(rest);
  if (!draining) {
    draining = true;
    setImmediate(drain);
  }
}

const port = Number(process.env.PORT ?? 3999);
await app.listen({ port, host: '127.0.0.1' });
process.stdout.write(
  `sse scheduling model (${schedule}${schedule === 'background' ? `, ${batch} per turn` : ''}) on http://127.0.0.1:${port}\n`,
);
