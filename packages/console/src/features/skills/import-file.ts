import type { Agentry } from '@agentry/client';

/**
 * A dropped or chosen file as POST /api/skills/import takes it: a SKILL.md as text/markdown, an
 * archive (zip, tar, tar.gz) as multipart. The SDK's import takes text or JSON only, so the archive
 * goes through its HTTP layer as a form (the same credential, its refusal an AgentryError).
 */
export async function importFile(client: Agentry, file: File): Promise<{ id: string }> {
  if (/\.md$/i.test(file.name)) return client.skills.import(await file.text());
  const form = new FormData();
  form.append('file', file, file.name);
  return client.http.json<Awaited<ReturnType<Agentry['skills']['import']>>>('POST', '/api/skills/import', { form });
}
