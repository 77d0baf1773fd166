import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { ProblemError } from './errors.js';

/**
 * The web console (packages/console, docs/console.md): its built files served at `/`, beside the API
 * (/api, /v1, /docs, /a2a, /.well-known stay what they are). The files are read once at start into a
 * map keyed by URL path, so a request never names a file on disk: no traversal, no symlink surprise.
 */

export interface ConsoleOptions {
  /** The built console (packages/console/dist); null or absent: the console is off. */
  dir: string | null;
  /** PUBLIC_BASE_URL: its path (a reverse proxy's prefix) becomes the page's `<base href>`. */
  publicBaseUrl: string;
}

/**
 * The console's own top-level routes (its router, packages/console/src/router.tsx): only these paths
 * answer index.html (the SPA fallback); anything else unknown stays a problem+json 404.
 */
const CONSOLE_SECTIONS = [
  'sign-in',
  'agents',
  'playground',
  'runs',
  'tasks',
  'approvals',
  'knowledge',
  'identity',
  'usage',
  'skills',
  'memory',
  'connectors',
  'settings',
] as const;

/**
 * No inline script and nothing from elsewhere. Styles allow 'unsafe-inline' because Mantine writes its
 * theme's CSS variables into a <style> element and sets style attributes at run time; a style cannot
 * run script, and script-src stays 'self' only.
 */
const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const IMMUTABLE = 'public, max-age=31536000, immutable';
const MAX_FILES = 2000;
const MAX_TOTAL_BYTES = 64 * 1024 * 1024;

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.ico': 'image/x-icon',
  '.webp': 'image/webp',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
};

interface StaticFile {
  body: Buffer;
  type: string;
  etag: string;
  cacheControl: string;
}

const etagOf = (body: Buffer) => `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;

/** Every regular file under `dir` (no symlinks followed), keyed by its URL path (`/assets/x.js`). */
function readTree(dir: string): Map<string, StaticFile> {
  const files = new Map<string, StaticFile>();
  let total = 0;
  const walk = (folder: string, urlPrefix: string) => {
    for (const entry of fs.readdirSync(folder, { withFileTypes: true })) {
      const full = path.join(folder, entry.name);
      const url = `${urlPrefix}/${entry.name}`;
      if (entry.isDirectory()) walk(full, url);
      else if (entry.isFile()) {
        const body = fs.readFileSync(full);
        total += body.length;
        if (files.size >= MAX_FILES || total > MAX_TOTAL_BYTES) throw new Error(`the console in ${dir} is larger than expected`);
        // Vite names what it writes under assets/ by content hash: such a name never changes meaning.
        const cacheControl = urlPrefix.startsWith('/assets') ? IMMUTABLE : 'no-cache';
        files.set(url, {
          body,
          type: TYPES[path.extname(entry.name).toLowerCase()] ?? 'application/octet-stream',
          etag: etagOf(body),
          cacheControl,
        });
      }
    }
  };
  walk(dir, '');
  return files;
}

const escapeAttribute = (value: string) => value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** index.html with `<base href>` set to PUBLIC_BASE_URL's path, so relative asset URLs and the router work under a prefix. */
function withBase(html: string, publicBaseUrl: string): string {
  const basePath = `${new URL(publicBaseUrl).pathname.replace(/\/+$/, '')}/`;
  const tag = `<base href="${escapeAttribute(basePath)}">`;
  return html.includes('<head>') ? html.replace('<head>', `<head>\n    ${tag}`) : `${tag}${html}`;
}

function send(reply: FastifyReply, file: StaticFile, ifNoneMatch: string | undefined) {
  reply
    .header('content-security-policy', CONSOLE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('x-frame-options', 'DENY')
    .header('cache-control', file.cacheControl)
    .header('etag', file.etag);
  if (ifNoneMatch?.split(',').some((tag) => tag.trim() === file.etag)) return reply.code(304).send();
  return reply.type(file.type).send(file.body);
}

export const consolePlugin: FastifyPluginAsync<ConsoleOptions> = async (app, { dir, publicBaseUrl }) => {
  if (!dir || !fs.existsSync(path.join(dir, 'index.html'))) {
    app.log.info({ dir }, 'web console disabled: no built console (npm run build -w @agentry/console builds it)');
    return;
  }
  const files = readTree(dir);
  const indexSource = files.get('/index.html')!;
  const indexBody = Buffer.from(withBase(indexSource.body.toString('utf8'), publicBaseUrl));
  const index: StaticFile = { body: indexBody, type: TYPES['.html'], etag: etagOf(indexBody), cacheControl: 'no-cache' };
  files.delete('/index.html');

  const route = { config: { public: true }, schema: { hide: true } } as const;
  const sendIndex = (ifNoneMatch: string | undefined, reply: FastifyReply) => send(reply, index, ifNoneMatch);

  app.get('/', route, (request, reply) => sendIndex(request.headers['if-none-match'], reply));
  for (const section of CONSOLE_SECTIONS) {
    app.get(`/${section}`, route, (request, reply) => sendIndex(request.headers['if-none-match'], reply));
    app.get(`/${section}/*`, route, (request, reply) => sendIndex(request.headers['if-none-match'], reply));
  }
  // One route for the hashed assets (looked up in the map, never on disk), one per other file at the top.
  app.get('/assets/*', route, (request, reply) => {
    const file = files.get(`/assets/${(request.params as { '*': string })['*']}`);
    // Not the not-found handler: it would call this a 405 (HEAD matches the wildcard).
    if (!file) throw new ProblemError(404, 'route_not_found', `no route for ${request.method} ${request.url.split('?')[0]}`);
    return send(reply, file, request.headers['if-none-match']);
  });
  for (const [url, file] of files) {
    if (!url.startsWith('/assets/') && !url.slice(1).includes('/')) {
      app.get(url, route, (request, reply) => send(reply, file, request.headers['if-none-match']));
    }
  }
  app.log.info({ dir, files: files.size + 1 }, 'web console served at /');
};
