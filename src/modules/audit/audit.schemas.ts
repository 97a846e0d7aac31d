import { Type } from 'typebox';
import { StringEnum } from '../../lib/typebox.ts';

const Time = Type.String({ format: 'date-time' });

export const AuditInfoSchema = Type.Object({
  total: Type.Integer({
    description: 'records in the workspace trail (the vault’s credential records not included)',
  }),
  by_action: Type.Record(Type.String(), Type.Integer(), { description: 'records per action' }),
  oldest_at: Type.Union([Time, Type.Null()], { description: 'time of the oldest record; null when empty' }),
  newest_at: Type.Union([Time, Type.Null()], { description: 'time of the newest record; null when empty' }),
  retention: Type.Object({
    days: Type.Union([Type.Integer(), Type.Null()], {
      description: 'days a record is kept; null: for the life of the workspace',
    }),
    description: Type.String(),
  }),
  chain: Type.Object({
    verified: Type.Boolean({ description: 'every record links to the one before it and matches its hash' }),
    checked: Type.Integer({ description: 'records verified before the end or the first broken one' }),
    first_broken_id: Type.Optional(Type.Integer({ description: 'the first record that does not verify' })),
    reason: Type.Optional(Type.String({ description: 'why that record does not verify' })),
  }),
});

const Scope = StringEnum(['workspace', 'platform'] as const, {
  description:
    'workspace (default): the caller’s workspace; platform: changes that belong to no workspace (the CORS policy, tenants deleted with their workspaces), for platform operators only',
});

export const AuditInfoQuery = Type.Object({ scope: Type.Optional(Scope) }, { additionalProperties: false });

export const AuditExportBody = Type.Object(
  {
    scope: Type.Optional(Scope),
    format: StringEnum(['jsonl', 'csv', 'ocsf'] as const, {
      description:
        'jsonl: JSON lines; csv: RFC 4180 with a header row; ocsf: JSON lines of OCSF 1.x API Activity (class_uid 6003) events',
    }),
    from: Type.Optional(Type.String({ format: 'date-time', description: 'records at or after this time' })),
    to: Type.Optional(
      Type.String({ format: 'date-time', description: 'records before this time; after `from`' }),
    ),
    actions: Type.Optional(
      Type.Array(
        Type.String({
          pattern: '^[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*)+$',
          maxLength: 100,
          description: 'a dotted action, such as member.added or credential.accessed',
        }),
        { minItems: 1, maxItems: 50, uniqueItems: true, description: 'only these actions' },
      ),
    ),
  },
  { additionalProperties: false },
);
