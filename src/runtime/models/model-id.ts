/** The providers a model identifier (`provider/name`) may name. */
const PROVIDERS = ['openai', 'anthropic', 'openai-compatible', 'builtin'] as const;
type Provider = (typeof PROVIDERS)[number];

/** Models the platform implements itself; they need no network. */
const BUILTIN_MODELS = ['echo'] as const;

export interface ModelId {
  provider: Provider;
  name: string;
}

/** Parses `provider/name`; returns a reason string instead when the identifier is not usable. */
export function parseModelId(value: string): ModelId | string {
  const slash = value.indexOf('/');
  if (slash <= 0 || slash === value.length - 1 || /\s/.test(value)) {
    return 'must be provider/model-name, e.g. openai/gpt-4o-mini or builtin/echo';
  }
  const provider = value.slice(0, slash);
  const name = value.slice(slash + 1);
  if (!(PROVIDERS as readonly string[]).includes(provider)) {
    return `has unknown provider "${provider}"; known: ${PROVIDERS.join(', ')}`;
  }
  if (provider === 'builtin' && !(BUILTIN_MODELS as readonly string[]).includes(name)) {
    return `names no builtin model; known: ${BUILTIN_MODELS.map((m) => `builtin/${m}`).join(', ')}`;
  }
  return { provider: provider as Provider, name };
}
