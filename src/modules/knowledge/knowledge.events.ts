import type { ActivityInput } from '../activity/activity.service.ts';
import type { DocumentRow, SourceRow } from './knowledge.repository.ts';

const documentData = (document: DocumentRow) => ({
  source_id: document.source_id,
  title: document.title,
  filename: document.filename,
});

/** The feed's line for an accepted upload: `Document “guide.md” uploaded`. */
export const documentUploaded = (document: DocumentRow): ActivityInput => ({
  workspaceId: document.workspace_id,
  kind: 'document.uploaded',
  subjectType: 'document',
  subjectId: document.id,
  message: `Document “${document.filename}” uploaded`,
  data: { ...documentData(document), size_bytes: document.size_bytes, format: document.format },
  actor: document.created_by ?? undefined,
});

/** A document whose chunks became searchable. */
export const documentProcessed = (document: DocumentRow): ActivityInput => ({
  workspaceId: document.workspace_id,
  kind: 'document.processed',
  subjectType: 'document',
  subjectId: document.id,
  message: `Document “${document.filename}” processed`,
  data: { ...documentData(document), chunk_count: document.chunk_count },
});

/** A document that could not be processed, with the reason. */
export const documentFailed = (document: DocumentRow): ActivityInput => ({
  workspaceId: document.workspace_id,
  kind: 'document.failed',
  subjectType: 'document',
  subjectId: document.id,
  message: `Document “${document.filename}” failed: ${document.failure_reason ?? 'unknown reason'}`,
  data: { ...documentData(document), failure_reason: document.failure_reason },
});

const runData = (source: SourceRow) => ({
  name: source.name,
  scope: source.index_scope,
  generation: source.generation,
  documents_total: source.documents_total,
  documents_done: source.documents_done,
  documents_failed: source.documents_failed,
});

/** The end of a source's indexing run, with its counts. */
export const sourceIndexed = (source: SourceRow): ActivityInput => ({
  workspaceId: source.workspace_id,
  kind: 'source.indexed',
  subjectType: 'source',
  subjectId: source.id,
  message: `Source “${source.name}” indexed: ${source.documents_done} documents, ${source.documents_failed} failed`,
  data: runData(source),
});

/** A run that gave up, with the error. */
export const sourceIndexFailed = (source: SourceRow): ActivityInput => ({
  workspaceId: source.workspace_id,
  kind: 'source.index_failed',
  subjectType: 'source',
  subjectId: source.id,
  message: `Source “${source.name}” indexing failed: ${source.index_error ?? 'unknown error'}`,
  data: { ...runData(source), error: source.index_error },
});
