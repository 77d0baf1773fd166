import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { type FieldError, InvalidInput } from '../errors.js';

/**
 * The Agent Skills format: a folder holding `SKILL.md` (YAML front matter with `name` and
 * `description`, then the instructions in Markdown), plus optional `references/` (material the agent
 * reads when needed) and `scripts/` (code it can run). This module parses, validates and renders it;
 * it knows nothing of storage or HTTP beyond the 400 problems it throws.
 */

/** Lowercase letters, digits and single hyphens, not at either end (Agent Skills `name`). */
export const NAME_PATTERN = '^[a-z0-9]+(-[a-z0-9]+)*$';
const NAME_RE = new RegExp(NAME_PATTERN);
/** A file inside references/ or scripts/: relative path of plain segments, no hidden files. */
export const FILE_NAME_PATTERN = '^[A-Za-z0-9_][A-Za-z0-9._-]*(/[A-Za-z0-9_][A-Za-z0-9._-]*){0,3}$';
const FILE_NAME_RE = new RegExp(FILE_NAME_PATTERN);
export const LANGUAGE_PATTERN = '^[a-z0-9+#-]{1,32}$';
const LANGUAGE_RE = new RegExp(LANGUAGE_PATTERN);

export const LIMITS = {
  name: 64,
  description: 1024,
  category: 64,
  /** Characters of instructions (the SKILL.md body). */
  instructions: 100_000,
  /** Bytes of a whole SKILL.md. */
  skillMdBytes: 128 * 1024,
  /** Bytes of one reference or script. */
  fileBytes: 512 * 1024,
  /** Bytes of all references and scripts together. */
  totalBytes: 2 * 1024 * 1024,
  /** References plus scripts. */
  files: 100,
  fileName: 255,
  metadataKeys: 50,
  metadataValue: 1024,
} as const;

export interface SkillFile {
  name: string;
  content: string;
}

export interface ScriptFile extends SkillFile {
  language: string;
}

/** Everything a skill is made of, as parsed from SKILL.md + folders or from a JSON body. */
export interface SkillContent {
  name: string;
  description: string;
  category: string | null;
  instructions: string;
  metadata: Record<string, string>;
  /** Other front matter of the Agent Skills format, kept for export: license, compatibility, allowed-tools. */
  frontMatter: Record<string, string>;
  references: SkillFile[];
  scripts: ScriptFile[];
}

const KEPT_FRONT_MATTER = ['license', 'compatibility', 'allowed-tools'] as const;
const KNOWN_FRONT_MATTER = ['name', 'description', 'category', 'metadata', ...KEPT_FRONT_MATTER];

const invalidSkillMd = (errors: FieldError[]) =>
  new InvalidInput(`SKILL.md is invalid: ${errors[0].path} ${errors[0].message}`, errors, 'invalid_skill_md');

function nameProblem(value: unknown): string | null {
  if (typeof value !== 'string' || !value) return 'is required';
  if (value.length > LIMITS.name) return `must be at most ${LIMITS.name} characters`;
  if (!NAME_RE.test(value)) return 'must be lowercase letters, digits and single hyphens, not starting or ending with a hyphen';
  return null;
}

/** Language of a script from its extension (what the agent would run it with). */
export function inferLanguage(fileName: string): string {
  const ext = fileName.toLowerCase().split('.').pop() ?? '';
  const map: Record<string, string> = {
    py: 'python',
    sh: 'bash',
    bash: 'bash',
    zsh: 'zsh',
    js: 'javascript',
    mjs: 'javascript',
    cjs: 'javascript',
    ts: 'typescript',
    rb: 'ruby',
    ps1: 'powershell',
    sql: 'sql',
    go: 'go',
    rs: 'rust',
    r: 'r',
    pl: 'perl',
    php: 'php',
  };
  return map[ext] ?? 'text';
}

/** Text with Windows line ends and a byte-order mark normalised away. */
const normalise = (text: string) => text.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n');

