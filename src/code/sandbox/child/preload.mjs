// Loaded with --import before the runtime (runs under Node's permission model, docs/code-execution.md).
// Pyodide asks process.binding('constants') at start, which the permission model refuses: answer that
// one binding from the public modules and refuse every other, so nothing else reaches the internals.
import fs from 'node:fs';
import os from 'node:os';

const constants = Object.freeze({ fs: fs.constants, os: os.constants });
process.binding = function binding(name) {
  if (name === 'constants') return constants;
  throw new Error(`process.binding('${name}') is not available in the sandbox`);
};
