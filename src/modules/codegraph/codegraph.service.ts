import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Caller } from '../../caller.ts';
import { afterCommit, type Db, inTransaction } from '../../db/transaction.ts';
import { AppError, invalid, notFound } from '../../errors.ts';
import { ArchiveError } from '../../lib/archive/read-archive.ts';
import { PathOutsideRootError, resolveWithinRoot } from '../../lib/fs/within-root.ts';
import type { Logger } from '../../logger.ts';
import type { ActivityService } from '../activity/activity.service.ts';
import { codegraphFailed, codegraphIndexed, codegraphStarted } from './codegraph.events.ts';
import {
  createCodegraphRepository,
  type IndexProgress,
  type IndexStats,
  type NewEdge,
  type NewSymbol,
  type ProjectRow,
  type ProjectSource,
  type SearchQuery,
} from './codegraph.repository.ts';
import { buildCodeGraph, type CodeGraph } from './graph/build-graph.ts';
import { parseSource } from './parse/code-parser.ts';
import type { ParsedFile } from './parse/types.ts';
import {
  archiveSources,
  DEFAULT_SOURCE_LIMITS,
  directorySources,
  SourceError,
  type SourceLimits,
  type SourceSet,
} from './source-files.ts';

export type { ProjectRow, SearchHit } from './codegraph.repository.ts';
export { SYMBOL_KINDS } from './parse/types.ts';

/** What a background index job carries; the project row is the truth it reads. */
export interface IndexJobPayload {
  project_id: string;
  workspace_id: string;
  generation: number;
  /** Who asked, for the activity feed. */
  requested_by?: string;
}

export interface CodegraphDependencies {
  db: Db;
  activity: Pick<ActivityService, 'record'>;
  /** Hands a background index to the queue; called after the request's commit. */
  enqueue(payload: IndexJobPayload): Promise<void>;
  /**
   * The folder a workspace's directories are named under: its tenant's own subtree of
   * `SOURCES_ROOT`, so one tenant cannot index another's code. Absent, none can be.
   */
  sourcesRootOf?: (workspaceId: string) => Promise<string>;
  /** `CODEGRAPH_SYNC_MAX_BYTES`: sources up to this size are indexed within the request. */
  syncMaxBytes: number;
  limits?: SourceLimits;
  log: Logger;
}

/** Where an index reads from, as the route received it. */
export type IndexSource = { directory: string } | { archive: Buffer; filename: string | null };

export interface IndexOutcome {
  project: ProjectRow;
  /** True when a job indexes in the background (202); false when the graph is ready (200). */
  background: boolean;
}

/** Parse in turns of at most this long, so requests keep being served while a project is parsed. */
const PARSE_SLICE_MS = 20;
/** How often an index in progress records its files done (`progress` of the project). */
const PROGRESS_EVERY_MS = 1000;

/**
 * The code graph: index a project from a directory under the tenant's `SOURCES_ROOT` subtree or an uploaded
 * archive, and search its symbols with their callers and callees.
 *
 * An index writes a new generation of the project's graph beside the one searches read, then
 * makes it the active one in one statement (and only if no newer graph is active), then drops
 * the old rows: a search sees the old graph or the new one, never a mixture. Small projects
 * are indexed within the request; larger ones by the `codegraph.index` job, whose truth is the
 * project row (and, for an archive, the stored upload).
 */