/**
 * Parses SKILL.md text. `where` prefixes error paths (`skillMd`, `archive.my-skill/SKILL.md`).
 * Throws a 400 `invalid_skill_md` problem naming every problem found.
 */
export function parseSkillMd(raw: string, where = 'skillMd'): Omit<SkillContent, 'references' | 'scripts'> {
  if (Buffer.byteLength(raw) > LIMITS.skillMdBytes) {
    throw invalidSkillMd([{ path: where, message: `must be at most ${LIMITS.skillMdBytes} bytes` }]);
  }
  const text = normalise(raw);
  const m = /^---[ \t]*\n(?:([\s\S]*?)\n)?---[ \t]*(?:\n([\s\S]*))?$/.exec(text);
  if (!m) {
    throw invalidSkillMd([{ path: where, message: 'must start with YAML front matter between --- lines (name, description)' }]);
  }
  let data: unknown;
  try {
    data = parseYaml(m[1] ?? '', { maxAliasCount: 20, prettyErrors: false });
  } catch (err) {
    throw invalidSkillMd([{ path: `${where}.frontMatter`, message: `is not valid YAML: ${(err as Error).message.split('\n')[0]}` }]);
  }
  if (!data || typeof data !== 'object' || Array.isArray(data)) {
    throw invalidSkillMd([{ path: `${where}.frontMatter`, message: 'must be a YAML mapping with name and description' }]);
  }
  const fm = data as Record<string, unknown>;
  const errors: FieldError[] = [];
  for (const key of Object.keys(fm)) {
    if (!KNOWN_FRONT_MATTER.includes(key)) {
      errors.push({ path: `${where}.${key}`, message: `is not a known front matter field (known: ${KNOWN_FRONT_MATTER.join(', ')})` });
    }
  }
  const nameError = nameProblem(fm.name);
  if (nameError) errors.push({ path: `${where}.name`, message: nameError });
  const description = typeof fm.description === 'string' ? fm.description.trim() : '';
  if (!description) errors.push({ path: `${where}.description`, message: 'is required (what the skill does and when to use it)' });
  else if (description.length > LIMITS.description)
    errors.push({ path: `${where}.description`, message: `must be at most ${LIMITS.description} characters` });

  const metadata: Record<string, string> = {};
  if (fm.metadata !== undefined && fm.metadata !== null) {
    if (typeof fm.metadata !== 'object' || Array.isArray(fm.metadata)) {
      errors.push({ path: `${where}.metadata`, message: 'must be a mapping of keys to text values' });
    } else {
      for (const [k, v] of Object.entries(fm.metadata as Record<string, unknown>)) {
        // YAML reads `version: 1.0` as a number; scalar values are kept as their text.
        if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') metadata[k] = String(v);
        else errors.push({ path: `${where}.metadata.${k}`, message: 'must be a text value' });
      }
    }
  }
  errors.push(...metadataProblems(metadata, `${where}.metadata`));

  let category: string | null = null;
  const rawCategory = fm.category ?? metadata.category;
  if (rawCategory !== undefined && rawCategory !== null) {
    const problem = categoryProblem(rawCategory);
    if (problem) errors.push({ path: `${where}.category`, message: problem });
    else category = rawCategory as string;
  }

  const frontMatter: Record<string, string> = {};
  for (const key of KEPT_FRONT_MATTER) {
    const v = fm[key];
    if (v === undefined || v === null) continue;
    if (key === 'allowed-tools' && Array.isArray(v) && v.every((x) => typeof x === 'string')) frontMatter[key] = v.join(' ');
    else if (typeof v === 'string' && v.length <= 1000) frontMatter[key] = v;
    else errors.push({ path: `${where}.${key}`, message: 'must be text of at most 1000 characters' });
  }

  const instructions = (m[2] ?? '').trim();
  if (!instructions) errors.push({ path: `${where}.instructions`, message: 'is empty: write the instructions below the front matter' });
  else if (instructions.length > LIMITS.instructions)
    errors.push({ path: `${where}.instructions`, message: `must be at most ${LIMITS.instructions} characters` });

  if (errors.length) throw invalidSkillMd(errors);
  return { name: fm.name as string, description, category, instructions, metadata, frontMatter };
}

