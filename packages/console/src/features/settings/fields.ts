/** A numeric setting as its form shows it; null is typed as blank, and `blank` says what it means. */
export interface NumberField<K extends string> {
  name: K;
  label: string;
  description: string;
  /** What a blank field means (null), e.g. "no limit". */
  blank: string;
  min: number;
  max?: number;
  /** Whole numbers only unless set. */
  decimal?: boolean;
}

export type Values<K extends string> = Record<K, number | null>;

/** Why the server would refuse a field's value, or null (its schema's bounds, checked before sending). */
export function problemOf<K extends string>(field: NumberField<K>, value: number | null): string | null {
  if (value === null) return null;
  if (!Number.isFinite(value)) return 'a number, or blank';
  if (!field.decimal && !Number.isInteger(value)) return 'a whole number';
  if (value < field.min) return `at least ${field.min}`;
  if (field.max !== undefined && value > field.max) return `at most ${field.max}`;
  return null;
}
