import multipart from '@fastify/multipart';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { strToU8, zipSync, type Zippable } from 'fflate';
import { badRequest, validationFailed } from '../http/errors.js';
import { Id, IdParams, problems } from '../http/schemas.js';
import { readUploadedFile } from '../http/upload.js';
import { ARCHIVE_LIMITS, archiveKind } from './archive.js';
import {
  AgentAssignment,
  AgentSkill,
  AssignBody,
  Assignment,
  CreateSkillBody,
  ImportSkillBody,
  ListSkillsQuery,
  Skill,
  SkillDetails,
  StoreSkill,
  StoreSkillDetails,
  UpdateAssignmentBody,
  UpdateSkillBody,
} from './schemas.js';
import type { SkillsService } from './service.js';

const tags = ['skills'];
const StoreParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64, description: 'store id (the skill name)' }) });
const AssignmentParams = Type.Object({ id: Id, agentId: Id });

const IMPORT_DESCRIPTION = `Creates a custom skill from the Agent Skills format, sent as one of:
- \`text/markdown\` (or \`text/plain\`): the text of a SKILL.md;
- \`application/json\`: \`{ "skillMd": "...", "references"?: [{name, content}], "scripts"?: [{name, language?, content}] }\`;
- \`multipart/form-data\` with one file: a zip, tar or tar.gz of the skill folder (SKILL.md at the root or in one
  top-level folder named like the skill, references/, scripts/), or a SKILL.md file.
Archives: at most ${ARCHIVE_LIMITS.uploadBytes} bytes, ${ARCHIVE_LIMITS.entries} entries and ${ARCHIVE_LIMITS.unpackedBytes} bytes unpacked; absolute paths, \`..\` and links are refused (400).`;

const SKILL_MD_EXAMPLE =
  '---\nname: release-notes\ndescription: Writes release notes from a list of changes\n---\nGroup the changes by kind.\n';

/** The import reads its body itself (three content types), so the document learns them from the route's config. */
const IMPORT_REQUEST_BODY = {
  required: true,
  content: {
    'text/markdown': { schema: { type: 'string', description: 'the text of a SKILL.md' }, example: SKILL_MD_EXAMPLE },
    'application/json': { schema: ImportSkillBody, example: { skillMd: SKILL_MD_EXAMPLE } },
    'multipart/form-data': {
      schema: {
        type: 'object',
        required: ['file'],
        properties: {
          file: { type: 'string', format: 'binary', description: 'a zip, tar or tar.gz of the skill folder, or a SKILL.md file' },
        },
      },
    },
  },
};

const utf8 = new TextDecoder('utf-8', { fatal: true });

