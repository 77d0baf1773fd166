import { Type } from 'typebox';
import { parseJsonColumn } from '../db/json-column.js';
import { Conditions } from './conditions.js';

/** The JSON the identity tables store, parsed through its schemas: key pairs' JWKs (the private one sealed), policies' conditions. */

const EcPublicJwk = Type.Object({ kty: Type.Literal('EC'), crv: Type.Literal('P-256'), x: Type.String(), y: Type.String() });
const EcPrivateJwk = Type.Object({
  kty: Type.Literal('EC'),
  crv: Type.Literal('P-256'),
  x: Type.String(),
  y: Type.String(),
  d: Type.String(),
});

/** `column` names the table, e.g. `identity_agent_keys.public_jwk`. */
export const publicJwkColumn = (text: string, column: string) => parseJsonColumn(EcPublicJwk, text, column);
/** The opened plaintext of a sealed `private_jwk`. */
export const privateJwkColumn = (plaintext: string, column: string) => parseJsonColumn(EcPrivateJwk, plaintext, column);
export const conditionsColumn = (text: string | null) => (text ? parseJsonColumn(Conditions, text, 'tbac_policies.conditions') : null);
