// CROSS-CHECK, not part of `npm run bench`: the sse-stream scenario's measurement with a much lighter
// client, to see how much of a first-token figure is the client's own queueing. bench/scenarios.js
// uses Node's http client and eventsource-parser; this one writes a prebuilt request on raw
// keep-alive sockets and scans the answer's bytes for the first `event: token` and the end of the
// response (chunked or Content-Length). ms from writing the request to the arrival of those bytes.
//
//   node bench/experiments/sse-lean-client.mjs <url> [path]
//     CONNECTIONS (50), SECONDS (8, after 2 s of warm-up), API_KEY (sent as a bearer token if set)
//
// e.g. against the bare server: PORT=3997 node bench/baseline.js & node bench/experiments/sse-lean-client.mjs http://127.0.0.1:3997 /stream
// (docs/benchmarks-history.md, ninth round, compares the two clients.)
import net from 'node:net';
import { percentiles } from '../stats.js';

const url = new URL(process.argv[2] ?? 'http://127.0.0.1:3997');
const requestPath = process.argv[3] ?? '/stream';
const connections = Number(process.env.CONNECTIONS ?? 50);
const seconds = Number(process.env.SECONDS ?? 8);
const WARMUP_SECONDS = 2;
const body = JSON.stringify({ message: 'Hello, where is my order 4711? It was due yesterday.' });
const request = Buffer.from(
  `POST ${requestPath} HTTP/1.1\r\nhost: ${url.host}\r\n` +
    (process.env.API_KEY ? `authorization: Bearer ${process.env.API_KEY}\r\n` : '') +
    `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
);
const TOKEN = '\nevent: token\n';

const firstToken = [];
const done = [];
let windowStart = Infinity;
let errors = 0;
const stopAt = Date.now() + (WARMUP_SECONDS + seconds) * 1000;

/** One connection opening streams back to back until stopAt. */
function client() {
  return new Promise((resolve) => {
    const socket = net.connect(Number(url.port), url.hostname);
    socket.setNoDelay(true);
    socket.setEncoding('latin1');
    let sentAt = 0;
    let startedAt = 0;
    let first = null;
    let buffer = '';
    let head = true;
    /** Body bytes still expected: Content-Length, or the current chunk's (with its CRLF) when chunked. */
    let left = 0;
    let chunked = false;
    /** The body seen so far (its tail), scanned for the first token. */
    let seen = '';

    const send = () => {
      if (Date.now() >= stopAt) {
        socket.end();
        resolve();
        return;
      }
      sentAt = performance.now();
      startedAt = Date.now();
      first = null;
      buffer = '';
      head = true;
      seen = '';
      socket.write(request);
    };
    const take = (text, at) => {
      seen += text;
      if (first === null && seen.includes(TOKEN)) first = at;
      if (seen.length > 4096) seen = seen.slice(-TOKEN.length);
    };
    const finish = (at) => {
      if (first === null) errors++;
      else if (startedAt >= windowStart) {
        firstToken.push(first);
        done.push(at);
      }
      send();
    };

    socket.on('connect', send);
    socket.on('data', (data) => {
      const at = performance.now() - sentAt;
      buffer += data;
      if (head) {
        const end = buffer.indexOf('\r\n\r\n');
        if (end < 0) return;
        const headers = buffer.slice(0, end).toLowerCase();
        if (!headers.startsWith('http/1.1 200')) {
          console.error(`answered: ${buffer.slice(0, 300)}`);
          process.exit(1);
        }
        chunked = headers.includes('transfer-encoding: chunked');
        left = chunked ? 0 : Number(/content-length: (\d+)/.exec(headers)?.[1] ?? NaN);
        buffer = buffer.slice(end + 4);
        head = false;
      }
      if (!chunked) {
        take(buffer, at);
        left -= buffer.length;
        buffer = '';
        if (left <= 0) finish(at);
        return;
      }
      for (;;) {
        if (left === 0) {
          const line = buffer.indexOf('\r\n');
          if (line < 0) return;
          const size = parseInt(buffer.slice(0, line), 16);
          if (size === 0) {
            if (buffer.length < line + 4) return;
            buffer = '';
            finish(at);
            return;
          }
          buffer = buffer.slice(line + 2);
          left = size + 2;
        }
        if (!buffer.length) return;
        const part = buffer.slice(0, left);
        buffer = buffer.slice(part.length);
        left -= part.length;
        // The chunk's closing CRLF is not body.
        take(left >= 2 ? part : part.slice(0, part.length - (2 - left)), at);
      }
    });
    socket.on('error', (err) => {
      errors++;
      console.error(err.message);
      resolve();
    });
  });
}

const all = Promise.all(Array.from({ length: connections }, client));
await new Promise((r) => setTimeout(r, WARMUP_SECONDS * 1000));
windowStart = Date.now();
await all;
const measured = (Date.now() - windowStart) / 1000;
const first = percentiles(firstToken);
const end = percentiles(done);
console.log(
  `${firstToken.length} streams (${Math.round(firstToken.length / measured)}/s); first token p50 ${first.p50} ms, ` +
    `p99 ${first.p99} ms, max ${first.max} ms; done p50 ${end.p50} ms, p99 ${end.p99} ms; errors ${errors}`,
);
