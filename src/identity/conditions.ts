import { Type } from 'typebox';

/** A TBAC policy's conditions: the API's schema, and the stored `tbac_policies.conditions` (columns.ts). */

const HHMM = Type.String({ examples: ['09:00'], pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$', description: 'HH:MM, UTC' });

export const Conditions = Type.Object(
  {
    notBefore: Type.Optional(Type.String({ format: 'date-time', description: 'the policy applies from this time' })),
    notAfter: Type.Optional(Type.String({ format: 'date-time', description: 'the policy expires at this time' })),
    timeWindow: Type.Optional(
      Type.Object(
        { start: HHMM, end: HHMM },
        { additionalProperties: false, description: 'daily UTC window, start included, end excluded; may span midnight' },
      ),
    ),
  },
  { additionalProperties: false, description: 'all given conditions must hold at decision time for the policy to match' },
);
