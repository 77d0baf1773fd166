import { Alert, Button, Checkbox, Group, JsonInput, Stack, Text, Textarea, TextInput, Title, Tooltip } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useParams } from '@tanstack/react-router';
import { useState } from 'react';
import { messageOf, useClient, useDenied } from '../../api';
import { FormErrorSummary } from '../../form-error-summary';
import { type AgentFormValues, BUILTIN_GROUPS, emptyA2aRow, emptyDelegationRow, emptyMcpRow, formOf } from '../../lib/agent-form';
import { ButtonLink } from '../../links';
import { modelsQuery } from '../models/queries';
import { AgentBudget } from './agent-budget';
import { A2aRowInput, DelegationRowInput } from './agent-rows';
import { McpServerRow } from './mcp-server-row';
import { ModelInput, ModelsInput } from './model-inputs';
import { everyAgentQuery, agentQuery, agentSkillsQuery } from './queries';
import { RowSection } from './row-section';
import { errorsOf, partlySaved, useSaveAgent } from './save-agent';
import { SkillsSection } from './skills-section';

/** How many MCP servers the form offers (the agent's tools are at most 64). */
const MAX_MCP_ROWS = 32;
/** agents/schemas.ts MAX_A2A_AGENTS. */
const MAX_A2A_ROWS = 16;

