// The machine's own limit: a bare Fastify server answering one fixed JSON body, no logger, no
// hooks, no database. `bench/run.js` starts it as a child process next to the real server and
// divides every scenario's requests/s by this one's, measured in the same run.
//
//   PORT=3000 node bench/baseline.js
import Fastify from 'fastify';

const BODY = { status: 'ok', service: 'baseline', items: [1, 2, 3] };

const app = Fastify({ logger: false });
app.get('/', async () => BODY);

const port = Number(process.env.PORT ?? 3000);
const host = process.env.HOST ?? '127.0.0.1';
await app.listen({ port, host });
process.stdout.write(`baseline listening on http://${host}:${port}\n`);

const stop = () => app.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
