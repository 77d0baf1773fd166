// npm's `prepare`: builds the checkout after `npm install` / `npm ci`. `npx agentry` in a checkout
// links the checkout into npx's cache and runs `prepare` there too (npm_command=exec); the checkout was
// built by its own install, so that run leaves it alone rather than rewrite the console a server serves.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';

if (process.env.npm_command === 'exec' && fs.existsSync('dist/cli.js')) process.exit(0);
const build = spawnSync('npm', ['run', 'build'], { stdio: 'inherit', shell: process.platform === 'win32' });
process.exit(build.status ?? 1);