/** Create (`/agents/new`) or edit an agent; the server's 400 field errors are shown at their fields. */
export function AgentEditPage() {
  const { agentId } = useParams({ from: '/app/agents/$agentId' });
  const isNew = agentId === 'new';
  const client = useClient();
  const canDo = useDenied();
  const denied = canDo('agents:write');
  const skillsReadDenied = canDo('skills:read');
  const skillsDenied = canDo('skills:write') ?? skillsReadDenied;
  const agent = useQuery({ ...agentQuery(client, agentId), enabled: !isNew });
  const assigned = useQuery({ ...agentSkillsQuery(client, agentId), enabled: !isNew && !skillsReadDenied, retry: false });
  // The form cannot know the agent's skills then: its skill controls stay off, and a save leaves them as they are.
  const skillsLoadFailed =
    !isNew && !skillsReadDenied && assigned.isError ? `the agent's skills could not be loaded (${messageOf(assigned.error)})` : null;
  const skillsOff = skillsDenied ?? skillsLoadFailed;
  const models = useQuery(modelsQuery(client));
  const [values, setValues] = useState<AgentFormValues | null>(isNew ? formOf() : null);
  // Skills can be read (or may not be): the form waits for the agent and its assignments.
  const skillsSettled = isNew || !!skillsReadDenied || assigned.isSuccess || assigned.isError;
  const form = values ?? (agent.data && skillsSettled ? formOf(agent.data, assigned.data?.skills ?? []) : null);

  const offers = new Map((models.data?.models ?? []).map((m) => [m.id, m]));
  const tenantAgents = useQuery(everyAgentQuery(client));
  // An agent does not delegate to itself.
  const delegateOptions = tenantAgents.data?.filter((a) => a.id !== agentId).map((a) => ({ value: a.id, label: a.name })) ?? null;
  const save = useSaveAgent(agentId, skillsOff, () => setValues(null));

  if (!form) return agent.error ? <Alert color="red">{messageOf(agent.error)}</Alert> : <Text>Loading…</Text>;
  const errors = errorsOf(save.error);
  const hasFieldErrors = [errors.fields, errors.mcp, errors.delegations, errors.a2a, errors.skills].some((e) => Object.keys(e).length > 0);
  const update = (patch: Partial<AgentFormValues>) => setValues({ ...form, ...patch });
  const set = (field: 'name' | 'appId' | 'description' | 'model' | 'systemPrompt' | 'configuration' | 'summaryModel') => (value: string) =>
    update({ [field]: value });

  return (
    <Stack maw={820}>
      <Group justify="space-between">
        <Title order={1} size="h2">
          {isNew ? 'New agent' : form.name}
        </Title>
        {!isNew && (
          <Group gap="xs">
            <ButtonLink variant="default" to="/memory" search={{ agentId }}>
              Memory
            </ButtonLink>
            <ButtonLink variant="light" to="/playground" search={{ agentId }}>
              Open in playground
            </ButtonLink>
          </Group>
        )}
      </Group>
      {!isNew && agent.data && (
        <Text size="sm" c="dimmed">
          {agent.data.id} · status {agent.data.status}
        </Text>
      )}
      <form
        onSubmit={(e) => {
          e.preventDefault();
          save.mutate(form);
        }}
      >
        <Stack>
          <FormErrorSummary summary={errors.summary} />
          <Group grow align="start">
            <TextInput
              label="Name"
              required
              value={form.name}
              onChange={(e) => set('name')(e.currentTarget.value)}
              error={errors.fields.name}
            />
            <TextInput
              label="App"
              required
              value={form.appId}
              onChange={(e) => set('appId')(e.currentTarget.value)}
              error={errors.fields.appId}
            />
          </Group>
          <TextInput
            label="Description"
            value={form.description}
            onChange={(e) => set('description')(e.currentTarget.value)}
            error={errors.fields.description}
          />
          <ModelInput
            label="Model"
            description="provider/model: pick one this server offers or type another"
            offers={offers}
            value={form.model}
            onChange={set('model')}
            error={
              errors.fields.model ?? (models.error ? `the server's model list could not be read: ${messageOf(models.error)}` : undefined)
            }
          />
          <Textarea
            label="System prompt"
            autosize
            minRows={3}
            value={form.systemPrompt}
            onChange={(e) => set('systemPrompt')(e.currentTarget.value)}
            error={errors.fields.systemPrompt}
          />
          <Checkbox.Group
            label="Built-in tools"
            description="skills: skill_discover, skill_query, skill_request; connectors: connector_discover, connector_request; memory: memory_read, memory_append, memory_replace"
            value={form.builtins}
            onChange={(builtins) => update({ builtins })}
            error={errors.fields.builtins}
          >
            <Group mt="xs">
              {BUILTIN_GROUPS.map((g) => (
                <Checkbox key={g} value={g} label={g} />
              ))}
            </Group>
          </Checkbox.Group>
          <RowSection
            title="MCP servers"
            empty="No MCP server: the agent's tools are the built-in ones above and those below."
            rows={form.mcp}
            onRows={(mcp) => update({ mcp })}
            newRow={emptyMcpRow}
            addLabel="Add MCP server"
            max={MAX_MCP_ROWS}
            row={(row, i, edit) => <McpServerRow row={row} index={i} errors={errors.mcp} {...edit} />}
          />
          <RowSection
            title="Delegations"
            hint="Other agents of this tenant, each a tool the model may call with a task (docs/runtime.md)."
            rows={form.delegations}
            onRows={(delegations) => update({ delegations })}
            newRow={emptyDelegationRow}
            addLabel="Add delegation"
            row={(row, i, edit) => (
              <DelegationRowInput row={row} index={i} agents={delegateOptions} errors={errors.delegations} {...edit} />
            )}
          />
          <RowSection
            title="Remote A2A agents"
            rows={form.a2a}
            onRows={(a2a) => update({ a2a })}
            newRow={emptyA2aRow}
            addLabel="Add A2A agent"
            max={MAX_A2A_ROWS}
            row={(row, i, edit) => <A2aRowInput row={row} index={i} errors={errors.a2a} {...edit} />}
          />
          <ModelsInput
            offers={offers}
            value={form.fallbackModels}
            onChange={(fallbackModels) => update({ fallbackModels })}
            error={errors.fields.fallbackModels}
          />
          <ModelInput
            label="Summary model"
            placeholder="the agent's own model"
            description="summarises the turns the model's window no longer holds; empty: the agent's own model"
            offers={offers}
            value={form.summaryModel}
            onChange={set('summaryModel')}
            error={errors.fields.summaryModel}
          />
          <JsonInput
            label="Configuration"
            description="temperature, maxSteps, maxTokens, memoryWindow, onActiveRun, toolTimeoutMs, approval, publicAgentCard"
            autosize
            minRows={2}
            value={form.configuration}
            onChange={set('configuration')}
            error={errors.fields.configuration}
            // Mantine shows this instead of `error` while the text is not JSON; before a save, only a red border.
            validationError={errors.fields.configuration}
          />
          <SkillsSection
            rows={form.skills}
            onRows={(skills) => update({ skills })}
            errors={errors.skills}
            fieldError={errors.fields.skills}
            off={skillsOff}
            readDenied={skillsReadDenied}
            loadFailed={skillsLoadFailed}
            denied={skillsDenied}
          />
          {save.error && !hasFieldErrors && (
            <Alert color="red" title="Not saved">
              {messageOf(save.error)}
            </Alert>
          )}
          {save.error && hasFieldErrors && (
            <Text c="red" size="sm">
              {partlySaved(save.error) ? messageOf(save.error) : 'Nothing was saved'}:{' '}
              {errors.summary.length === 1 ? 'a problem, listed' : `${errors.summary.length} problems, listed`} at the top of the form and
              at their fields.
            </Text>
          )}
          <Group>
            <Tooltip label={denied} disabled={!denied}>
              <Button type="submit" loading={save.isPending} disabled={!!denied}>
                {isNew ? 'Create agent' : 'Save'}
              </Button>
            </Tooltip>
            {save.isSuccess && <Text c="green">Saved</Text>}
          </Group>
        </Stack>
      </form>
      {!isNew && <AgentBudget agentId={agentId} denied={denied} />}
    </Stack>
  );
}
