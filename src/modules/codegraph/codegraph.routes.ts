import multipart from '@fastify/multipart';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest, FastifySchemaCompiler } from 'fastify';
import type { Static } from 'typebox';
import Value from 'typebox/value';
import { AppError, type FieldError, invalidFields } from '../../errors.ts';
import { Json, NoContent } from '../../http/schemas.ts';
import { createValidatorCompiler } from '../../http/validation.ts';
import {
  IndexBody,
  IndexForm,
  ListProjectsQuery,
  ProjectName,
  ProjectPage,
  ProjectParams,
  ProjectSchema,
  SearchQuerySchema,
  SearchResponse,
} from './codegraph.schemas.ts';
import type { CodegraphService, IndexSource } from './codegraph.service.ts';

const tags = ['Code graph'];

/** Bytes a multipart request may carry beyond its file (boundaries, part headers, the name field). */
const FORM_OVERHEAD_BYTES = 64 * 1024;

/**
 * The route's validator: JSON bodies as everywhere; a multipart body is left to the handler,
 * which checks its fields while streaming (a file cannot be validated by a JSON schema).
 */
function uploadAwareValidator(): FastifySchemaCompiler<unknown> {
  const standard = createValidatorCompiler();
  return (route) =>
    route.httpPart === 'body' && route.contentType === 'multipart/form-data' ? () => true : standard(route);
}

/** Indexing projects (from a directory under the tenant's SOURCES_ROOT subtree or an uploaded archive) and searching them. */
export const codegraphRoutes: FastifyPluginAsyncTypebox<{
  codegraph: CodegraphService;
  uploadMaxBytes: number;
}> = async (app, { codegraph, uploadMaxBytes }) => {
  // Encapsulated: only these routes accept multipart bodies.
  await app.register(multipart, {
    limits: { fileSize: uploadMaxBytes, files: 1, fields: 4, fieldSize: 1024, parts: 5, headerPairs: 50 },
    throwFileSizeLimit: true,
  });

  app.post(
    '/codegraph/index',
    {
      schema: {
        operationId: 'indexCodeProject',
        tags,
        summary: 'Index a code project',
        description:
          'Parses a project’s TypeScript/JavaScript, Python, Go and Java files (tree-sitter) into symbols and edges ' +
          '(defines, imports, calls, extends, implements), replacing its previous graph atomically. The source is ' +
          'either `{"project", "source": {"directory"}}` (JSON; a directory relative to the tenant’s folder, SOURCES_ROOT/<tenant id>) ' +
          'or a multipart form with `project` and an `archive` file (.zip, .tar.gz, .tar; at most UPLOAD_MAX_BYTES; ' +
          'entries with `..`, absolute paths or links, and bombs, are refused with 422). Up to ' +
          'CODEGRAPH_SYNC_MAX_BYTES of source is indexed within the request (200, the project ready); more is ' +
          'indexed in the background (202, the project `indexing`; activity `codegraph.indexed` or `codegraph.failed`).',
        body: {
          content: {
            'application/json': { schema: IndexBody },
            'multipart/form-data': { schema: IndexForm },
          },
        },
        response: {
          200: Json('The indexed project', ProjectSchema),
          202: Json('The project, indexing in the background', ProjectSchema),
        },
      },
      validatorCompiler: uploadAwareValidator(),
    },
    async (request, reply) => {
      const { project, source } = request.isMultipart()
        ? await readIndexForm(request, uploadMaxBytes)
        : fromJson(request.body as Static<typeof IndexBody> | undefined);
      const outcome = await codegraph.index(request.caller, project, source);
      return reply.status(outcome.background ? 202 : 200).send(outcome.project);
    },
  );

  app.get(
    '/codegraph/search',
    {
      schema: {
        operationId: 'searchCode',
        tags,
        summary: 'Search a code project',
        description:
          'Symbols of the project’s graph matching `q`, ranked: exact name (or `Class.method`), prefix, fuzzy ' +
          '(contained, or similar by pg_trgm trigrams), then words found in signatures and doc comments; ties go to ' +
          'the symbol with more callers. Each result has its callers and callees (up to 20 each) and the names it ' +
          'calls that resolve to nothing in the project. A project still building its first graph answers no results.',
        querystring: SearchQuerySchema,
        response: { 200: Json('The matching symbols and their neighbours', SearchResponse) },
      },
    },
    async (request) => {
      const { project, ...query } = request.query;
      return codegraph.search(request.caller, project, query);
    },
  );

  app.get(
    '/codegraph/projects',
    {
      schema: {
        operationId: 'listCodeProjects',
        tags,
        summary: 'List code projects',
        description: 'The workspace’s code graph projects by name, with their status and figures.',
        querystring: ListProjectsQuery,
        response: { 200: Json('A page of code projects', ProjectPage) },
      },
    },
    async (request) => codegraph.listProjects(request.caller, request.query),
  );

  app.get(
    '/codegraph/projects/:name',
    {
      schema: {
        operationId: 'getCodeProject',
        tags,
        summary: 'Get a code project',
        description: 'One project: status (`indexing`, `ready`, `failed` with `error`), source and figures.',
        params: ProjectParams,
        response: { 200: Json('The code project', ProjectSchema) },
      },
    },
    async (request) => codegraph.getProject(request.caller, request.params.name),
  );

  app.delete(
    '/codegraph/projects/:name',
    {
      schema: {
        operationId: 'deleteCodeProject',
        tags,
        summary: 'Delete a code project',
        description: 'Deletes the project and its graph.',
        params: ProjectParams,
        response: { 204: NoContent('The project is deleted') },
      },
    },
    async (request, reply) => {
      await codegraph.deleteProject(request.caller, request.params.name);
      return reply.status(204).send(null);
    },
  );
};

