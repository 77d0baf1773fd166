/**
 * The documentation's commands, run as written: every ```sh block of README.md and docs/*.md, in order,
 * in one shell (variables set by one block are used by the next, as in a user's terminal), against a
 * real server started by the README's own `npm start` block, on a fresh DATA_DIR (and a fresh
 * PostgreSQL database in the postgres project).
 *
 * Conventions the Markdown follows (and this test enforces):
 * - `<!-- not-run: reason -->` right before a block skips it (installs, provider accounts); keep these few.
 * - `<!-- server -->` right before a block marks the command that starts the server: it runs in the
 *   background (output to a log), and the next block waits until /healthz answers.
 * - A comment line right after a command that starts with `{`, `[`, `event:` or a 3-digit status is
 *   output the command must print, in order; `...` stands for anything, whitespace is free, and a comment
 *   line indented by two or more spaces continues the one above.
 * - Every command must exit 0, and every HTTP request it makes must answer below 400 unless its
 *   expected output shows that status (`"status":409`), or the command is a loop (`until`, `while`) polling.
 * The only rewrites: `npx agentry` runs dist/cli.js (what npx runs in the checkout), and the ports: the
 * server listens on a free port instead of 8080 (PORT is set), the demo MCP server on a free port
 * instead of 3001 (either may be taken on the machine running the tests). The commands run in a
 * temporary folder shaped like the checkout, so the files they write (pricing/) stay out of it.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/app.js';
import { freePort, NPX_AGENTRY, ROOT } from '../helpers/process.js';

interface Command {
  file: string;
  line: number;
  text: string;
  expect: string[];
}
interface Block {
  file: string;
  line: number;
  kind: 'run' | 'server' | 'skip';
  reason?: string;
  commands: Command[];
}

const EXPECT_START = /^(\{|\[|event:|\d{3}$)/;

/** The shell blocks of one Markdown file, each split into commands with the output they should print. */
function shellBlocks(file: string, markdown: string): Block[] {
  const lines = markdown.split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^```(sh|bash|shell)\s*$/.test(lines[i])) continue;
    let j = i - 1;
    while (j >= 0 && lines[j].trim() === '') j--;
    const marker = /^<!--\s*(not-run|server)\s*:?\s*(.*?)\s*-->$/.exec(lines[j]?.trim() ?? '');
    const start = i + 1;
    let end = start;
    while (end < lines.length && !/^```\s*$/.test(lines[end])) end++;
    const kind = marker?.[1] === 'not-run' ? 'skip' : marker?.[1] === 'server' ? 'server' : 'run';
    blocks.push({ file, line: i + 1, kind, reason: marker?.[2], commands: commands(file, lines.slice(start, end), start + 1) });
    i = end;
  }
  return blocks;
}

function commands(file: string, lines: string[], firstLine: number): Command[] {
  const out: Command[] = [];
  let last: Command | null = null;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const trimmed = line.trim();
    if (trimmed === '') {
      last = null;
      continue;
    }
    if (trimmed.startsWith('#')) {
      const text = trimmed.slice(1);
      if (last && EXPECT_START.test(text.trim())) last.expect.push(text.trim());
      else if (last?.expect.length && /^\s{2,}\S/.test(text)) last.expect[last.expect.length - 1] += ` ${text.trim()}`;
      else last = null;
      continue;
    }
    const text = [line];
    while (text[text.length - 1].endsWith('\\') && i + 1 < lines.length) text.push(lines[++i]);
    const heredoc = /<<-?\s*'?"?(\w+)'?"?/.exec(text.join('\n'));
    if (heredoc) while (i + 1 < lines.length && lines[++i].trim() !== heredoc[1]) text.push(lines[i]);
    if (heredoc) text.push(heredoc[1]);
    last = { file, line: firstLine + i - (text.length - 1), text: text.join('\n'), expect: [] };
    out.push(last);
  }
  return out;
}

