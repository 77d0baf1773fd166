import { Type } from 'typebox';
import { parseJsonColumn } from '../db/json-column.js';
import { Json } from '../http/schemas.js';
import { Limits, PermissionSchema } from './schemas.js';

/** The JSON columns of tenancy's tables, parsed through their schemas. */

const Permissions = Type.Array(PermissionSchema);
/** Settings are open (a domain may keep its own key there, as identity does its TBAC mode); the limits are tenancy's. */
const Settings = Type.Intersect([Json, Type.Object({ limits: Type.Optional(Type.Partial(Limits)) })]);

export const permissionsColumn = (text: string) => parseJsonColumn(Permissions, text, 'api_keys.permissions');
export const settingsColumn = (text: string) => parseJsonColumn(Settings, text, 'tenants.settings');
export const auditDetailColumn = (text: string) => parseJsonColumn(Json, text, 'audit_events.detail');