function categoryProblem(value: unknown): string | null {
  if (typeof value !== 'string') return 'must be text';
  if (value.length > LIMITS.category || !NAME_RE.test(value)) {
    return `must be lowercase letters, digits and single hyphens, at most ${LIMITS.category} characters (e.g. engineering)`;
  }
  return null;
}

function metadataProblems(metadata: Record<string, string>, where: string): FieldError[] {
  const errors: FieldError[] = [];
  const keys = Object.keys(metadata);
  if (keys.length > LIMITS.metadataKeys) errors.push({ path: where, message: `must have at most ${LIMITS.metadataKeys} keys` });
  for (const k of keys) {
    if (k.length > 64) errors.push({ path: `${where}.${k.slice(0, 64)}`, message: 'keys must be at most 64 characters' });
    if (metadata[k].length > LIMITS.metadataValue)
      errors.push({ path: `${where}.${k}`, message: `must be at most ${LIMITS.metadataValue} characters` });
  }
  return errors;
}

/**
 * Checks the files of a skill: names, languages, duplicates, per-file and total sizes, count.
 * Throws a 400 (`invalid_skill_file`, or `skill_too_large` for the size limits) naming each problem.
 */
export function checkSkillFiles(content: Pick<SkillContent, 'references' | 'scripts'>, where: { references: string; scripts: string }) {
  const errors: FieldError[] = [];
  let tooLarge = false;
  let total = 0;
  const check = (files: SkillFile[], prefix: string) => {
    const seen = new Set<string>();
    files.forEach((f, i) => {
      const path = `${prefix}.${i}`;
      if (f.name.length > LIMITS.fileName || !FILE_NAME_RE.test(f.name)) {
        errors.push({
          path: `${path}.name`,
          message: 'must be a relative path of letters, digits, dots, hyphens and underscores (no hidden files, at most 4 levels)',
        });
      }
      if (seen.has(f.name)) errors.push({ path: `${path}.name`, message: `duplicates ${f.name}` });
      seen.add(f.name);
      if ('language' in f && !LANGUAGE_RE.test((f as ScriptFile).language)) {
        errors.push({ path: `${path}.language`, message: 'must be lowercase letters, digits, +, # or -, at most 32 characters' });
      }
      const size = Buffer.byteLength(f.content);
      total += size;
      if (size > LIMITS.fileBytes) {
        tooLarge = true;
        errors.push({ path: `${path}.content`, message: `is ${size} bytes; a file may have at most ${LIMITS.fileBytes}` });
      }
    });
  };
  check(content.references, where.references);
  check(content.scripts, where.scripts);
  if (content.references.length + content.scripts.length > LIMITS.files) {
    tooLarge = true;
    errors.push({ path: where.references, message: `a skill may hold at most ${LIMITS.files} references and scripts together` });
  }
  if (total > LIMITS.totalBytes) {
    tooLarge = true;
    errors.push({ path: where.references, message: `references and scripts total ${total} bytes; at most ${LIMITS.totalBytes}` });
  }
  if (errors.length) {
    const code = tooLarge ? 'skill_too_large' : 'invalid_skill_file';
    throw new InvalidInput(`${errors[0].path} ${errors[0].message}`, errors, code);
  }
}

/** SKILL.md text of a skill: front matter, a blank line, the instructions. */
export function renderSkillMd(
  skill: Pick<SkillContent, 'name' | 'description' | 'category' | 'instructions' | 'metadata' | 'frontMatter'>,
): string {
  const fm: Record<string, unknown> = { name: skill.name, description: skill.description };
  if (skill.category) fm.category = skill.category;
  for (const key of KEPT_FRONT_MATTER) if (skill.frontMatter[key] !== undefined) fm[key] = skill.frontMatter[key];
  if (Object.keys(skill.metadata).length) fm.metadata = skill.metadata;
  return `---\n${stringifyYaml(fm, { lineWidth: 0 })}---\n\n${skill.instructions.trim()}\n`;
}