/**
 * An expected-output line as a regular expression: `...` is anything; whitespace is optional, also
 * around JSON punctuation (so a compact line matches pretty-printed output).
 */
function expectation(text: string): RegExp {
  const literal = (part: string) =>
    [...part.trim()]
      .map((c) => (/\s/.test(c) ? '\\s*' : /[{}[\],:]/.test(c) ? `\\s*\\${c}\\s*` : c.replace(/[.*+?^$()|\\]/g, '\\$&')))
      .join('');
  return new RegExp(text.split('...').map(literal).join('[\\s\\S]*?'));
}

/** Longer than the walk-through needs (about a minute, most of it waiting for a cron minute). */
const SHELL_DEADLINE_MS = 200_000;

const DOCS = [
  'README.md',
  ...fs
    .readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
];

let database: TestDatabase;
let workdir: string;
let port: number;
let mcpPort: number;

beforeAll(async () => {
  if (!fs.existsSync(path.join(ROOT, 'dist/main.js'))) throw new Error('run `npm run build` first: this test starts dist/main.js');
  database = await createTestDatabase();
  // A folder shaped like the checkout (the commands write files such as pricing/SKILL.md into it).
  workdir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentry-docs-'));
  for (const entry of ['dist', 'node_modules', 'scripts']) fs.symlinkSync(path.join(ROOT, entry), path.join(workdir, entry));
  fs.copyFileSync(path.join(ROOT, 'package.json'), path.join(workdir, 'package.json'));
  port = await freePort();
  mcpPort = await freePort();
});
afterAll(async () => {
  await database?.drop();
  if (workdir) fs.rmSync(workdir, { recursive: true, force: true });
});

interface Outcome {
  command: Command;
  code: number;
  output: string;
  statuses: number[];
}

