import { unzipSync, strFromU8 } from 'fflate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { SKILL_MD, multipartFile, tarball, zip } from './helpers.js';

let t: TestApp;
let key: string;

beforeAll(async () => {
  t = await startApp();
  ({ key } = await t.tenant('importer'));
});
afterAll(() => t.close());

/** A SKILL.md sent as text/markdown: the body is the text itself, not JSON. */
const importMarkdown = (text: string, k = key) =>
  t.api(k).POST('/api/skills/import', { body: text, headers: { 'content-type': 'text/markdown' }, bodySerializer: (md) => md });
// An archive or file as multipart/form-data, built byte by byte (file name and part type as given): raw.
const upload = (fileName: string, data: Buffer | string, k = key) =>
  t.raw('POST', '/api/skills/import', { key: k, ...multipartFile(fileName, data) });
const exportSkill = (id: string, k = key) => t.api(k).GET('/api/skills/{id}/export', { params: { path: { id } }, parseAs: 'text' });
const skillMd = (name: string, body = 'Do the thing.') => `---\nname: ${name}\ndescription: A skill named ${name}\n---\n\n${body}\n`;

describe('SKILL.md', () => {
  it('imports a SKILL.md sent as text/markdown and exports it back unchanged in meaning', async () => {
    const res = await importMarkdown(SKILL_MD);
    expect(res.response.status, JSON.stringify(res.error)).toBe(201);
    expect(res.data).toMatchObject({
      name: 'refund-policy',
      description: 'How to decide and explain refunds. Use for refund requests.',
      category: 'support',
      source: 'custom',
      status: 'active',
      metadata: { owner: 'support-team', version: '2' },
      instructions: '# Refunds\n\n1. Check the order date.\n2. Apply the refund rules in references/rules.md.',
      references: [],
      scripts: [],
    });

    const exported = await exportSkill(res.data!.id);
    expect(exported.response.status).toBe(200);
    expect(exported.response.headers.get('content-type')).toContain('text/markdown');
    const text = exported.data!;
    expect(text).toMatch(/^---\nname: refund-policy\n/);
    expect(text).toContain('license: MIT');

    // Round trip: the exported text, imported into another tenant, gives the same skill.
    const { key: other } = await t.tenant('round-trip');
    const again = await importMarkdown(text, other);
    expect(again.response.status, JSON.stringify(again.error)).toBe(201);
    const pick = (s: Record<string, unknown>) => ({ ...s, id: undefined, createdAt: undefined, updatedAt: undefined });
    expect(pick(again.data!)).toEqual(pick(res.data!));
    const reExported = await exportSkill(again.data!.id, other);
    expect(reExported.data).toBe(text);
  });

  it('imports from JSON { skillMd, references, scripts }, and from a SKILL.md uploaded as a file', async () => {
    const json = await t.api(key).POST('/api/skills/import', {
      body: {
        skillMd: skillMd('from-json'),
        references: [{ name: 'notes.md', content: 'Notes' }],
        scripts: [{ name: 'x.sh', content: 'echo' }],
      },
    });
    expect(json.response.status, JSON.stringify(json.error)).toBe(201);
    expect(json.data).toMatchObject({
      name: 'from-json',
      references: [{ name: 'notes.md', size: 5 }],
      scripts: [{ name: 'x.sh', language: 'bash', size: 4 }],
    });

    const file = await upload('SKILL.md', skillMd('from-file'));
    expect(file.status, file.text).toBe(201);
    expect(file.body.name).toBe('from-file');

    // Bodies the types forbid (an unknown field, no skillMd): raw.
    const badJson = await t.raw('POST', '/api/skills/import', { key, body: { skillMd: skillMd('x'), extra: true } });
    expectProblem(badJson, 400, 'validation_failed');
    expect(badJson.body.errors[0].path).toBe('body.extra');
    expectProblem(await t.raw('POST', '/api/skills/import', { key, body: { references: [] } }), 400, 'validation_failed');
  });

  it('reports a JSON body that fails its schema as every other route reports its body: each field once, in the same words', async () => {
    const cases: [unknown, { path: string; message: string }[]][] = [
      [{ skillMd: skillMd('x'), extra: true }, [{ path: 'body.extra', message: 'is not a known field' }]],
      [{ skillMd: '' }, [{ path: 'body.skillMd', message: 'must NOT have fewer than 1 characters' }]],
      [{ references: [] }, [{ path: 'body.skillMd', message: 'is required' }]],
      [{ skillMd: 7 }, [{ path: 'body.skillMd', message: 'must be a string' }]],
    ];
    // Deliberately invalid bodies, most of which the types forbid: raw.
    for (const [body, errors] of cases) {
      const res = await t.raw('POST', '/api/skills/import', { key, body });
      expectProblem(res, 400, 'validation_failed');
      expect(res.body.errors, JSON.stringify(body)).toEqual(errors);
      expect(res.body.detail).toBe(`${errors[0].path} ${errors[0].message}`);
    }
  });

  it('explains what is wrong with a SKILL.md (400 invalid_skill_md)', async () => {
    const cases: [string, string][] = [
      ['# no front matter', 'skillMd'],
      ['---\nname: [unclosed\n---\nbody', 'body.frontMatter'],
      ['---\n- a list\n---\nbody', 'body.frontMatter'],
      ['---\nname: Bad_Name\ndescription: d\n---\nbody', 'body.name'],
      ['---\ndescription: d\n---\nbody', 'body.name'],
      ['---\nname: ok\n---\nbody', 'body.description'],
      ['---\nname: ok\ndescription: d\n---\n', 'body.instructions'],
      ['---\nname: ok\ndescription: d\ncolour: red\n---\nbody', 'body.colour'],
      ['---\nname: ok\ndescription: d\ncategory: Not Valid\n---\nbody', 'body.category'],
      ['---\nname: ok\ndescription: d\nmetadata: [1, 2]\n---\nbody', 'body.metadata'],
      [`---\nname: ok\ndescription: ${'d'.repeat(1025)}\n---\nbody`, 'body.description'],
    ];
    for (const [text, path] of cases) {
      const res = await importMarkdown(text);
      if (path === 'skillMd') {
        expectProblem(res, 400, 'invalid_skill_md');
        expect(res.error!.errors![0].path).toBe('body');
        continue;
      }
      expectProblem(res, 400, 'invalid_skill_md');
      expect(
        res.error!.errors!.map((e) => e.path),
        text,
      ).toContain(path);
    }
    const huge = await importMarkdown(skillMd('huge', 'x'.repeat(130 * 1024)));
    expectProblem(huge, 400, 'invalid_skill_md');
    expect(huge.error!.detail).toContain('bytes');
  });

  it('takes Windows line ends and a byte-order mark', async () => {
    const res = await importMarkdown(`\uFEFF${skillMd('windows-made').replace(/\n/g, '\r\n')}`);
    expect(res.response.status, JSON.stringify(res.error)).toBe(201);
    expect(res.data!.instructions).toBe('Do the thing.');
  });
});

