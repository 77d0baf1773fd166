import { Type, type Static } from 'typebox';
import { Id, Json, Literals, Nullable, PageQuery, Timestamp } from '../http/schemas.js';
import { FILE_NAME_PATTERN, LANGUAGE_PATTERN, LIMITS, NAME_PATTERN } from './format.js';

/** HTTP shapes of the skills API (/api/skills). */

const SKILL_STATUSES = ['active', 'archived'] as const;
const SKILL_SOURCES = ['custom', 'store'] as const;

const SkillName = Type.String({
  minLength: 1,
  maxLength: LIMITS.name,
  pattern: NAME_PATTERN,
  description: 'lowercase letters, digits and single hyphens (Agent Skills format), unique in the tenant',
});
const Category = Type.String({
  minLength: 1,
  maxLength: LIMITS.category,
  pattern: NAME_PATTERN,
  description: 'e.g. engineering, sales, support, finance',
});
const Description = Type.String({ minLength: 1, maxLength: LIMITS.description, description: 'what the skill does and when to use it' });
const Instructions = Type.String({ minLength: 1, maxLength: LIMITS.instructions, description: 'the body of SKILL.md (Markdown)' });
const Metadata = Type.Record(Type.String({ maxLength: 64 }), Type.String({ maxLength: LIMITS.metadataValue }), {
  maxProperties: LIMITS.metadataKeys,
});
const FileName = Type.String({
  minLength: 1,
  maxLength: LIMITS.fileName,
  pattern: FILE_NAME_PATTERN,
  description: 'relative path, e.g. pricing.md or api/endpoints.md',
});
const Language = Type.String({
  pattern: LANGUAGE_PATTERN,
  examples: ['python'],
  description: 'inferred from the extension when left out (python, bash, javascript, ...)',
});

const ReferenceInput = Type.Object(
  { name: FileName, content: Type.String({ maxLength: LIMITS.fileBytes }) },
  { additionalProperties: false },
);
const ScriptInput = Type.Object(
  { name: FileName, language: Type.Optional(Language), content: Type.String({ maxLength: LIMITS.fileBytes }) },
  { additionalProperties: false },
);
const References = Type.Array(ReferenceInput, { maxItems: LIMITS.files });
const Scripts = Type.Array(ScriptInput, { maxItems: LIMITS.files });

export const CreateSkillBody = Type.Object(
  {
    name: SkillName,
    description: Description,
    category: Type.Optional(Nullable(Category)),
    instructions: Instructions,
    metadata: Type.Optional(Metadata),
    references: Type.Optional(References),
    scripts: Type.Optional(Scripts),
  },
  { additionalProperties: false },
);
export type CreateSkillBody = Static<typeof CreateSkillBody>;

export const UpdateSkillBody = Type.Object(
  {
    name: Type.Optional(SkillName),
    description: Type.Optional(Description),
    category: Type.Optional(Nullable(Category)),
    instructions: Type.Optional(Instructions),
    metadata: Type.Optional(Metadata),
    references: Type.Optional(Type.Array(ReferenceInput, { maxItems: LIMITS.files, description: 'replaces every reference' })),
    scripts: Type.Optional(Type.Array(ScriptInput, { maxItems: LIMITS.files, description: 'replaces every script' })),
    status: Type.Optional(Literals(SKILL_STATUSES, { description: 'archived, or active to restore' })),
  },
  { additionalProperties: false },
);
export type UpdateSkillBody = Static<typeof UpdateSkillBody>;

export const ImportSkillBody = Type.Object(
  {
    skillMd: Type.String({
      minLength: 1,
      maxLength: LIMITS.skillMdBytes,
      description: 'the text of a SKILL.md (front matter + instructions)',
    }),
    references: Type.Optional(References),
    scripts: Type.Optional(Scripts),
  },
  { additionalProperties: false },
);
export type ImportSkillBody = Static<typeof ImportSkillBody>;

export const Skill = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    description: Type.String(),
    category: Nullable(Type.String()),
    source: Literals(SKILL_SOURCES, { description: 'custom (tenant-created) or store (acquired from the store)' }),
    storeId: Nullable(Type.String({ description: 'the store entry a store skill was acquired from' })),
    status: Literals(SKILL_STATUSES),
    instructions: Type.String(),
    metadata: Type.Record(Type.String(), Type.String()),
    references: Type.Array(Type.Object({ name: Type.String(), size: Type.Integer({ description: 'bytes' }) })),
    scripts: Type.Array(Type.Object({ name: Type.String(), language: Type.String(), size: Type.Integer({ description: 'bytes' }) })),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { title: 'Skill' },
);
export type Skill = Static<typeof Skill>;

export const Assignment = Type.Object(
  {
    skillId: Type.String(),
    agentId: Type.String(),
    enabled: Type.Boolean(),
    priority: Type.Number({ description: 'higher means more likely to be used; default 0' }),
    config: Json,
    assignedBy: Nullable(Type.String({ description: 'the API key (or approver) that made the assignment' })),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { title: 'Skill assignment' },
);
export type Assignment = Static<typeof Assignment>;

export const AgentAssignment = Type.Evaluate(
  Type.Intersect([Assignment, Type.Object({ agentName: Type.String(), agentStatus: Type.String() })]),
);

export const SkillDetails = Type.Evaluate(Type.Intersect([Skill, Type.Object({ assignments: Type.Array(AgentAssignment) })]));

export const AgentSkill = Type.Evaluate(Type.Intersect([Skill, Type.Object({ assignment: Assignment })]));

export const ListSkillsQuery = Type.Object(
  {
    category: Type.Optional(Category),
    status: Literals([...SKILL_STATUSES, 'all'], { default: 'active' }),
    source: Type.Optional(Literals(SKILL_SOURCES)),
    q: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'words in the name or description' })),
    page: PageQuery.page,
    limit: Type.Integer({ minimum: 1, maximum: 200, default: 50, description: 'page size, 1 to 200' }),
  },
  { additionalProperties: false },
);
export type ListSkillsQuery = Static<typeof ListSkillsQuery>;

const PRIORITY_RANGE = { minimum: -1_000_000, maximum: 1_000_000, description: 'higher means more likely to be used' };
const Priority = Type.Number(PRIORITY_RANGE);
export const Config = Type.Record(Type.String(), Type.Unknown(), {
  description: 'per-assignment configuration the skill tools hand to the agent',
});

export const AssignBody = Type.Object(
  { agentId: Id, config: Type.Optional(Config), priority: Type.Optional(Type.Number({ ...PRIORITY_RANGE, default: 0 })) },
  { additionalProperties: false },
);
export type AssignBody = Static<typeof AssignBody>;

export const UpdateAssignmentBody = Type.Object(
  { enabled: Type.Optional(Type.Boolean()), config: Type.Optional(Config), priority: Type.Optional(Priority) },
  { additionalProperties: false },
);
export type UpdateAssignmentBody = Static<typeof UpdateAssignmentBody>;

export const StoreSkill = Type.Object({
  id: Type.String({ description: 'store id (the skill name)' }),
  name: Type.String(),
  description: Type.String(),
  category: Nullable(Type.String()),
  references: Type.Array(Type.Object({ name: Type.String(), size: Type.Integer() })),
  scripts: Type.Array(Type.Object({ name: Type.String(), language: Type.String(), size: Type.Integer() })),
  acquired: Type.Boolean(),
  skillId: Nullable(Type.String({ description: 'the tenant skill, once acquired' })),
});

export const StoreSkillDetails = Type.Evaluate(Type.Intersect([StoreSkill, Type.Object({ instructions: Type.String() })]));
