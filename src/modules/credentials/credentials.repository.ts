import {
  and,
  asc,
  count,
  desc,
  eq,
  getTableColumns,
  gte,
  ilike,
  inArray,
  isNull,
  lt,
  notInArray,
  or,
  sql,
} from 'drizzle-orm';
import {
  afterCursor,
  likePattern,
  nextCursorOf,
  PreparedVariants,
  paginate,
  totalCount,
} from '../../db/queries.ts';
import { rowsOf } from '../../db/rows.ts';
import {
  type AuditAction,
  credentialAuditArchive,
  credentialAuditLogs,
  credentials,
  credentialTypes,
  workspaceKeys,
} from '../../db/schema/credentials.ts';
import type { Db } from '../../db/transaction.ts';

/** The vault's column types, for the service (which imports no db/ file but transaction.ts). */
export type { AuditAction, FieldDefinition, TestEndpoint } from '../../db/schema/credentials.ts';

export type CredentialRow = typeof credentials.$inferSelect;

/** A credential's columns without its encrypted blob: what lists select. */
const { encrypted_data: _blob, ...listedColumns } = getTableColumns(credentials);
export type CredentialTypeRow = typeof credentialTypes.$inferSelect;
export type AuditRow = typeof credentialAuditLogs.$inferSelect;
export type NewAuditRow = Omit<typeof credentialAuditLogs.$inferInsert, 'id'>;

export interface CredentialFilter {
  credential_type_id?: number;
  environment?: string;
  is_active?: boolean;
  tag?: string;
  q?: string;
  expired?: boolean;
  now: Date;
  limit: number;
  offset: number;
}

export interface AuditFilter {
  /** Only records older than this id (the previous page's `next_cursor`). */
  after?: number;
  action?: AuditAction;
  from?: Date;
  to?: Date;
  limit: number;
  offset: number;
}

/** Postgres unique_violation: a concurrent insert won the race for the same key. */
export const isUniqueViolation = (error: unknown): boolean =>
  (error as { code?: string }).code === '23505' ||
  (error as { cause?: { code?: string } }).cause?.code === '23505';