/** Runs every block in one bash process; returns each command's exit code, output and HTTP statuses. */
async function runAll(blocks: Block[]): Promise<{ outcomes: Outcome[]; serverLog: string; raw: string }> {
  const ports = (s: string) => s.replaceAll('127.0.0.1:8080', `127.0.0.1:${port}`).replace(/\b3001\b/g, String(mcpPort));
  const serverLog = path.join(workdir, 'server.log');
  const all: Command[] = [];
  const script = [
    'exec 2>&1', // one stream: a command's errors and HTTP statuses stay in its own section
    'set -o pipefail',
    // Every HTTP status curl receives goes to stderr (a -w in the command itself takes precedence).
    `curl() { command curl -w '%{stderr}\\n@@HTTP %{http_code}\\n' "$@"; }`,
    // `npx agentry` runs the checkout's bin, dist/cli.js (in this copy npx would look the name up in the
    // registry instead).
    NPX_AGENTRY,
  ];
  for (const block of blocks) {
    if (block.kind === 'skip') continue;
    if (block.kind === 'server') {
      script.push(`(\n${block.commands.map((c) => ports(c.text)).join('\n')}\n) > ${serverLog} 2>&1 &`);
      // The commands below need it: a server that does not come up ends the shell (its log says why).
      script.push(
        `for i in $(seq 300); do command curl -sf -o /dev/null http://127.0.0.1:${port}/healthz && break; sleep 0.1; done`,
        `command curl -sf -o /dev/null http://127.0.0.1:${port}/healthz || { echo "the server did not answer on port ${port}"; exit 1; }`,
      );
      continue;
    }
    for (const command of block.commands) {
      const n = all.push({ ...command, expect: command.expect.map(ports) }) - 1;
      script.push(`printf '\\n@@BEGIN ${n}\\n'`, ports(command.text), `printf '\\n@@END ${n} %d\\n' $?`);
    }
  }
  const child = spawn('bash', ['-c', script.join('\n')], {
    cwd: workdir,
    detached: true,
    env: { ...process.env, ...database.env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let raw = '';
  child.stdout!.on('data', (d) => (raw += d));
  child.stderr!.on('data', (d) => (raw += d));
  // The server and the demo MCP server run in the background: the whole group is stopped at the end,
  // or when a command hangs (then the report names the command that did not finish).
  const stop = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // already gone
    }
  };
  const deadline = setTimeout(() => stop('SIGKILL'), SHELL_DEADLINE_MS);
  await new Promise((resolve) => child.once('exit', resolve));
  clearTimeout(deadline);
  stop('SIGTERM');
  await new Promise((r) => setTimeout(r, 500));
  const outcomes: Outcome[] = all.map((command, n) => {
    const section = new RegExp(`@@BEGIN ${n}\\n([\\s\\S]*?)\\n@@END ${n} (\\d+)`).exec(raw);
    if (!section) {
      const started = raw.indexOf(`@@BEGIN ${n}\n`);
      return {
        command,
        code: -1,
        output: started < 0 ? '(never ran)' : `(did not finish)\n${raw.slice(started).slice(-700)}`,
        statuses: [],
      };
    }
    const statuses = [...section[1].matchAll(/@@HTTP (\d{3})/g)].map((m) => Number(m[1]));
    return { command, code: Number(section[2]), output: section[1].replace(/\n?@@HTTP \d{3}\n?/g, ''), statuses };
  });
  return { outcomes, serverLog: fs.existsSync(serverLog) ? fs.readFileSync(serverLog, 'utf8') : '', raw };
}

function failure(o: Outcome): string | null {
  const where = `${o.command.file}:${o.command.line}: ${o.command.text.split('\n')[0].slice(0, 120)}`;
  const shown = o.output.length > 1500 ? `${o.output.slice(0, 700)}\n...\n${o.output.slice(-700)}` : o.output;
  if (o.code !== 0) return `${where}\n  exited ${o.code}\n${shown}`;
  // A loop (until/while) polls: its requests may fail until the condition holds.
  const polls = /^(until|while)\b/.test(o.command.text);
  const bad = polls ? [] : o.statuses.filter((s) => (s >= 400 || s === 0) && !o.command.expect.some((e) => e.includes(`"status":${s}`)));
  if (bad.length) return `${where}\n  HTTP ${bad.join(', ')}\n${shown}`;
  let from = 0;
  for (const e of o.command.expect) {
    const m = expectation(e).exec(o.output.slice(from));
    if (!m) return `${where}\n  did not print: ${e}\n${shown}`;
    from += m.index + m[0].length;
  }
  return null;
}

describe('the documentation, followed literally', () => {
  it('finds the blocks, and skips only the marked ones', () => {
    const blocks = DOCS.flatMap((f) => shellBlocks(f, fs.readFileSync(path.join(ROOT, f), 'utf8')));
    expect(blocks.filter((b) => b.kind === 'server')).toHaveLength(1);
    expect(blocks.filter((b) => b.kind === 'run').length).toBeGreaterThan(15);
    for (const b of blocks.filter((b) => b.kind === 'skip')) expect(b.reason, `${b.file}:${b.line} says why it is not run`).toBeTruthy();
  });

  it('runs every command of README.md and docs/*.md, in order: each exits 0 and prints what the text says', async () => {
    const blocks = DOCS.flatMap((f) => shellBlocks(f, fs.readFileSync(path.join(ROOT, f), 'utf8')));
    const { outcomes, serverLog, raw } = await runAll(blocks);
    const stopped = outcomes.findIndex((o) => o.code === -1);
    const failures = (stopped < 0 ? outcomes : outcomes.slice(0, stopped + 1)).map(failure).filter((f): f is string => f !== null);
    // The shell stopped (a syntax error in a block, a server that did not start, a hang): its last words say why.
    if (stopped >= 0)
      failures.push(`the shell stopped; ${outcomes.length - stopped} commands did not run. Its output ended with:\n${raw.slice(-1500)}`);
    expect(outcomes.length).toBeGreaterThan(40);
    expect(failures, `${failures.join('\n\n')}\n\nserver log (tail):\n${serverLog.slice(-2000)}`).toEqual([]);
  }, 240_000);
});
