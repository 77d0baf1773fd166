import { Autocomplete, Stack, TagsInput, Text } from '@mantine/core';
import type { ModelOffer } from '../models/queries';

const usd = (n: number) => `$${n.toFixed(n < 1 ? 2 : n < 10 ? 2 : 0)}`;

/** What the picker says of a model: price per million tokens, window, or why it cannot run now. */
function modelFacts(offer: ModelOffer | undefined): string {
  if (!offer) return 'not in this server’s list: any provider/model may be typed; its runs fail if the provider is not configured';
  const facts = [
    offer.price ? `${usd(offer.price.input)} in / ${usd(offer.price.output)} out per 1M tokens` : 'price unknown (counted as 0)',
    offer.contextWindow ? `${Math.round(offer.contextWindow / 1000)}k context` : null,
    offer.default ? 'server default' : null,
    offer.usable ? null : `not usable: ${offer.unavailableReason}`,
  ];
  return facts.filter(Boolean).join(' · ');
}

/** A searchable model picker fed by GET /api/v1/models that still takes a typed provider/model. */
export function ModelInput({
  label,
  description,
  offers,
  value,
  onChange,
  error,
  placeholder,
}: {
  label: string;
  description?: string;
  offers: Map<string, ModelOffer>;
  value: string;
  onChange: (value: string) => void;
  error?: string;
  placeholder?: string;
}) {
  const offer = offers.get(value.trim());
  return (
    <Autocomplete
      label={label}
      placeholder={placeholder}
      description={value.trim() ? modelFacts(offer) : description}
      data={[...offers.keys()]}
      limit={50}
      maxDropdownHeight={280}
      value={value}
      onChange={onChange}
      error={error ?? (offer && !offer.usable ? offer.unavailableReason : undefined)}
      renderOption={({ option }) => {
        const o = offers.get(option.value);
        return (
          <Stack gap={0}>
            <Text size="sm" ff="monospace" c={o && !o.usable ? 'dimmed' : undefined}>
              {option.value}
            </Text>
            <Text size="xs" c="dimmed">
              {modelFacts(o)}
            </Text>
          </Stack>
        );
      }}
    />
  );
}

/** The fallback models: picked from the list or typed (Enter), in order. */
export function ModelsInput({
  offers,
  value,
  onChange,
  error,
}: {
  offers: Map<string, ModelOffer>;
  value: string[];
  onChange: (value: string[]) => void;
  error?: string;
}) {
  return (
    <TagsInput
      label="Fallback models"
      description="tried in order when the model fails for good or its breaker is open (at most 4); pick or type provider/model and press Enter"
      data={[...offers.keys()]}
      maxTags={4}
      value={value}
      onChange={onChange}
      error={error}
      clearable
    />
  );
}