describe('archives', () => {
  const folder = (name: string) => ({
    [`${name}/SKILL.md`]: skillMd(name, '# How\nRead references/guide.md.'),
    [`${name}/references/guide.md`]: '# Guide\nStep one.',
    [`${name}/references/deep/more.md`]: 'More.',
    [`${name}/scripts/run.py`]: 'print("hi")',
    [`${name}/assets/logo.txt`]: 'ignored',
    [`${name}/.DS_Store`]: 'ignored',
  });

  it('imports a zip of a skill folder, and exports it back as a zip', async () => {
    const res = await upload('skill.zip', zip(folder('zipped')));
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      name: 'zipped',
      instructions: '# How\nRead references/guide.md.',
      references: [
        { name: 'deep/more.md', size: 5 },
        { name: 'guide.md', size: 17 },
      ],
      scripts: [{ name: 'run.py', language: 'python', size: 11 }],
    });

    const exported = await t.api(key).GET('/api/skills/{id}/export', {
      params: { path: { id: res.body.id }, query: { format: 'zip' } },
      parseAs: 'arrayBuffer',
    });
    expect(exported.response.status).toBe(200);
    expect(exported.response.headers.get('content-type')).toBe('application/zip');
    const files = unzipSync(new Uint8Array(exported.data!));
    expect(Object.keys(files).sort()).toEqual([
      'zipped/SKILL.md',
      'zipped/references/deep/more.md',
      'zipped/references/guide.md',
      'zipped/scripts/run.py',
    ]);
    expect(strFromU8(files['zipped/scripts/run.py'])).toBe('print("hi")');

    // The exported zip imports again (into another tenant) as the same skill.
    const { key: other } = await t.tenant('zip-round-trip');
    const again = await upload('zipped.zip', Buffer.from(exported.data!), other);
    expect(again.status, again.text).toBe(201);
    expect(again.body).toMatchObject({
      name: 'zipped',
      references: res.body.references,
      scripts: res.body.scripts,
      instructions: res.body.instructions,
    });
  });

  it('imports a zip with SKILL.md at its root', async () => {
    const res = await upload('flat.zip', zip({ 'SKILL.md': skillMd('flat'), 'references/a.md': 'A' }));
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ name: 'flat', references: [{ name: 'a.md', size: 1 }] });
  });

  it('imports tar and tar.gz archives', async () => {
    const entries = (name: string) => [
      { name: `${name}/`, type: 'directory' as const },
      { name: `${name}/SKILL.md`, content: skillMd(name) },
      { name: `${name}/references/`, type: 'directory' as const },
      { name: `${name}/references/guide.md`, content: 'Guide' },
    ];
    const plain = await upload('skill.tar', await tarball(entries('tarred')));
    expect(plain.status, plain.text).toBe(201);
    expect(plain.body).toMatchObject({ name: 'tarred', references: [{ name: 'guide.md', size: 5 }] });
    const gz = await upload('skill.tar.gz', await tarball(entries('gzipped'), true));
    expect(gz.status, gz.text).toBe(201);
    expect(gz.body.name).toBe('gzipped');
  });

  it('refuses entries that could escape the folder: .., absolute paths, links', async () => {
    const cases: [string, Buffer][] = [
      ['zip ..', zip({ 'SKILL.md': skillMd('evil'), '../evil.md': 'x' })],
      ['zip nested ..', zip({ 'SKILL.md': skillMd('evil'), 'references/../../evil.md': 'x' })],
      ['zip absolute', zip({ 'SKILL.md': skillMd('evil'), '/etc/evil.md': 'x' })],
      ['zip backslash ..', zip({ 'SKILL.md': skillMd('evil'), '..\\evil.md': 'x' })],
      ['zip drive', zip({ 'SKILL.md': skillMd('evil'), 'C:/evil.md': 'x' })],
      [
        'zip symlink',
        zip({ 'SKILL.md': skillMd('evil'), 'references/link.md': ['/etc/passwd', { os: 3, attrs: (0o120777 << 16) >>> 0 }] }),
      ],
      [
        'tar ..',
        await tarball([
          { name: 'SKILL.md', content: skillMd('evil') },
          { name: '../evil.md', content: 'x' },
        ]),
      ],
      [
        'tar absolute',
        await tarball([
          { name: 'SKILL.md', content: skillMd('evil') },
          { name: '/tmp/evil.md', content: 'x' },
        ]),
      ],
      [
        'tar symlink',
        await tarball([
          { name: 'SKILL.md', content: skillMd('evil') },
          { name: 'references/link.md', type: 'symlink', linkname: '/etc/passwd' },
        ]),
      ],
      [
        'tar hard link',
        await tarball([
          { name: 'SKILL.md', content: skillMd('evil') },
          { name: 'references/link.md', type: 'link', linkname: 'SKILL.md' },
        ]),
      ],
      [
        'tar.gz ..',
        await tarball(
          [
            { name: 'SKILL.md', content: skillMd('evil') },
            { name: 'references/../../evil.md', content: 'x' },
          ],
          true,
        ),
      ],
    ];
    for (const [label, data] of cases) {
      const res = await upload('evil.zip', data);
      expect(res.status, `${label}: ${res.text}`).toBe(400);
      expect(res.body.code, label).toBe('unsafe_archive_entry');
      expect(res.body.errors[0].path, label).toMatch(/^archive\./);
    }
    const list = await t.api(key).GET('/api/skills', { params: { query: { q: 'evil' } } });
    expect(list.data!.total).toBe(0);
  });

  it('stops archive bombs and archives with too many entries (400)', async () => {
    const zeros = Buffer.alloc(9 * 1024 * 1024);
    const bomb = zip({ 'SKILL.md': skillMd('bomb'), 'references/zeros.md': zeros });
    expect(bomb.length).toBeLessThan(100 * 1024);
    const zipRes = await upload('bomb.zip', bomb);
    expectProblem(zipRes, 400, 'archive_too_large');
    const gzBomb = await tarball(
      [
        { name: 'SKILL.md', content: skillMd('bomb') },
        { name: 'references/zeros.md', content: zeros },
      ],
      true,
    );
    expectProblem(await upload('bomb.tar.gz', gzBomb), 400, 'archive_too_large');

    const many: Record<string, string> = { 'SKILL.md': skillMd('many') };
    for (let i = 0; i < 501; i++) many[`assets/f${i}.txt`] = 'x';
    expectProblem(await upload('many.zip', zip(many)), 400, 'archive_too_large');

    // Under the archive caps but over a skill's own size limits: a clear skill_too_large.
    const fat = zip({ 'SKILL.md': skillMd('fat'), 'references/big.md': 'x'.repeat(600 * 1024) });
    const fatRes = await upload('fat.zip', fat);
    expectProblem(fatRes, 400, 'skill_too_large');
    expect(fatRes.body.errors[0].path).toBe('archive.references.0.content');
  });

  it('refuses archives that are not skill folders', async () => {
    expectProblem(await upload('none.zip', zip({ 'README.md': 'hello' })), 400, 'invalid_archive');
    expectProblem(await upload('two.zip', zip({ 'a/SKILL.md': skillMd('a'), 'b/SKILL.md': skillMd('b') })), 400, 'invalid_archive');
    const mismatch = await upload('mismatch.zip', zip({ 'folder-name/SKILL.md': skillMd('other-name') }));
    expectProblem(mismatch, 400, 'invalid_skill_md');
    expect(mismatch.body.detail).toContain('folder name');
    expectProblem(
      await upload('binary.zip', zip({ 'SKILL.md': skillMd('bin'), 'references/x.md': Buffer.from([0xff, 0xfe, 0x00, 0x81]) })),
      400,
      'invalid_skill_file',
    );
    expectProblem(await upload('random.bin', Buffer.from([1, 2, 3, 0xff, 0xfe])), 400, 'invalid_archive');
    const truncated = zip({ 'SKILL.md': skillMd('cut') }).subarray(0, 40);
    expectProblem(await upload('cut.zip', truncated), 400, 'invalid_archive');
    expectProblem(await upload('empty.tar.gz', Buffer.from([0x1f, 0x8b, 0x08, 0x00])), 400, 'invalid_archive');
    // Raw payloads of other shapes and types: a form with no file, XML.
    const noFile = await t.raw('POST', '/api/skills/import', {
      key,
      payload: '--b\r\nContent-Disposition: form-data; name="note"\r\n\r\nhello\r\n--b--\r\n',
      headers: { 'content-type': 'multipart/form-data; boundary=b' },
    });
    expectProblem(noFile, 400, 'validation_failed');
    const tooBig = await upload('big.zip', Buffer.alloc(5 * 1024 * 1024 + 10));
    expectProblem(tooBig, 413, 'payload_too_large');
    expectProblem(
      await t.raw('POST', '/api/skills/import', { key, payload: 'x', headers: { 'content-type': 'application/xml' } }),
      415,
      'unsupported_media_type',
    );
  });

  it('keeps the other routes JSON-only', async () => {
    // A content type the route does not take: raw.
    const res = await t.raw('POST', '/api/skills', { key, payload: skillMd('not-here'), headers: { 'content-type': 'text/markdown' } });
    expectProblem(res, 415, 'unsupported_media_type');
  });
});
