import type { FieldError } from '../../errors.js';

/**
 * The integrations the platform knows (data shipped with it). A tenant connects one by giving the
 * configuration its fields describe; secret fields are stored but never returned (masked) nor logged.
 * The platform validates the shape of a configuration; it does not contact the service.
 * `suggestedSkills` name store skills that work well with the integration.
 */

type FieldType = 'string' | 'secret' | 'url' | 'email' | 'boolean';

interface ConnectorField {
  name: string;
  label: string;
  type: FieldType;
  required: boolean;
  description: string;
  /** Extra rule for text values. */
  pattern?: string;
  maxLength?: number;
}

export interface Connector {
  id: string;
  name: string;
  category: string;
  description: string;
  fields: ConnectorField[];
  suggestedSkills: string[];
}

const MASK = '********';

export const CONNECTORS: Connector[] = [
  {
    id: 'github',
    name: 'GitHub',
    category: 'engineering',
    description: 'Repositories, pull requests, issues and checks.',
    fields: [
      {
        name: 'accessToken',
        label: 'Access token',
        type: 'secret',
        required: true,
        description: 'fine-grained personal access token or GitHub App installation token',
        pattern: '^(ghp_|github_pat_|ghs_|gho_)[A-Za-z0-9_]{20,}$',
      },
      {
        name: 'organization',
        label: 'Organization',
        type: 'string',
        required: false,
        description: 'limit the agent to this organization',
        pattern: '^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$',
      },
      {
        name: 'baseUrl',
        label: 'API URL',
        type: 'url',
        required: false,
        description: 'GitHub Enterprise Server API URL; leave out for github.com',
      },
    ],
    suggestedSkills: ['code-review', 'incident-response'],
  },
  {
    id: 'jira',
    name: 'Jira',
    category: 'engineering',
    description: 'Issues, projects, sprints and workflows in Jira Cloud.',
    fields: [
      { name: 'siteUrl', label: 'Site URL', type: 'url', required: true, description: 'e.g. https://acme.atlassian.net' },
      { name: 'email', label: 'Account email', type: 'email', required: true, description: 'the Atlassian account the token belongs to' },
      { name: 'apiToken', label: 'API token', type: 'secret', required: true, description: 'Atlassian API token' },
      {
        name: 'projectKey',
        label: 'Project key',
        type: 'string',
        required: false,
        description: 'default project, e.g. OPS',
        pattern: '^[A-Z][A-Z0-9_]{1,9}$',
      },
    ],
    suggestedSkills: ['incident-response', 'support-triage'],
  },
  {
    id: 'slack',
    name: 'Slack',
    category: 'communication',
    description: 'Read and post messages in channels the bot is invited to.',
    fields: [
      {
        name: 'botToken',
        label: 'Bot token',
        type: 'secret',
        required: true,
        description: 'bot user OAuth token',
        pattern: '^xoxb-[A-Za-z0-9-]{10,}$',
      },
      {
        name: 'defaultChannel',
        label: 'Default channel',
        type: 'string',
        required: false,
        description: 'e.g. #incidents',
        pattern: '^#?[a-z0-9][a-z0-9_-]{0,79}$',
      },
    ],
    suggestedSkills: ['incident-response'],
  },
  {
    id: 'salesforce',
    name: 'Salesforce',
    category: 'sales',
    description: 'Accounts, contacts, opportunities and activities in Salesforce CRM.',
    fields: [
      { name: 'instanceUrl', label: 'Instance URL', type: 'url', required: true, description: 'e.g. https://acme.my.salesforce.com' },
      {
        name: 'clientId',
        label: 'Connected app client id',
        type: 'string',
        required: true,
        description: 'consumer key of the connected app',
        maxLength: 256,
      },
      {
        name: 'clientSecret',
        label: 'Connected app client secret',
        type: 'secret',
        required: true,
        description: 'consumer secret of the connected app',
      },
      {
        name: 'refreshToken',
        label: 'Refresh token',
        type: 'secret',
        required: false,
        description: 'OAuth refresh token of the integration user',
      },
    ],
    suggestedSkills: ['sales-discovery'],
  },
  {
    id: 'zendesk',
    name: 'Zendesk',
    category: 'support',
    description: 'Tickets, users, macros and help-center articles in Zendesk Support.',
    fields: [
      {
        name: 'subdomain',
        label: 'Subdomain',
        type: 'string',
        required: true,
        description: 'the acme in acme.zendesk.com',
        pattern: '^[a-z0-9][a-z0-9-]{0,62}$',
      },
      { name: 'email', label: 'Agent email', type: 'email', required: true, description: 'the agent the API token acts as' },
      { name: 'apiToken', label: 'API token', type: 'secret', required: true, description: 'Zendesk API token' },
    ],
    suggestedSkills: ['support-triage'],
  },
  {
    id: 'stripe',
    name: 'Stripe',
    category: 'finance',
    description: 'Customers, invoices, payments, payouts and balance transactions.',
    fields: [
      {
        name: 'secretKey',
        label: 'Secret or restricted key',
        type: 'secret',
        required: true,
        description: 'a restricted key with read access is recommended',
        pattern: '^(sk|rk)_(live|test)_[A-Za-z0-9]{10,}$',
      },
      {
        name: 'accountId',
        label: 'Connected account',
        type: 'string',
        required: false,
        description: 'act on this connected account',
        pattern: '^acct_[A-Za-z0-9]{6,}$',
      },
    ],
    suggestedSkills: ['invoice-reconciliation'],
  },
  {
    id: 'google-drive',
    name: 'Google Drive',
    category: 'storage',
    description: 'Documents, spreadsheets and folders shared with a service account.',
    fields: [
      {
        name: 'serviceAccountJson',
        label: 'Service account key (JSON)',
        type: 'secret',
        required: true,
        description: 'the JSON key file of a Google Cloud service account',
        maxLength: 8192,
      },
      {
        name: 'folderId',
        label: 'Root folder id',
        type: 'string',
        required: false,
        description: 'limit the agent to this folder',
        pattern: '^[A-Za-z0-9_-]{10,100}$',
      },
    ],
    suggestedSkills: ['sales-discovery', 'invoice-reconciliation'],
  },
  {
    id: 'postgres',
    name: 'PostgreSQL',
    category: 'data',
    description: 'Query a PostgreSQL database (a read-only role is recommended).',
    fields: [
      {
        name: 'connectionString',
        label: 'Connection string',
        type: 'secret',
        required: true,
        description: 'postgres://user:password@host:5432/database',
        pattern: '^postgres(ql)?://',
      },
      {
        name: 'schema',
        label: 'Schema',
        type: 'string',
        required: false,
        description: 'default schema, e.g. public',
        pattern: '^[A-Za-z_][A-Za-z0-9_$]{0,62}$',
      },
      {
        name: 'readOnly',
        label: 'Read only',
        type: 'boolean',
        required: false,
        description: 'run every query in a read-only transaction (default true)',
      },
    ],
    suggestedSkills: ['sql-analysis'],
  },
];

