import { jsonb, pgTable, primaryKey, uuid, varchar } from 'drizzle-orm/pg-core';
import { type Static, type TObject, Type } from 'typebox';
import { updatedAt } from './columns.ts';
import { workspaces } from './workspaces.ts';

/** Per-workspace settings, as JSON values under dotted keys (`credentials.environment_lookup`). */
export const workspaceSettings = pgTable(
  'workspace_settings',
  {
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    key: varchar('key', { length: 100 }).notNull(),
    value: jsonb('value').notNull(),
    updated_at: updatedAt(),
  },
  (t) => [primaryKey({ columns: [t.workspace_id, t.key] })],
);

/** The `credentials` namespace: the vault's per-workspace switches. */
export const CredentialSettingsSchema = Type.Object({
  environment_lookup: Type.Boolean({ description: 'lookup by name honours the environment (rule E)' }),
  archive_audit_on_delete: Type.Boolean({
    description: 'copy the audit trail to the archive before deleting',
  }),
  refuse_private_networks: Type.Boolean({
    description:
      'connection tests refuse private and loopback addresses (default on; VAULT_ALLOW_LOOPBACK admits loopback in development)',
  }),
});

/**
 * Every settings namespace: its schema (a stored value that no longer fits it is ignored)
 * and its defaults, which apply to every key a workspace has not set. The defaults are
 * kept out of the schemas on purpose: the validator fills `default`s into request bodies,
 * which would turn a partial update into a reset.
 */
export const SETTINGS_NAMESPACES = {
  credentials: {
    schema: CredentialSettingsSchema,
    defaults: {
      environment_lookup: false,
      archive_audit_on_delete: true,
      refuse_private_networks: true,
    },
  },
} as const satisfies Record<string, { schema: TObject; defaults: Record<string, unknown> }>;

export type SettingsNamespace = keyof typeof SETTINGS_NAMESPACES;

/** The settings of one namespace, every key present. */
export type Settings<N extends SettingsNamespace> = Static<(typeof SETTINGS_NAMESPACES)[N]['schema']>;
