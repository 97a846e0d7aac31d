import { randomUUID } from 'node:crypto';
import { documents, sources } from '../../src/db/schema/knowledge.ts';
import type { Db } from '../../src/db/transaction.ts';

/**
 * Source and document rows written straight into the knowledge module's tables, for tests and
 * benchmarks of the search index that index chunks themselves (through the retrieval service)
 * rather than through uploads and their background processing.
 */

/** An upload source, keyword-only, as `POST /api/sources` makes it. */
export async function insertSource(db: Db, workspaceId: string, name = `source ${randomUUID()}`) {
  const [row] = await db
    .insert(sources)
    .values({
      workspace_id: workspaceId,
      name,
      kind: 'upload',
      chunking: { target_tokens: 500, overlap_tokens: 50 },
      embedding: { provider: 'none', model: 'none' },
    })
    .returning({ id: sources.id, name: sources.name });
  if (!row) throw new Error('insertSource: no row');
  return row;
}

/** A processed document of the source, as an upload ends up once its chunks are written. */
export async function insertDocument(
  db: Db,
  workspaceId: string,
  sourceId: string,
  fields: { title?: string; filename?: string; tags?: string[] } = {},
) {
  const id = randomUUID();
  const title = fields.title ?? `document ${id.slice(0, 8)}`;
  await db.insert(documents).values({
    id,
    workspace_id: workspaceId,
    source_id: sourceId,
    title,
    filename: fields.filename ?? `${title}.md`,
    size_bytes: 0,
    status: 'processed',
    tags: fields.tags ?? [],
  });
  return { id, title };
}
