import { Type } from 'typebox';
import { Literals, Nullable } from '../http/schemas.js';
import { PERMISSIONS } from './permissions.js';

/** Tenancy's schemas shared by its routes and its stored JSON (columns.ts). */

export const PermissionSchema = Literals(PERMISSIONS);

export const Limits = Type.Object({
  rateLimitPerMinute: Nullable(
    Type.Integer({
      minimum: 1,
      description: 'per API key (with the access tokens minted from it) without a limit of its own; null: the platform default',
    }),
  ),
  maxConcurrentRuns: Nullable(
    Type.Integer({
      minimum: 1,
      description: 'runs executing at once, on all replicas together (a run is counted from its admission to its end); null: no limit',
    }),
  ),
  monthlyBudgetUsd: Nullable(
    Type.Number({
      minimum: 0,
      description:
        'USD per calendar month (UTC): a run is admitted while the month’s spend, plus the worst-case cost each run still running reserves, is below it (docs/operations.md); null: no budget',
    }),
  ),
});
