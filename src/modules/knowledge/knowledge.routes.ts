import multipart from '@fastify/multipart';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { abortedWhenClientLeaves } from '../../http/client-gone.ts';
import { bodyMayBeOmitted } from '../../http/optional-body.ts';
import { IdParams, Json, LocationHeader, NoContent } from '../../http/schemas.ts';
import { mapItems } from '../../lib/page.ts';
import {
  CreateSourceBody,
  DocumentPage,
  DocumentSchema,
  ListDocumentsQuery,
  ListSourcesQuery,
  ReindexAnswer,
  ReindexBody,
  SourcePage,
  SourceSchema,
  UpdateSourceBody,
  UploadForm,
} from './knowledge.schemas.ts';
import { type KnowledgeService, sourceView } from './knowledge.service.ts';
import { notMultipart, readUploadForm } from './upload-form.ts';

const sourceTags = ['Knowledge sources'];
const documentTags = ['Documents'];

export interface KnowledgeRoutesOptions {
  knowledge: KnowledgeService;
  /** `UPLOAD_MAX_BYTES`: the largest uploaded file; larger is 413. */
  uploadMaxBytes: number;
}

/** Sources, documents and uploads (spec 4.6). */
export const knowledgeRoutes: FastifyPluginAsyncTypebox<KnowledgeRoutesOptions> = async (
  app,
  { knowledge, uploadMaxBytes },
) => {
  app.get(
    '/sources',
    {
      schema: {
        operationId: 'listSources',
        tags: sourceTags,
        summary: 'List sources',
        description:
          'Sources of the current workspace, newest first, each with its document count and indexing progress. Filters: kind, q (name, case-insensitive).',
        querystring: ListSourcesQuery,
        response: { 200: Json('A page of sources', SourcePage) },
      },
    },
    async (request) => {
      return mapItems(await knowledge.listSources(request.caller, request.query), sourceView);
    },
  );

  app.post(
    '/sources',
    {
      schema: {
        operationId: 'createSource',
        tags: sourceTags,
        summary: 'Create a source',
        description:
          'A named collection of documents. `kind` upload (documents arrive by upload), directory (`directory.path`, a folder relative to the tenant’s folder on the server, SOURCES_ROOT/<tenant id>, read recursively with include/exclude globs; a path leaving it is refused), or url (`url.urls`, pages fetched through the outbound address guard from `url.allow_hosts`). `chunking` and `embedding` default as docs/knowledge.md says. A directory or URL source starts its first indexing run at once. A taken name is 409 `duplicate_source`.',
        body: CreateSourceBody,
        response: { 201: Json('The created source', SourceSchema, LocationHeader('the source')) },
      },
    },
    async (request, reply) => {
      const source = await knowledge.createSource(request.caller, request.body);
      return reply.status(201).header('location', `/api/sources/${source.id}`).send(sourceView(source));
    },
  );

  app.get(
    '/sources/:id',
    {
      schema: {
        operationId: 'getSource',
        tags: sourceTags,
        summary: 'Get a source',
        description: 'One source with its indexing progress; another workspace’s source is 404.',
        params: IdParams,
        response: { 200: Json('The source', SourceSchema) },
      },
    },
    async (request) => sourceView(await knowledge.getSource(request.caller, request.params.id)),
  );

  app.put(
    '/sources/:id',
    {
      schema: {
        operationId: 'updateSource',
        tags: sourceTags,
        summary: 'Update a source',
        description:
          'Partial update: only the fields sent change. New `directory` or `url` settings start a sync; new `chunking` or `embedding` settings start a rebuild of every document into a new generation (searches answer from the current one until it completes). While a run is under way the change is refused with 409 `source_indexing`. `kind` cannot change.',
        params: IdParams,
        body: UpdateSourceBody,
        response: { 200: Json('The updated source', SourceSchema) },
      },
    },
    async (request) =>
      sourceView(await knowledge.updateSource(request.caller, request.params.id, request.body)),
  );

  app.post(
    '/sources/:id/index',
    {
      schema: {
        operationId: 'indexSource',
        tags: sourceTags,
        summary: 'Index a source',
        description:
          'Starts an indexing run in the background and answers 202 with the source: a directory or URL source reads its folder or pages again (new, changed and removed documents); an upload source re-chunks and re-embeds its documents. Searches answer from the current index until the run completes. Progress is in `indexing`; the end is a `source.indexed` activity event. 409 `source_indexing` while a run is under way.',
        params: IdParams,
        response: {
          202: Json('The source, indexing in the background', SourceSchema, LocationHeader('the source')),
        },
      },
    },
    async (request, reply) => {
      const source = await knowledge.indexSource(request.caller, request.params.id);
      return reply.status(202).header('location', `/api/sources/${source.id}`).send(sourceView(source));
    },
  );

  app.delete(
    '/sources/:id',
    {
      schema: {
        operationId: 'deleteSource',
        tags: sourceTags,
        summary: 'Delete a source',
        description:
          'Deletes the source with its documents, their stored text, chunks and vectors, in one transaction.',
        params: IdParams,
        response: { 204: NoContent('The source and its documents are deleted') },
      },
    },
    async (request, reply) => {
      await knowledge.deleteSource(request.caller, request.params.id);
      return reply.status(204).send(null);
    },
  );

  app.get(
    '/documents',
    {
      schema: {
        operationId: 'listDocuments',
        tags: documentTags,
        summary: 'List documents',
        description:
          'Documents of the current workspace, newest first. Filters: source_id, q (title or filename, case-insensitive), tag, status.',
        querystring: ListDocumentsQuery,
        response: { 200: Json('A page of documents', DocumentPage) },
      },
    },
    async (request) => knowledge.listDocuments(request.caller, request.query),
  );

  app.get(
    '/documents/:id',
    {
      schema: {
        operationId: 'getDocument',
        tags: documentTags,
        summary: 'Get a document',
        description: 'One document with its processing status; another workspace’s document is 404.',
        params: IdParams,
        response: { 200: Json('The document', DocumentSchema) },
      },
    },
    async (request) => knowledge.getDocument(request.caller, request.params.id),
  );

  app.delete(
    '/documents/:id',
    {
      schema: {
        operationId: 'deleteDocument',
        tags: documentTags,
        summary: 'Delete a document',
        description: 'Deletes the document with its stored text and its chunks, in one transaction.',
        params: IdParams,
        response: { 204: NoContent('The document is deleted') },
      },
    },
    async (request, reply) => {
      await knowledge.deleteDocument(request.caller, request.params.id);
      return reply.status(204).send(null);
    },
  );

  app.post(
    '/documents/reindex',
    {
      preValidation: bodyMayBeOmitted,
      schema: {
        operationId: 'reindexDocuments',
        tags: documentTags,
        summary: 'Reindex documents',
        description:
          'Re-chunks and re-embeds stored documents in the background (202), with progress on each source: `document_ids` in place, or a whole source (`source_id`; neither field: every source of the workspace) into a new generation that searches switch to only once it is complete. Every run starts or none: 409 `source_indexing` while one is under way. A listed id that is not a document of the workspace (or of `source_id`) is a 400 naming its position.',
        body: ReindexBody,
        response: { 202: Json('The documents queued for reindexing', ReindexAnswer) },
      },
    },
    async (request, reply) => {
      const sources = await knowledge.reindex(request.caller, request.body);
      return reply.status(202).send({ sources: sources.map(sourceView) });
    },
  );

  // Multipart parsing belongs to the upload route only: registered in a context of its own, so
  // every other route keeps answering 415 to a form.
  await app.register(async (uploads) => {
    await uploads.register(multipart, { throwFileSizeLimit: true });
    uploads.addContentTypeParser('*', (_request, _payload, done) => done(notMultipart(), undefined));
    uploads.post(
      '/documents/upload',
      {
        schema: {
          operationId: 'uploadDocument',
          tags: documentTags,
          summary: 'Upload a document',
          description:
            'multipart/form-data with `file` (PDF, Markdown, HTML, text, JSON, CSV or source code; at most UPLOAD_MAX_BYTES, else 413), and optionally `source_id` (an upload source; the workspace’s default upload source, created on first use, when absent), `tags` (repeated or comma-separated) and `metadata` (a JSON object). The text is extracted at once: an unknown type, or a file lying about its type, is 415; an empty, corrupt or text-less file is 422; nothing is stored then. Otherwise 201 with the document `processing`; chunking and embedding follow in the background (`processed` or `failed` with the reason). The same bytes in the same source answer the existing document with 200.',
          consumes: ['multipart/form-data'],
          body: UploadForm,
          response: {
            200: Json(
              'The document already stored with the same content',
              DocumentSchema,
              LocationHeader('the document'),
            ),
            201: Json(
              'The stored document, processing: chunking and embedding follow in the background',
              DocumentSchema,
              LocationHeader('the document'),
            ),
          },
        },
        // The form is read part by part in the handler, not parsed into a body: the schema
        // above documents it, and `readUploadForm` checks every field.
        validatorCompiler: () => () => true,
      },
      async (request, reply) => {
        const form = await readUploadForm(request, uploadMaxBytes);
        // Extraction stops when the client goes away before the answer.
        const { document, created } = await knowledge.upload(
          request.caller,
          form,
          abortedWhenClientLeaves(reply),
        );
        return reply
          .status(created ? 201 : 200)
          .header('location', `/api/documents/${document.id}`)
          .send(document);
      },
    );
  });
};