/** Data access for the credential vault; every credential query is scoped by workspace id. */
export function createCredentialsRepository(db: Db) {
  const credentialById = (workspaceId: string, id: number) =>
    and(eq(credentials.workspace_id, workspaceId), eq(credentials.id, id));
  const visibleType = (workspaceId: string) =>
    or(isNull(credentialTypes.workspace_id), eq(credentialTypes.workspace_id, workspaceId));

  // The credentials list is a hot read: building its SQL with drizzle cost more CPU than
  // running it, so each combination of filters is built and prepared once, on first use.
  const listKey = (filter: CredentialFilter) =>
    `credentials_${[filter.credential_type_id, filter.environment, filter.is_active, filter.tag]
      .map((value) => (value === undefined ? 0 : 1))
      .join('')}${filter.q ? 1 : 0}${filter.expired === undefined ? 'x' : filter.expired ? 't' : 'f'}`;
  const listStatements = new PreparedVariants((filter: CredentialFilter) => {
    const p = (name: string) => sql.placeholder(name);
    const where = and(
      eq(credentials.workspace_id, p('workspaceId')),
      filter.credential_type_id === undefined ? undefined : eq(credentials.credential_type_id, p('typeId')),
      filter.environment === undefined ? undefined : eq(credentials.environment, p('environment')),
      filter.is_active === undefined ? undefined : eq(credentials.is_active, p('isActive')),
      filter.tag === undefined ? undefined : sql`${credentials.tags} @> ${p('tag')}::jsonb`,
      filter.q
        ? or(ilike(credentials.name, p('pattern')), ilike(credentials.description, p('pattern')))
        : undefined,
      filter.expired === true ? lt(credentials.expires_at, p('now')) : undefined,
      filter.expired === false
        ? or(isNull(credentials.expires_at), gte(credentials.expires_at, p('now')))
        : undefined,
    );
    return {
      page: db
        // Everything but the encrypted blob, which a list never shows: less to send and parse.
        .select({ credential: listedColumns, type_name: credentialTypes.name, total: totalCount() })
        .from(credentials)
        .innerJoin(credentialTypes, eq(credentialTypes.id, credentials.credential_type_id))
        .where(where)
        .orderBy(desc(credentials.created_at), desc(credentials.id))
        .limit(p('limit'))
        .offset(p('offset'))
        .prepare(`${listKey(filter)}_page`),
      count: db
        .select({ value: count() })
        .from(credentials)
        .where(where)
        .prepare(`${listKey(filter)}_count`),
    };
  }, listKey);

  return {
    // Credential types: the system ones and the workspace's own.

    listTypes(workspaceId: string, filter: { category?: string; is_active?: boolean }) {
      return db
        .select()
        .from(credentialTypes)
        .where(
          and(
            visibleType(workspaceId),
            filter.category ? eq(credentialTypes.category, filter.category) : undefined,
            filter.is_active === undefined ? undefined : eq(credentialTypes.is_active, filter.is_active),
          ),
        )
        .orderBy(desc(credentialTypes.is_system), asc(credentialTypes.name));
    },

    async findType(workspaceId: string, id: number): Promise<CredentialTypeRow | undefined> {
      const [row] = await db
        .select()
        .from(credentialTypes)
        .where(and(eq(credentialTypes.id, id), visibleType(workspaceId)));
      return row;
    },

    async typeNameTaken(workspaceId: string, name: string): Promise<boolean> {
      const [row] = await db
        .select({ id: credentialTypes.id })
        .from(credentialTypes)
        .where(and(eq(credentialTypes.name, name), visibleType(workspaceId)));
      return row !== undefined;
    },

    async insertType(values: typeof credentialTypes.$inferInsert): Promise<CredentialTypeRow> {
      const [row] = await db.insert(credentialTypes).values(values).returning();
      if (!row) throw new Error('credential type insert returned nothing');
      return row;
    },

    // Workspace keys.

    async findWorkspaceKey(workspaceId: string) {
      const [row] = await db.select().from(workspaceKeys).where(eq(workspaceKeys.workspace_id, workspaceId));
      return row;
    },

    /** Stores a new wrapped key unless another process stored one first; returns the stored one. */
    async insertWorkspaceKey(workspaceId: string, wrappedKey: string, masterKeyId: string) {
      await db
        .insert(workspaceKeys)
        .values({ workspace_id: workspaceId, wrapped_key: wrappedKey, master_key_id: masterKeyId })
        .onConflictDoNothing();
      const [row] = await db.select().from(workspaceKeys).where(eq(workspaceKeys.workspace_id, workspaceId));
      if (!row) throw new Error('workspace key vanished after insert');
      return row;
    },

    countWorkspaceKeysByMasterKey() {
      return db
        .select({ master_key_id: workspaceKeys.master_key_id, count: count() })
        .from(workspaceKeys)
        .groupBy(workspaceKeys.master_key_id)
        .orderBy(asc(workspaceKeys.master_key_id));
    },

    /**
     * A batch of keys wrapped by the given (retired) master keys, locked for this
     * transaction; SKIP LOCKED lets several rotators share the work. `skip` leaves out
     * keys that could not be re-wrapped, so a damaged one cannot stall the rotation.
     */
    lockKeysUnder(masterKeyIds: string[], skip: string[], limit: number) {
      return db
        .select()
        .from(workspaceKeys)
        .where(
          and(
            inArray(workspaceKeys.master_key_id, masterKeyIds),
            skip.length > 0 ? notInArray(workspaceKeys.workspace_id, skip) : undefined,
          ),
        )
        .orderBy(asc(workspaceKeys.workspace_id))
        .limit(limit)
        .for('update', { skipLocked: true });
    },

    async rewrapWorkspaceKey(workspaceId: string, wrappedKey: string, masterKeyId: string) {
      await db
        .update(workspaceKeys)
        .set({ wrapped_key: wrappedKey, master_key_id: masterKeyId, rotated_at: sql`now()` })
        .where(eq(workspaceKeys.workspace_id, workspaceId));
    },

    // Credentials.

    /** Reserves an id before the insert, so the ciphertext can be bound to it. */
    async nextCredentialId(): Promise<number> {
      const result = await db.execute<{ id: number }>(sql`select nextval('credentials_id_seq')::int as id`);
      const row = rowsOf<{ id: number }>(result)[0];
      if (!row) throw new Error('no id from credentials_id_seq');
      return Number(row.id);
    },

    async insertCredential(values: typeof credentials.$inferInsert): Promise<CredentialRow> {
      const [row] = await db.insert(credentials).values(values).returning();
      if (!row) throw new Error('credential insert returned nothing');
      return row;
    },

    /** One credential; `lock` takes its row lock, which orders its audit chain. */
    async findCredential(workspaceId: string, id: number, lock = false): Promise<CredentialRow | undefined> {
      const query = db.select().from(credentials).where(credentialById(workspaceId, id));
      const [row] = lock ? await query.for('update') : await query;
      return row;
    },

    /**
     * Locks credentials for decrypted access, in id order so that concurrent batches
     * cannot deadlock, with their types' field lists. Not scoped by workspace: the
     * caller checks each row's workspace against its request.
     */
    lockCredentials(ids: number[]) {
      return db
        .select({
          credential: credentials,
          fields: credentialTypes.schema_definition,
          endpoint: credentialTypes.test_endpoint,
        })
        .from(credentials)
        .innerJoin(credentialTypes, eq(credentialTypes.id, credentials.credential_type_id))
        .where(inArray(credentials.id, ids))
        .orderBy(asc(credentials.id))
        .for('update', { of: credentials });
    },

    /**
     * The newest audit hash of each credential. Read in its own statement after the
     * locks are held, so it sees records committed by whoever held them before.
     */
    async lastAuditHashes(ids: number[]): Promise<Map<number, string>> {
      const rows = await db
        .selectDistinctOn([credentialAuditLogs.credential_id], {
          credential_id: credentialAuditLogs.credential_id,
          hash: credentialAuditLogs.hash,
        })
        .from(credentialAuditLogs)
        .where(inArray(credentialAuditLogs.credential_id, ids))
        .orderBy(credentialAuditLogs.credential_id, desc(credentialAuditLogs.id));
      return new Map(rows.map((row) => [row.credential_id, row.hash]));
    },

    /** By name: the active one first, then the newest; `environment` narrows when given. */
    async findCredentialByName(workspaceId: string, name: string, environment?: string) {
      const [row] = await db
        .select({ id: credentials.id })
        .from(credentials)
        .where(
          and(
            eq(credentials.workspace_id, workspaceId),
            eq(credentials.name, name),
            environment === undefined ? undefined : eq(credentials.environment, environment),
          ),
        )
        .orderBy(desc(credentials.is_active), desc(credentials.created_at), desc(credentials.id))
        .limit(1);
      return row;
    },

    async listCredentials(workspaceId: string, filter: CredentialFilter) {
      const { page, count } = listStatements.get(filter);
      const params = {
        workspaceId,
        typeId: filter.credential_type_id ?? 0,
        environment: filter.environment ?? '',
        isActive: filter.is_active ?? false,
        tag: JSON.stringify([filter.tag ?? '']),
        pattern: filter.q ? likePattern(filter.q) : '',
        now: filter.now,
        limit: filter.limit,
        offset: filter.offset,
      };
      return paginate(filter, await page.execute(params), async () => {
        const [result] = await count.execute(params);
        return result?.value ?? 0;
      });
    },

    async updateCredential(
      workspaceId: string,
      id: number,
      changes: Partial<typeof credentials.$inferInsert>,
    ): Promise<CredentialRow | undefined> {
      const [row] = await db
        .update(credentials)
        .set({ ...changes, updated_at: sql`now()` })
        .where(credentialById(workspaceId, id))
        .returning();
      return row;
    },

    async deleteCredential(workspaceId: string, id: number) {
      await db.delete(credentials).where(credentialById(workspaceId, id));
    },

    // Audit.

    async lastAuditHash(credentialId: number): Promise<string> {
      const [row] = await db
        .select({ hash: credentialAuditLogs.hash })
        .from(credentialAuditLogs)
        .where(eq(credentialAuditLogs.credential_id, credentialId))
        .orderBy(desc(credentialAuditLogs.id))
        .limit(1);
      return row?.hash ?? '';
    },

    /** Inserts audit records; ids follow the order given, which is chain order. */
    async insertAudit(...rows: NewAuditRow[]): Promise<void> {
      if (rows.length > 0) await db.insert(credentialAuditLogs).values(rows);
    },

    async listAudit(workspaceId: string, credentialId: number, filter: AuditFilter) {
      const where = and(
        eq(credentialAuditLogs.workspace_id, workspaceId),
        eq(credentialAuditLogs.credential_id, credentialId),
        filter.action ? eq(credentialAuditLogs.action, filter.action) : undefined,
        filter.from ? gte(credentialAuditLogs.created_at, filter.from) : undefined,
        filter.to ? lt(credentialAuditLogs.created_at, filter.to) : undefined,
        afterCursor(credentialAuditLogs.id, { after: filter.after, order: 'newest_first' }),
      );
      const rows = await db
        .select({ ...getTableColumns(credentialAuditLogs), total: totalCount() })
        .from(credentialAuditLogs)
        .where(where)
        .orderBy(desc(credentialAuditLogs.id))
        .limit(filter.limit)
        .offset(filter.offset);
      const page = await paginate(filter, rows, async () => {
        const [result] = await db.select({ value: count() }).from(credentialAuditLogs).where(where);
        return result?.value ?? 0;
      });
      return { ...page, next_cursor: nextCursorOf(page) };
    },

    /**
     * The workspace's credential audit records in a time range, by (time, id), after the last
     * one read: the vault's part of the workspace audit export, read in keyset batches.
     */
    auditRange(
      workspaceId: string,
      query: {
        from?: Date;
        to?: Date;
        /** Actions the vault records; any other matches nothing. */
        actions?: string[];
        after?: { created_at: Date; id: number };
        limit: number;
      },
    ) {
      const { after } = query;
      return db
        .select()
        .from(credentialAuditLogs)
        .where(
          and(
            eq(credentialAuditLogs.workspace_id, workspaceId),
            query.from ? gte(credentialAuditLogs.created_at, query.from) : undefined,
            query.to ? lt(credentialAuditLogs.created_at, query.to) : undefined,
            query.actions ? inArray(credentialAuditLogs.action, query.actions as AuditAction[]) : undefined,
            after
              ? sql`(${credentialAuditLogs.created_at}, ${credentialAuditLogs.id}) > (${after.created_at.toISOString()}::timestamptz, ${after.id})`
              : undefined,
          ),
        )
        .orderBy(asc(credentialAuditLogs.created_at), asc(credentialAuditLogs.id))
        .limit(query.limit);
    },

    /** The whole chain of a credential, oldest first, for verification. */
    chain(workspaceId: string, credentialId: number) {
      return db
        .select()
        .from(credentialAuditLogs)
        .where(
          and(
            eq(credentialAuditLogs.workspace_id, workspaceId),
            eq(credentialAuditLogs.credential_id, credentialId),
          ),
        )
        .orderBy(asc(credentialAuditLogs.id));
    },

    /** Copies a credential's audit records to the archive, which its deletion does not touch. */
    async archiveAudit(workspaceId: string, credentialId: number, credentialName: string) {
      await db.execute(sql`
        insert into ${credentialAuditArchive}
          (original_id, credential_id, workspace_id, action, user_id, ip_address, metadata, created_at, prev_hash, hash, credential_name)
        select id, credential_id, workspace_id, action, user_id, ip_address, metadata, created_at, prev_hash, hash, ${credentialName}
        from ${credentialAuditLogs}
        where workspace_id = ${workspaceId} and credential_id = ${credentialId}
        order by id`);
    },

    async listArchive(
      workspaceId: string,
      filter: { credential_id?: number; limit: number; offset: number },
    ) {
      const where = and(
        eq(credentialAuditArchive.workspace_id, workspaceId),
        filter.credential_id === undefined
          ? undefined
          : eq(credentialAuditArchive.credential_id, filter.credential_id),
      );
      const rows = await db
        .select({ ...getTableColumns(credentialAuditArchive), total: totalCount() })
        .from(credentialAuditArchive)
        .where(where)
        .orderBy(desc(credentialAuditArchive.id))
        .limit(filter.limit)
        .offset(filter.offset);
      return paginate(filter, rows, async () => {
        const [result] = await db.select({ value: count() }).from(credentialAuditArchive).where(where);
        return result?.value ?? 0;
      });
    },
  };
}

export type CredentialsRepository = ReturnType<typeof createCredentialsRepository>;