export function createCodegraphService(deps: CodegraphDependencies) {
  const { db } = deps;
  const repo = createCodegraphRepository(db);
  const limits = deps.limits ?? DEFAULT_SOURCE_LIMITS;

  async function findProject(workspaceId: string, name: string): Promise<ProjectRow> {
    const project = await repo.findProject(workspaceId, name);
    if (!project) throw notFound('code project', name);
    return project;
  }

  /** The vetted real path of a directory named relative to the workspace's tenant subtree. */
  async function sourceDirectory(workspaceId: string, directory: string): Promise<string> {
    if (!deps.sourcesRootOf) {
      throw new AppError(
        409,
        'sources_root_not_configured',
        'no server-side directory can be read: the operator has not set SOURCES_ROOT (upload an archive instead)',
      );
    }
    try {
      return await resolveWithinRoot(await deps.sourcesRootOf(workspaceId), directory, 'directory');
    } catch (error) {
      if (error instanceof PathOutsideRootError) throw invalid('body.source.directory', error.message);
      throw error;
    }
  }

  async function openSources(
    workspaceId: string,
    source: IndexSource,
    signal?: AbortSignal,
  ): Promise<SourceSet> {
    const set =
      'directory' in source
        ? await directorySources(await sourceDirectory(workspaceId, source.directory), limits, signal)
        : await archiveSources(source.archive, limits, signal);
    if (set.files === 0) {
      throw new SourceError(
        'no_source_files',
        'no TypeScript, JavaScript, Python, Go or Java source file was found (dependencies, build output and hidden folders are skipped)',
      );
    }
    return set;
  }

  /**
   * Parses, resolves and writes generation `generation` of the project, then makes it active.
   * Answers the figures, and whether it became active (false: a newer graph already was).
   */
  async function build(
    project: ProjectRow,
    generation: number,
    sources: SourceSet,
    actor: string | undefined,
    signal?: AbortSignal,
  ): Promise<{ activated: boolean; stats: IndexStats }> {
    const started = performance.now();
    const progress = (phase: IndexProgress['phase'], filesDone: number) =>
      repo.setProgress(project.workspace_id, project.id, generation, {
        phase,
        files_done: filesDone,
        files_total: sources.files,
      });
    await progress('parsing', 0);
    const parsed = await parseAll(sources, signal, (filesDone) => progress('parsing', filesDone));
    const graph = buildCodeGraph(parsed);
    try {
      await progress('writing', sources.files);
      await writeGraph(project, generation, graph);
      const stats = statsOf(sources, parsed, graph, Math.round(performance.now() - started));
      const activated = await inTransaction(db, async (tx) => {
        const made = await createCodegraphRepository(tx).activate(
          project.workspace_id,
          project.id,
          generation,
          stats,
        );
        if (made) await deps.activity.record(tx, codegraphIndexed(project, stats, actor));
        return made;
      });
      // The replaced graph (and any left by an interrupted index) goes; or this one, if superseded.
      await repo.removeGenerations(
        project.workspace_id,
        project.id,
        activated ? { below: generation } : { only: generation },
      );
      return { activated, stats };
    } catch (error) {
      await repo.removeGenerations(project.workspace_id, project.id, { only: generation }).catch(() => {});
      throw error;
    }
  }

  async function writeGraph(project: ProjectRow, generation: number, graph: CodeGraph): Promise<void> {
    const ids = await repo.allocateSymbolIds(graph.symbols.length);
    const idOf = (index: number | null) => (index === null ? null : (ids[index] as number));
    const base = { project_id: project.id, workspace_id: project.workspace_id, generation };
    await repo.insertSymbols(
      graph.symbols.map(
        (symbol, index): NewSymbol => ({
          ...base,
          id: ids[index] as number,
          kind: symbol.kind,
          name: symbol.name,
          qualified_name: symbol.qualifiedName,
          file: symbol.file,
          language: symbol.language,
          start_line: symbol.startLine,
          end_line: symbol.endLine,
          signature: symbol.signature,
          doc: symbol.doc,
          parent_id: idOf(symbol.parent),
          caller_count: symbol.callerCount,
        }),
      ),
    );
    await repo.insertEdges(
      graph.edges.map(
        (edge): NewEdge => ({
          ...base,
          kind: edge.kind,
          source_id: idOf(edge.source),
          target_id: idOf(edge.target),
          file: edge.file,
          line: edge.line,
          target_name: edge.targetName,
          module: edge.module,
          target_file: edge.targetFile,
          resolution: edge.resolution,
          occurrences: edge.occurrences,
        }),
      ),
    );
  }

  /** Records a background index's failure (if still the latest request) with its activity event. */
  async function recordFailure(project: ProjectRow, generation: number, message: string, actor?: string) {
    await inTransaction(db, async (tx) => {
      if (
        await createCodegraphRepository(tx).markFailed(project.workspace_id, project.id, generation, message)
      ) {
        await deps.activity.record(tx, codegraphFailed(project, message, actor));
      }
    });
  }

  return {
    /**
     * Indexes `name` from `source`, creating the project if it is new. The source is checked
     * and counted first (a refused directory or archive changes nothing); then up to
     * `syncMaxBytes` of source is indexed at once, more by a background job.
     */
    async index(
      caller: Pick<Caller, 'userId' | 'workspaceId'>,
      name: string,
      source: IndexSource,
    ): Promise<IndexOutcome> {
      const sources = await openSources(caller.workspaceId, source).catch((error: unknown) => {
        throw toAppError(error) ?? error;
      });
      const described: ProjectSource =
        'directory' in source
          ? { kind: 'directory', directory: source.directory }
          : { kind: 'archive', filename: source.filename, bytes: source.archive.length };
      if (sources.bytes > deps.syncMaxBytes) {
        const project = await inTransaction(db, async (tx) => {
          const txRepo = createCodegraphRepository(tx);
          const begun = await txRepo.beginIndex(
            caller.workspaceId,
            name,
            described,
            caller.userId,
            sources.files,
          );
          await deps.activity.record(tx, codegraphStarted(begun, sources.files, caller.userId));
          if ('archive' in source) {
            await txRepo.saveUpload(caller.workspaceId, begun.id, begun.last_generation, source.archive);
          }
          const payload = {
            project_id: begun.id,
            workspace_id: begun.workspace_id,
            generation: begun.last_generation,
            requested_by: caller.userId,
          };
          afterCommit(tx, () => {
            deps
              .enqueue(payload)
              .catch((error: unknown) =>
                deps.log.warn(
                  { err: error, project_id: begun.id },
                  'the queue did not take the index; the next worker start hands it over',
                ),
              );
          });
          return begun;
        });
        return { project, background: true };
      }
      const project = await repo.beginIndex(
        caller.workspaceId,
        name,
        described,
        caller.userId,
        sources.files,
      );
      try {
        await build(project, project.last_generation, sources, caller.userId);
      } catch (error) {
        await repo
          .markFailed(
            project.workspace_id,
            project.id,
            project.last_generation,
            'indexing failed unexpectedly',
          )
          .catch(() => {});
        throw toAppError(error) ?? error;
      }
      return { project: await findProject(caller.workspaceId, name), background: false };
    },

    /**
     * The `codegraph.index` job: builds the requested generation unless a newer request
     * superseded it. A refused source ends the project `failed` with the reason; an abort
     * (the process stops, the job times out) is rethrown for the queue to hand back.
     */
    async runIndexJob(payload: IndexJobPayload, signal: AbortSignal): Promise<void> {
      const project = await repo.findProjectById(payload.workspace_id, payload.project_id);
      if (!project) return;
      const { generation } = payload;
      const superseded = project.last_generation !== generation || project.active_generation >= generation;
      if (superseded) {
        await repo.removeUploads(project.workspace_id, project.id, generation);
        return;
      }
      try {
        const source: IndexSource =
          project.source.kind === 'directory'
            ? { directory: project.source.directory }
            : {
                archive: await uploadOf(project, generation),
                filename: project.source.filename,
              };
        const sources = await openSources(project.workspace_id, source, signal);
        // Rows a previous, interrupted attempt at this generation may have left.
        await repo.removeGenerations(project.workspace_id, project.id, { only: generation });
        await build(project, generation, sources, payload.requested_by, signal);
      } catch (error) {
        if (signal.aborted) throw error;
        const message = failureMessage(error);
        if (message === undefined) {
          deps.log.error({ err: error, project_id: project.id }, 'a background code graph index failed');
        }
        await recordFailure(
          project,
          generation,
          message ?? 'indexing failed unexpectedly',
          payload.requested_by,
        );
      }
      await repo.removeUploads(project.workspace_id, project.id, generation);
    },

    /** Ends a background index that ran out of time: `failed`, with the reason. */
    async failIndex(payload: IndexJobPayload, message: string): Promise<void> {
      const project = await repo.findProjectById(payload.workspace_id, payload.project_id);
      if (!project) return;
      await repo.removeGenerations(project.workspace_id, project.id, { only: payload.generation });
      await recordFailure(project, payload.generation, message, payload.requested_by);
      await repo.removeUploads(project.workspace_id, project.id, payload.generation);
    },

    /** Hands every unfinished index to the queue again (a worker's start; the queue may have lost them). */
    async recoverUnfinished(): Promise<number> {
      const pending = await repo.unfinishedIndexes();
      for (const project of pending) {
        await deps.enqueue({
          project_id: project.id,
          workspace_id: project.workspace_id,
          generation: project.generation,
        });
      }
      return pending.length;
    },

    async getProject(caller: Pick<Caller, 'workspaceId'>, name: string): Promise<ProjectRow> {
      return findProject(caller.workspaceId, name);
    },

    listProjects: (caller: Pick<Caller, 'workspaceId'>, page: { limit: number; offset: number }) =>
      repo.listProjects(caller.workspaceId, page),

    async deleteProject(caller: Pick<Caller, 'workspaceId'>, name: string): Promise<void> {
      if (!(await repo.deleteProject(caller.workspaceId, name))) throw notFound('code project', name);
    },

    /**
     * The project's symbols best matching `q` (exact name, prefix, fuzzy, then text of
     * signatures and docs), each with its callers and callees. A project still waiting for
     * its first graph answers no results, with its status.
     */
    async search(caller: Pick<Caller, 'workspaceId'>, name: string, query: SearchQuery) {
      const started = performance.now();
      const project = await findProject(caller.workspaceId, name);
      const results =
        project.active_generation > 0 ? await repo.search(caller.workspaceId, project, query) : [];
      return { project, results, took_ms: Math.round(performance.now() - started) };
    },
  };

  async function uploadOf(project: ProjectRow, generation: number): Promise<Buffer> {
    const archive = await repo.findUpload(project.workspace_id, project.id, generation);
    if (!archive) throw new IndexFailure('the uploaded archive is no longer stored; upload it again');
    return archive;
  }
}