/**
 * The JSON body, validated by its schema when it came with its media type. A request with no
 * body has none to validate (the schema is per media type), so it is refused here.
 */
function fromJson(body: Static<typeof IndexBody> | undefined): { project: string; source: IndexSource } {
  if (body === undefined || body === null) {
    throw invalidFields([
      {
        field: 'body',
        message:
          'is required: JSON {project, source: {directory}} or a multipart form with project and archive',
      },
    ]);
  }
  return { project: body.project, source: { directory: body.source.directory } };
}

const projectName = ProjectName();

/**
 * Reads the form's `project` field and `archive` file (at most `maxBytes`), naming every field
 * at fault. Parser failures (a broken body, too many parts, a file too large) become 4xx.
 */
async function readIndexForm(
  request: FastifyRequest,
  maxBytes: number,
): Promise<{ project: string; source: IndexSource }> {
  const declared = Number(request.headers['content-length'] ?? 0);
  if (declared > maxBytes + FORM_OVERHEAD_BYTES) throw archiveTooLarge(maxBytes);
  let project: string | undefined;
  let archive: { bytes: Buffer; filename: string | null } | undefined;
  const errors: FieldError[] = [];
  try {
    for await (const part of request.parts()) {
      if (part.type === 'file') {
        if (part.fieldname !== 'archive' || archive) {
          part.file.resume();
          errors.push({
            field: `body.${part.fieldname}`,
            message: 'is not expected: send one file, as "archive"',
          });
          continue;
        }
        archive = { bytes: await part.toBuffer(), filename: part.filename || null };
      } else if (part.fieldname === 'project') {
        project = String(part.value);
      } else {
        errors.push({ field: `body.${part.fieldname}`, message: 'is not an allowed field' });
      }
    }
  } catch (error) {
    throw formError(error, maxBytes);
  }
  if (project === undefined) errors.push({ field: 'body.project', message: 'is required' });
  else if (!Value.Check(projectName, project)) {
    errors.push({ field: 'body.project', message: 'must be 1 to 100 letters, digits, ".", "_" or "-"' });
  }
  if (!archive) errors.push({ field: 'body.archive', message: 'is required (a .zip, .tar.gz or .tar file)' });
  if (errors.length > 0 || project === undefined || !archive) throw invalidFields(errors);
  return { project, source: { archive: archive.bytes, filename: archive.filename } };
}

const archiveTooLarge = (maxBytes: number): AppError =>
  new AppError(413, 'payload_too_large', `the archive is larger than the limit of ${maxBytes} bytes`, [
    { field: 'body.archive', message: `must be at most ${maxBytes} bytes` },
  ]);

/** What a multipart parser failure means for the client. */
function formError(error: unknown, maxBytes: number): AppError {
  if (error instanceof AppError) return error;
  const code = (error as { code?: string }).code;
  if (code === 'FST_REQ_FILE_TOO_LARGE') return archiveTooLarge(maxBytes);
  if (code === 'FST_PARTS_LIMIT' || code === 'FST_FILES_LIMIT' || code === 'FST_FIELDS_LIMIT') {
    return invalidFields([
      { field: 'body', message: 'has too many parts: send "project" and one "archive"' },
    ]);
  }
  return invalidFields([{ field: 'body', message: 'is not a readable multipart/form-data body' }]);
}
