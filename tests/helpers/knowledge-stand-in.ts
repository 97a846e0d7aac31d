import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { Db } from '../../src/db/transaction.ts';

/**
 * The columns of the knowledge module's `sources` and `documents` tables that search reads,
 * for tests written before that module's tables exist (knowledge-shared.md). Created only
 * when absent, so the same tests run on the real tables once they are there.
 */
export async function ensureKnowledgeTables(db: Db): Promise<void> {
  await db.execute(sql`create table if not exists sources (
    id uuid primary key, workspace_id uuid not null, name varchar(255) not null)`);
  await db.execute(sql`create table if not exists documents (
    id uuid primary key, workspace_id uuid not null, source_id uuid not null,
    title text not null, filename varchar(1024) not null, tags text[] not null default '{}')`);
}

/** A source row as the knowledge module would have made it. */
export async function insertSource(db: Db, workspaceId: string, name = `source ${randomUUID()}`) {
  const id = randomUUID();
  await db.execute(sql`insert into sources (id, workspace_id, name) values (${id}, ${workspaceId}, ${name})`);
  return { id, name };
}

/** A document row as the knowledge module would have made it. */
export async function insertDocument(
  db: Db,
  workspaceId: string,
  sourceId: string,
  fields: { title?: string; filename?: string; tags?: string[] } = {},
) {
  const id = randomUUID();
  const title = fields.title ?? `document ${id.slice(0, 8)}`;
  await db.execute(sql`insert into documents (id, workspace_id, source_id, title, filename, tags)
    values (${id}, ${workspaceId}, ${sourceId}, ${title}, ${fields.filename ?? `${title}.md`},
      ${sql.param(fields.tags ?? [])}::text[])`);
  return { id, title };
}
