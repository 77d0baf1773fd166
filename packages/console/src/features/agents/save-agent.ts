import { type Agent, type Agentry, AgentryError } from '@agentry/client';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from '@tanstack/react-router';
import { useRef } from 'react';
import { messageOf, useClient } from '../../api';
import {
  type AgentFormValues,
  type AssignedSkill,
  agentErrors,
  bodyOf,
  type FormErrors,
  LocalFormError,
  localAgentErrors,
  noErrors,
  type SkillChanges,
  skillChanges,
} from '../../lib/agent-form';
import { LocalFieldErrors } from '../../lib/form-errors';
import { agentKeys } from './queries';

/** A save that failed, with its errors already placed at the form's fields. */
class AgentSaveError extends Error {
  constructor(
    readonly cause: unknown,
    readonly placed: FormErrors,
  ) {
    super(messageOf(cause));
  }
}

/** The agent was saved, only (some of) its skill assignments were not. */
export const partlySaved = (err: unknown) =>
  err instanceof AgentSaveError && !(err.cause instanceof AgentryError) && !(err.cause instanceof LocalFieldErrors);

/** A failed save's errors, placed at the form's fields and rows, and listed for the summary. */
export function errorsOf(err: unknown): FormErrors {
  if (err instanceof AgentSaveError) return err.placed;
  if (err instanceof LocalFormError) {
    const out = noErrors();
    for (const [key, message] of Object.entries(err.errors)) {
      const row = /^delegations\.(\d+)\.(.+)$/.exec(key);
      const skill = /^(\d+)\./.exec(key);
      if (row) {
        out.delegations[`${row[1]}.${row[2]}`] = message;
        out.summary.push(`Delegation ${Number(row[1]) + 1} agent: ${message}`);
      } else if (skill) {
        out.skills[key] = message;
        out.summary.push(`Skill ${Number(skill[1]) + 1}: ${message}`);
      } else {
        out.fields[key] = message;
        out.summary.push(`${key === 'configuration' ? 'Configuration' : key}: ${message}`);
      }
    }
    return out;
  }
  return noErrors();
}

/** Makes the skill assignments the form asks for, one at a time; what the server refuses is placed at its row. */
async function assignSkills(client: Agentry, agentId: string, changes: SkillChanges): Promise<FormErrors> {
  const failed = noErrors();
  const attempt = async (row: number | null, call: () => Promise<unknown>) => {
    try {
      await call();
    } catch (err) {
      const fields = err instanceof AgentryError ? (err.errors ?? []) : [];
      const priority = fields.find((f) => /priority/.test(f.path));
      if (row === null) failed.fields.skills = messageOf(err);
      else if (priority) failed.skills[`${row}.priority`] = priority.message;
      else failed.skills[`${row}.skillId`] = messageOf(err);
      failed.summary.push(`${row === null ? 'Skills' : `Skill ${row + 1}`}: ${priority?.message ?? messageOf(err)}`);
    }
  };
  for (const skillId of changes.unassign) {
    await attempt(null, () => client.skills.unassign(skillId, agentId));
  }
  for (const a of changes.assign) {
    await attempt(a.row, () => client.skills.assign(a.skillId, { agentId, priority: a.priority }));
  }
  for (const u of changes.update) {
    await attempt(u.row, () => client.skills.updateAssignment(u.skillId, agentId, { priority: u.priority }));
  }
  return failed;
}

/**
 * Creates or updates the agent, then its skill assignments (unless `skillsOff` says why they cannot be
 * changed). A failure's errors are placed at the form's fields (errorsOf); `onSaved` follows a save.
 */
export function useSaveAgent(agentId: string, skillsOff: string | null, onSaved: () => void) {
  const isNew = agentId === 'new';
  const client = useClient();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  // An agent created by a save whose skill assignments then failed: the next save updates it.
  const created = useRef<string | null>(null);
  return useMutation({
    mutationFn: async (v: AgentFormValues) => {
      const built = bodyOf(v);
      // What the schema's limits refuse is said at once, and nothing is sent.
      const local = localAgentErrors(built);
      if (local.length) throw new AgentSaveError(new LocalFieldErrors(local), agentErrors(v, local));
      const body = built as Parameters<typeof client.agents.create>[0];
      const changesFor = (current: AssignedSkill[]) => skillChanges(v.skills, current, v.loadedSkills);
      if (!skillsOff) changesFor([]); // a skill chosen twice is refused before anything is saved
      const targetId = isNew ? created.current : agentId;
      let saved: Agent;
      try {
        saved = targetId ? await client.agents.update(targetId, body) : await client.agents.create(body);
      } catch (err) {
        throw new AgentSaveError(err, err instanceof AgentryError ? agentErrors(v, err.errors ?? []) : noErrors());
      }
      if (isNew) created.current = saved.id;
      queryClient.setQueryData(agentKeys.detail(saved.id), saved);
      if (!skillsOff) {
        const current = isNew && !targetId ? [] : ((await client.skills.forAgent(saved.id)).skills ?? []);
        const failed = await assignSkills(client, saved.id, changesFor(current));
        await queryClient.invalidateQueries({ queryKey: agentKeys.skills(saved.id) });
        if (Object.keys(failed.skills).length || failed.fields.skills) {
          throw new AgentSaveError(new Error('the agent was saved, but not every skill assignment'), failed);
        }
      }
      return saved;
    },
    onSuccess: (saved) => {
      queryClient.invalidateQueries({ queryKey: agentKeys.all });
      created.current = null;
      onSaved();
      if (isNew) navigate({ to: '/agents/$agentId', params: { agentId: saved.id } });
    },
  });
}
