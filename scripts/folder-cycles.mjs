// Cycles between the folders of src/: reads dependency-cruiser's JSON result on stdin, counts each
// folder of src/ (with everything under it) and each top-level file (src/config.ts) as one unit, and
// fails when two units depend on each other, directly or through others. dependency-cruiser's own
// folder scope sees only a module's innermost folder, so it misses src/agents <-> src/runtime when
// the imports involve src/runtime/models and src/runtime/tools.
//
// depcruise-baseline.folders.json lists edges that closed a cycle before this check existed (empty
// now: runtime/ is the bottom layer, runs sits above conversations, delegation has its own folder).
// `--update` rewrites that list from the current tree; use it only after removing a cycle, never to
// admit a new one.
import { readFileSync, writeFileSync } from 'node:fs';

const BASELINE = new URL('../depcruise-baseline.folders.json', import.meta.url);
const update = process.argv.includes('--update');

const unit = (path) => path.match(/^src\/[^/]+/)?.[0];

const result = JSON.parse(readFileSync(0, 'utf8'));
/** @type {Map<string, Map<string, string>>} unit -> (unit it depends on -> one import that makes it so) */
const graph = new Map();
for (const module of result.modules) {
  const from = unit(module.source);
  if (!from) continue;
  if (!graph.has(from)) graph.set(from, new Map());
  for (const dependency of module.dependencies) {
    const to = unit(dependency.resolved);
    if (!to || to === from) continue;
    if (!graph.get(from).has(to)) graph.get(from).set(to, `${module.source} -> ${dependency.resolved}`);
  }
}

// Tarjan's strongly connected components: every edge inside a component of two or more units is
// part of a cycle.
let index = 0;
const order = new Map();
const low = new Map();
const stack = [];
const onStack = new Set();
const components = [];
function visit(node) {
  order.set(node, index);
  low.set(node, index);
  index++;
  stack.push(node);
  onStack.add(node);
  for (const next of graph.get(node)?.keys() ?? []) {
    if (!order.has(next)) {
      visit(next);
      low.set(node, Math.min(low.get(node), low.get(next)));
    } else if (onStack.has(next)) {
      low.set(node, Math.min(low.get(node), order.get(next)));
    }
  }
  if (low.get(node) === order.get(node)) {
    const component = new Set();
    let member;
    do {
      member = stack.pop();
      onStack.delete(member);
      component.add(member);
    } while (member !== node);
    if (component.size > 1) components.push(component);
  }
}
for (const node of graph.keys()) if (!order.has(node)) visit(node);

const cycleEdges = new Map();
for (const component of components) {
  for (const from of component) {
    for (const [to, example] of graph.get(from) ?? []) if (component.has(to)) cycleEdges.set(`${from} -> ${to}`, example);
  }
}

if (update) {
  writeFileSync(BASELINE, `${JSON.stringify([...cycleEdges.keys()].sort(), null, 2)}\n`);
  console.log(`folder cycles: ${cycleEdges.size} known edges written to depcruise-baseline.folders.json`);
  process.exit(0);
}

const known = new Set(JSON.parse(readFileSync(BASELINE, 'utf8')));
const fresh = [...cycleEdges].filter(([edge]) => !known.has(edge));
const gone = [...known].filter((edge) => !cycleEdges.has(edge));
for (const edge of gone)
  console.log(`folder cycles: ${edge} no longer closes a cycle; remove it from the baseline (npm run deps:baseline)`);
if (fresh.length > 0) {
  for (const [edge, example] of fresh) console.error(`  error no-circular-folders: ${edge} closes a cycle between folders (${example})`);
  console.error(`\nx ${fresh.length} new dependencies between folders close a cycle`);
  process.exit(1);
}
console.log(`folder cycles: none new (${known.size - gone.length} known, listed in depcruise-baseline.folders.json)`);
