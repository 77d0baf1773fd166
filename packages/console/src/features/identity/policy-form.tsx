import type { TbacPolicy } from '@agentry/client';
import { Alert, Button, Card, Group, Select, Text, TextInput, Tooltip } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { messageOf, useClient } from '../../api';
import { FormErrorSummary } from '../../form-error-summary';
import { type ConditionsDraft, conditionErrorsOf, conditionsOf, draftOf, emptyConditionsDraft } from '../../lib/conditions';
import { LocalFieldErrors, placeErrors } from '../../lib/form-errors.js';
import { checkFields, LIMITS } from '../../lib/form-limits.js';
import { ConditionsFields } from './conditions-fields';
import { identityKeys } from './queries';

/** The policy form's fields by the names the API gives them, as the form labels them. */
const POLICY_FIELDS: Record<string, string> = {
  callerAgentId: 'Caller',
  calleeAgentId: 'Callee',
  toolName: 'Tool',
  effect: 'Effect',
  description: 'Description',
  conditions: 'Conditions',
};

/**
 * The policy form's state: a new policy, or the one being edited (`edit`, from the table). After a save
 * the caller, callee and effect stay, for the next policy.
 */
export function usePolicyForm() {
  const client = useClient();
  const queryClient = useQueryClient();
  const [draft, setDraft] = useState({ callerAgentId: '', calleeAgentId: '', toolName: '', effect: 'allow', description: '' });
  const [conditions, setConditions] = useState<ConditionsDraft>(emptyConditionsDraft);
  // The policy being edited: its caller, callee and tool are what it is (the API changes the rest).
  const [editing, setEditing] = useState<TbacPolicy | null>(null);
  const savePolicy = useMutation({
    mutationFn: () => {
      // An edit changes only the effect, description and conditions: only those are checked then.
      const local = checkFields(editing ? { description: draft.description } : draft, LIMITS.createPolicy);
      if (local.length) throw new LocalFieldErrors(local);
      const effect = draft.effect as 'allow' | 'deny';
      const shaped = conditionsOf(conditions);
      return editing
        ? client.identity.updatePolicy(editing.id, { effect, description: draft.description || null, conditions: shaped })
        : client.identity.createPolicy({
            ...draft,
            effect,
            description: draft.description || undefined,
            conditions: shaped ?? undefined,
          });
    },
    onSuccess: () => {
      setDraft({ ...draft, toolName: '', description: '' });
      setConditions(emptyConditionsDraft);
      setEditing(null);
      queryClient.invalidateQueries({ queryKey: identityKeys.policies() });
    },
  });
  const edit = (policy: TbacPolicy) => {
    savePolicy.reset();
    setEditing(policy);
    setDraft({
      callerAgentId: policy.callerAgentId,
      calleeAgentId: policy.calleeAgentId,
      toolName: policy.toolName,
      effect: policy.effect,
      description: policy.description ?? '',
    });
    setConditions(draftOf(policy.conditions));
  };
  const stopEditing = () => {
    savePolicy.reset();
    setEditing(null);
    setDraft({ ...draft, toolName: '', description: '' });
    setConditions(emptyConditionsDraft);
  };
  return { draft, setDraft, conditions, setConditions, editing, edit, stopEditing, savePolicy };
}

/** Adds a TBAC policy, or saves the one being edited (its effect, description and conditions). */
export function PolicyForm({
  form,
  agentOptions,
  settingsDenied,
}: {
  form: ReturnType<typeof usePolicyForm>;
  agentOptions: { value: string; label: string }[];
  settingsDenied: string | null;
}) {
  const { draft, setDraft, conditions, setConditions, editing, stopEditing, savePolicy } = form;
  const { fields: errors, summary } = placeErrors(savePolicy.error, POLICY_FIELDS);
  const conditionErrors = conditionErrorsOf(savePolicy.error);
  return (
    <Card withBorder>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          savePolicy.mutate();
        }}
      >
        <Text fw={600} mb="xs">
          {editing ? `Edit policy ${editing.id}` : 'New policy'}
        </Text>
        <FormErrorSummary summary={summary} title={editing ? 'Not saved' : 'Not added'} />
        <Group align="start" grow>
          <Select
            label="Caller"
            data={[{ value: '*', label: '* (any agent)' }, ...agentOptions]}
            value={draft.callerAgentId || null}
            onChange={(v) => setDraft({ ...draft, callerAgentId: v ?? '' })}
            error={errors.callerAgentId}
            disabled={!!editing}
          />
          <Select
            label="Callee"
            data={[{ value: '*', label: '* (any agent)' }, ...agentOptions]}
            value={draft.calleeAgentId || null}
            onChange={(v) => setDraft({ ...draft, calleeAgentId: v ?? '' })}
            error={errors.calleeAgentId}
            disabled={!!editing}
          />
          <TextInput
            label="Tool"
            value={draft.toolName}
            onChange={(e) => setDraft({ ...draft, toolName: e.currentTarget.value })}
            error={errors.toolName}
            disabled={!!editing}
          />
          <Select
            label="Effect"
            data={['allow', 'deny']}
            value={draft.effect}
            onChange={(v) => setDraft({ ...draft, effect: v ?? 'allow' })}
          />
          <TextInput
            label="Description"
            value={draft.description}
            onChange={(e) => setDraft({ ...draft, description: e.currentTarget.value })}
            error={errors.description}
          />
        </Group>
        <ConditionsFields draft={conditions} onChange={setConditions} errors={conditionErrors} />
        {savePolicy.error && !summary.length && (
          <Alert color="red" mt="xs" title={editing ? 'Not saved' : 'Not added'}>
            {messageOf(savePolicy.error)}
          </Alert>
        )}
        <Group mt="sm" gap="xs">
          <Tooltip label={settingsDenied} disabled={!settingsDenied}>
            <Button type="submit" disabled={!!settingsDenied} loading={savePolicy.isPending}>
              {editing ? 'Save policy' : 'Add policy'}
            </Button>
          </Tooltip>
          {editing && (
            <Button variant="default" onClick={stopEditing}>
              Cancel
            </Button>
          )}
        </Group>
      </form>
    </Card>
  );
}