export type CodegraphService = ReturnType<typeof createCodegraphService>;

/** A background index's failure whose message is safe to show. */
class IndexFailure extends Error {}

/**
 * Parses every file, yielding to the event loop between slices, and reports the files done
 * about once a second (`PROGRESS_EVERY_MS`).
 */
async function parseAll(
  sources: SourceSet,
  signal: AbortSignal | undefined,
  onProgress: (filesDone: number) => Promise<void>,
): Promise<ParsedFile[]> {
  const parsed: ParsedFile[] = [];
  let filesDone = 0;
  let sliceStart = performance.now();
  let reportedAt = sliceStart;
  for await (const file of sources.read(signal)) {
    const result = await parseSource(file.path, file.text);
    if (result) parsed.push(result);
    filesDone++;
    const now = performance.now();
    if (now - reportedAt >= PROGRESS_EVERY_MS) {
      await onProgress(filesDone);
      reportedAt = performance.now();
    }
    if (now - sliceStart > PARSE_SLICE_MS) {
      await nextTurn();
      signal?.throwIfAborted();
      sliceStart = performance.now();
    }
  }
  return parsed;
}

function statsOf(sources: SourceSet, parsed: ParsedFile[], graph: CodeGraph, durationMs: number): IndexStats {
  const languages: Record<string, number> = {};
  for (const file of parsed) languages[file.language] = (languages[file.language] ?? 0) + 1;
  return {
    files: parsed.length,
    bytes: sources.bytes,
    symbols: graph.stats.symbols,
    edges: graph.stats.edges,
    calls: graph.stats.calls,
    languages,
    skipped: { ...sources.skipped },
    files_with_errors: parsed.filter((file) => file.hasErrors).length,
    duration_ms: durationMs,
  };
}

/** The refusals of a source as the API's errors; undefined for anything else. */
function toAppError(error: unknown): AppError | undefined {
  if (error instanceof ArchiveError) {
    const field = [{ field: 'body.archive', message: error.message }];
    switch (error.reason) {
      case 'not_an_archive':
        return new AppError(415, 'unsupported_media_type', error.message, field);
      case 'corrupt':
        return new AppError(422, 'archive_invalid', error.message, field);
      case 'unsafe_entry':
        return new AppError(422, 'archive_unsafe', error.message, field);
      default:
        return new AppError(422, 'archive_too_large', error.message, field);
    }
  }
  if (error instanceof SourceError) {
    return error.reason === 'no_source_files'
      ? new AppError(422, 'no_source_files', error.message)
      : new AppError(422, 'source_too_large', error.message);
  }
  return error instanceof AppError ? error : undefined;
}

/** Why a background index failed, when the reason is safe to show; undefined otherwise. */
function failureMessage(error: unknown): string | undefined {
  if (error instanceof IndexFailure) return error.message;
  const known = toAppError(error);
  // A field error names a request field the job never had: its message alone says it.
  return known?.errors?.map((fieldError) => fieldError.message).join('; ') || known?.message;
}
