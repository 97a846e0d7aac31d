import type { Config } from '../../config.ts';
import type { Db } from '../../db/transaction.ts';
import type { Logger } from '../../logger.ts';
import type { Module } from '../../module.ts';
import type { CredentialsService } from '../credentials/credentials.service.ts';
import type { FlagsService } from '../flags/flags.service.ts';
import type { SettingsService } from '../settings/settings.service.ts';
import type { ProviderEmbeddings } from './embeddings.ts';
import { createLocalModels } from './local-models.ts';
import { retrievalRoutes } from './retrieval.routes.ts';
import { createRetrievalService } from './retrieval.service.ts';

export interface RetrievalModuleDependencies {
  db: Db;
  /** Embeddings through the workspace's providers: the model gateway. */
  models: ProviderEmbeddings;
  settings: Pick<SettingsService, 'get'>;
  credentials: Pick<CredentialsService, 'get'>;
  /** The feature flags: `search.keyword_only` per caller. */
  flags: Pick<FlagsService, 'enabled'>;
  config: Pick<Config, 'embeddingModelsDir' | 'searchPostings'>;
  log: Pick<Logger, 'warn'>;
}

/** The search index: chunks stored for the knowledge module, hybrid search, the hit-rate. */
export function createRetrievalModule(deps: RetrievalModuleDependencies) {
  const { flags, log } = deps;
  const service = createRetrievalService({
    db: deps.db,
    models: deps.models,
    settings: deps.settings,
    credentials: deps.credentials,
    localModels: createLocalModels(deps.config.embeddingModelsDir),
    keywordOnly: (caller) => flags.enabled(caller, 'search.keyword_only'),
    onStatsError: (error) =>
      log.warn({ err: error }, 'search counts could not be written; kept for the next try'),
    onAnalyzeError: (error) => log.warn({ err: error }, 'ANALYZE of the search index failed'),
    postings: deps.config.searchPostings,
    onPostingsError: (error) =>
      log.warn({ err: error }, 'in-memory postings could not be built; the source is searched in SQL'),
  });
  const localModels = service.localModelsComponent ? [service.localModelsComponent] : [];
  return {
    service,
    /**
     * The workspace's best passages for a query, as the built-in `local` provider quotes them
     * when no model is configured (the index's default mode).
     */
    passages: {
      async search(
        {
          workspaceId,
          userId,
          query,
          top_k,
        }: { workspaceId: string; userId: string; query: string; top_k: number },
        signal: AbortSignal,
      ) {
        const found = await service.search({ workspaceId, userId }, { query, top_k }, signal);
        return found.results.map((result) => ({
          document_id: result.document.id,
          title: result.document.title,
          source: result.document.source.name,
          heading_path: result.chunk.heading_path,
          score: result.score,
          passage: result.chunk.text,
        }));
      },
    },
    // The local embedding models' worker thread ends when the service stops.
    components: [service.statsComponent, ...localModels],
    /**
     * The health report's rows: `Vector Search` (what search can do here) and, when
     * EMBEDDING_MODELS_DIR is set, `Local Embedding Models` (down without their package).
     */
    health: [service.healthComponent, ...localModels],
    routes: (app) => retrievalRoutes(app, { retrieval: service }),
  } satisfies Module;
}