export const skillsRoutes: FastifyPluginAsyncTypebox<{ skills: SkillsService }> = async (app, { skills }) => {
  app.get(
    '/api/skills',
    {
      config: { permission: 'skills:read' },
      schema: {
        operationId: 'listSkills',
        tags,
        summary: 'List the tenant’s skills (active by default), filtered by category, status, source or words',
        querystring: ListSkillsQuery,
        response: {
          200: Type.Object({ skills: Type.Array(Skill), total: Type.Integer(), page: Type.Integer(), limit: Type.Integer() }),
          ...problems(400, 401, 403),
        },
      },
    },
    async (req) => skills.list(req.principal.tenantId, req.query),
  );

  app.post(
    '/api/skills',
    {
      config: { permission: 'skills:write' },
      schema: {
        operationId: 'createSkill',
        tags,
        summary: 'Create a custom skill',
        body: CreateSkillBody,
        response: { 201: Skill, ...problems(400, 401, 403, 409, 413, 415) },
      },
    },
    async (req, reply) => reply.code(201).send(await skills.createFromBody(req.principal, req.body)),
  );

  app.get(
    '/api/skills/categories',
    {
      config: { permission: 'skills:read' },
      schema: {
        operationId: 'listSkillCategories',
        tags,
        summary: 'The categories of the tenant’s active skills',
        response: { 200: Type.Object({ categories: Type.Array(Type.String()) }), ...problems(401, 403) },
      },
    },
    async (req) => ({ categories: await skills.categories(req.principal.tenantId) }),
  );

  app.get(
    '/api/skills/store',
    {
      config: { permission: 'skills:read' },
      schema: {
        operationId: 'listStoreSkills',
        tags,
        summary: 'The skill store: skills shipped with the platform, and whether this tenant acquired each',
        querystring: Type.Object({ category: Type.Optional(Type.String({ maxLength: 64 })) }, { additionalProperties: false }),
        response: { 200: Type.Object({ skills: Type.Array(StoreSkill), total: Type.Integer() }), ...problems(400, 401, 403) },
      },
    },
    async (req) => skills.listStore(req.principal.tenantId, req.query.category),
  );

  app.get(
    '/api/skills/store/:id',
    {
      config: { permission: 'skills:read' },
      schema: {
        operationId: 'getStoreSkill',
        tags,
        summary: 'A store skill with its instructions',
        params: StoreParams,
        response: { 200: StoreSkillDetails, ...problems(401, 403, 404) },
      },
    },
    async (req) => skills.getStore(req.principal.tenantId, req.params.id),
  );

  app.post(
    '/api/skills/store/:id/acquire',
    {
      config: { permission: 'skills:write' },
      schema: {
        operationId: 'acquireStoreSkill',
        tags,
        summary: 'Acquire a store skill: the tenant gets its own copy (source store)',
        params: StoreParams,
        response: { 201: Skill, ...problems(401, 403, 404, 409) },
      },
    },
    async (req, reply) => reply.code(201).send(await skills.acquire(req.principal, req.params.id)),
  );

  app.get(
    '/api/skills/agent/:agentId',
    {
      config: { permission: 'skills:read', agentScope: { param: 'agentId' } },
      schema: {
        operationId: 'listAgentSkills',
        tags,
        summary: 'The skills assigned to an agent, with each assignment, highest priority first',
        params: Type.Object({ agentId: Id }),
        response: { 200: Type.Object({ skills: Type.Array(AgentSkill), total: Type.Integer() }), ...problems(401, 403, 404) },
      },
    },
    async (req) => skills.skillsOfAgent(req.principal.tenantId, req.params.agentId),
  );

  // SKILL.md text, JSON or an uploaded archive: the other content types live in this scope only.
  await app.register(async (scope) => {
    scope.addContentTypeParser(['text/markdown', 'text/x-markdown', 'text/plain'], { parseAs: 'string' }, (_req, body, done) =>
      done(null, body),
    );
    await scope.register(multipart, { limits: { fileSize: ARCHIVE_LIMITS.uploadBytes, files: 1, fields: 2, parts: 3 } });

    scope.post(
      '/api/skills/import',
      {
        config: { permission: 'skills:write', requestBody: IMPORT_REQUEST_BODY },
        schema: {
          operationId: 'importSkill',
          tags,
          summary: 'Create a custom skill from a SKILL.md, or from a zip/tar(.gz) of a skill folder',
          description: IMPORT_DESCRIPTION,
          consumes: ['text/markdown', 'application/json', 'multipart/form-data'],
          response: { 201: Skill, ...problems(400, 401, 403, 409, 413, 415) },
        },
      },
      async (req, reply) => {
        if (req.isMultipart()) {
          const { data } = await readUploadedFile(req, ARCHIVE_LIMITS.uploadBytes, 'skill uploads');
          if (archiveKind(data)) return reply.code(201).send(await skills.importArchive(req.principal, data));
          let text: string;
          try {
            text = utf8.decode(data);
          } catch {
            throw badRequest(
              'the upload is not a zip, tar or tar.gz archive, nor a SKILL.md text file',
              [{ path: 'body.file', message: 'is not a skill archive or SKILL.md' }],
              'invalid_archive',
            );
          }
          return reply.code(201).send(await skills.importSkillMd(req.principal, { skillMd: text }, 'file'));
        }
        if (typeof req.body === 'string')
          return reply.code(201).send(await skills.importSkillMd(req.principal, { skillMd: req.body }, 'body'));
        // A JSON body is checked here, by the validator of every other body: the route has no one body schema.
        const validate = req.compileValidationSchema(ImportSkillBody, 'body');
        if (!validate(req.body)) throw validationFailed('body', validate.errors ?? []);
        return reply.code(201).send(await skills.importSkillMd(req.principal, req.body as ImportSkillBody));
      },
    );
  });

  app.get(
    '/api/skills/:id',
    {
      config: { permission: 'skills:read' },
      schema: {
        operationId: 'getSkill',
        tags,
        summary: 'A skill with all its assignments',
        params: IdParams,
        response: { 200: SkillDetails, ...problems(401, 403, 404) },
      },
    },
    async (req) => skills.get(req.principal.tenantId, req.params.id),
  );

  app.patch(
    '/api/skills/:id',
    {
      config: { permission: 'skills:write' },
      schema: {
        operationId: 'updateSkill',
        tags,
        summary: 'Update a custom skill (only the fields given change; references/scripts given replace them); status archives or restores',
        params: IdParams,
        body: UpdateSkillBody,
        response: { 200: Skill, ...problems(400, 401, 403, 404, 409, 413, 415) },
      },
    },
    async (req) => skills.update(req.principal, req.params.id, req.body),
  );

  app.delete(
    '/api/skills/:id',
    {
      config: { permission: 'skills:write' },
      schema: {
        operationId: 'archiveSkill',
        tags,
        summary: 'Archive a skill (200 with the archived skill; idempotent). Assignments are kept but inactive until it is restored.',
        params: IdParams,
        response: { 200: Skill, ...problems(401, 403, 404) },
      },
    },
    async (req) => skills.archive(req.principal, req.params.id),
  );

  app.get(
    '/api/skills/:id/export',
    {
      config: { permission: 'skills:read' },
      schema: {
        operationId: 'exportSkill',
        tags,
        summary: 'Export a skill: its SKILL.md (format=md, default) or the whole folder as a zip (format=zip)',
        params: IdParams,
        querystring: Type.Object(
          { format: Type.Union([Type.Literal('md'), Type.Literal('zip')], { default: 'md' }) },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Unsafe<string | Buffer>({ type: 'string', description: 'text/markdown (SKILL.md) or application/zip' }),
          ...problems(400, 401, 403, 404),
        },
      },
    },
    async (req, reply) => {
      const { name, skillMd, files } = await skills.exportSkill(req.principal.tenantId, req.params.id);
      if (req.query.format === 'md') {
        return reply
          .header('content-type', 'text/markdown; charset=utf-8')
          .header('content-disposition', `attachment; filename="SKILL.md"`)
          .send(skillMd);
      }
      const zip: Zippable = { [`${name}/SKILL.md`]: strToU8(skillMd) };
      for (const f of files) {
        const data = strToU8(f.content);
        // Scripts keep an executable mode (unix host, regular file 0755).
        zip[`${name}/${f.kind === 'reference' ? 'references' : 'scripts'}/${f.name}`] =
          f.kind === 'script' ? [data, { os: 3, attrs: (0o100755 << 16) >>> 0 }] : data;
      }
      return reply
        .header('content-type', 'application/zip')
        .header('content-disposition', `attachment; filename="${name}.zip"`)
        .send(Buffer.from(zipSync(zip, { level: 6 })));
    },
  );

  app.get(
    '/api/skills/:id/agents',
    {
      config: { permission: 'skills:read' },
      schema: {
        operationId: 'listSkillAgents',
        tags,
        summary: 'The agents a skill is assigned to, with enabled, priority, config and assignedBy',
        params: IdParams,
        response: { 200: Type.Object({ agents: Type.Array(AgentAssignment), total: Type.Integer() }), ...problems(401, 403, 404) },
      },
    },
    async (req) => skills.agentsOf(req.principal.tenantId, req.params.id),
  );

  app.post(
    '/api/skills/:id/assign',
    {
      config: { permission: 'skills:write' },
      schema: {
        operationId: 'assignSkill',
        tags,
        summary: 'Assign a skill to an agent of the same tenant (enabled; 400 already_assigned if it is)',
        params: IdParams,
        body: AssignBody,
        response: { 201: Assignment, ...problems(400, 401, 403, 404, 409, 413, 415) },
      },
    },
    async (req, reply) => reply.code(201).send(await skills.assign(req.principal, req.params.id, req.body)),
  );

  app.delete(
    '/api/skills/:id/unassign/:agentId',
    {
      config: { permission: 'skills:write' },
      schema: {
        operationId: 'unassignSkill',
        tags,
        summary: 'Remove a skill from an agent',
        params: AssignmentParams,
        response: { 204: Type.Null(), ...problems(401, 403, 404) },
      },
    },
    async (req, reply) => {
      await skills.unassign(req.principal, req.params.id, req.params.agentId);
      return reply.code(204).send(null);
    },
  );

  app.patch(
    '/api/skills/:id/assignments/:agentId',
    {
      config: { permission: 'skills:write' },
      schema: {
        operationId: 'updateSkillAssignment',
        tags,
        summary: 'Update an assignment: enabled, config, priority',
        params: AssignmentParams,
        body: UpdateAssignmentBody,
        response: { 200: Assignment, ...problems(400, 401, 403, 404, 413, 415) },
      },
    },
    async (req) => skills.updateAssignment(req.principal, req.params.id, req.params.agentId, req.body),
  );
};