export const findConnector = (id: string) => CONNECTORS.find((c) => c.id === id);

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

function valueProblem(f: ConnectorField, value: unknown): string | null {
  if (f.type === 'boolean') return typeof value === 'boolean' ? null : 'must be true or false';
  if (typeof value !== 'string') return 'must be text';
  if (!value.length) return 'must not be empty';
  if (value.length > (f.maxLength ?? 4096)) return `must be at most ${f.maxLength ?? 4096} characters`;
  if (f.type === 'email' && !EMAIL.test(value)) return 'must be an email address';
  if (f.type === 'url') {
    let url: URL | null = null;
    try {
      url = new URL(value);
    } catch {
      // reported below
    }
    if (url?.protocol !== 'https:') return 'must be an https:// URL';
  }
  // Never echo a secret back, not even in an error.
  if (f.pattern && !new RegExp(f.pattern).test(value))
    return f.type === 'secret' ? 'does not look like a valid value for this field' : `must match ${f.pattern}`;
  return null;
}

/**
 * Checks a configuration against the connector's fields: required ones present, no unknown ones,
 * each value of its type. With `base` (an update), fields left out keep their stored value and
 * `null` removes an optional one. Answers the cleaned configuration, or the field errors.
 */
export function checkConfiguration(
  connector: Connector,
  input: Record<string, unknown>,
  base?: Record<string, unknown>,
): { configuration: Record<string, string | boolean>; errors: FieldError[] } {
  const errors: FieldError[] = [];
  const out: Record<string, string | boolean> = { ...((base ?? {}) as Record<string, string | boolean>) };
  const path = (name: string) => `body.configuration.${name}`;
  for (const key of Object.keys(input)) {
    if (!connector.fields.some((f) => f.name === key)) errors.push({ path: path(key), message: 'is not a known field' });
  }
  for (const f of connector.fields) {
    if (!(f.name in input)) continue;
    const value = input[f.name];
    if (value === null && !f.required) {
      delete out[f.name];
      continue;
    }
    const problem = valueProblem(f, value);
    if (problem) errors.push({ path: path(f.name), message: problem });
    else out[f.name] = value as string | boolean;
  }
  for (const f of connector.fields) {
    const reported = errors.some((e) => e.path === path(f.name));
    if (f.required && out[f.name] === undefined && !reported) errors.push({ path: path(f.name), message: 'is required' });
  }
  if (connector.id === 'google-drive' && typeof out.serviceAccountJson === 'string' && !errors.length) {
    const key = parseJson(out.serviceAccountJson) as { client_email?: unknown; private_key?: unknown } | null;
    if (!key || typeof key.client_email !== 'string' || typeof key.private_key !== 'string') {
      errors.push({ path: path('serviceAccountJson'), message: 'must be a service account JSON key (with client_email and private_key)' });
    }
  }
  return { configuration: out, errors };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** The configuration as it may be shown: secret values replaced by a fixed mask. */
export function maskConfiguration(connector: Connector, configuration: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(configuration).map(([k, v]) => [k, connector.fields.find((f) => f.name === k)?.type === 'secret' ? MASK : v]),
  );
}
