import type { Component, ComponentHealth } from '../../lifecycle.ts';

/** The spec's row of `/api/system/health` this component fills (spec section 8). */
export const VECTOR_SEARCH_ROW = 'Vector Search';

export interface SearchHealthDependencies {
  /** The installed pgvector's version, null when the extension is missing. */
  vectorExtensionVersion(): Promise<string | null>;
  /** Whether EMBEDDING_MODELS_DIR is set, so sources may embed with a local model. */
  localModelsConfigured: boolean;
}

/**
 * The `Vector Search` row of the health report, saying what search can do (docs/retrieval.md):
 * keyword search (BM25) works on every source with nothing configured; vector and hybrid search
 * work on the sources whose `embedding` names a model, a local one (EMBEDDING_MODELS_DIR) or a
 * workspace's OpenAI-compatible provider, whose reachability the `LLM Providers` row reports.
 * The index lives in the database, whose own row says whether it answers; this row names the
 * pgvector version, read once (at the first report) so that later health checks cost no
 * statement, and is down only when the extension is missing.
 */
export function createSearchHealth(deps: SearchHealthDependencies): Component {
  const models = deps.localModelsConfigured
    ? 'a model folder under EMBEDDING_MODELS_DIR or a workspace’s openai_compatible provider'
    : 'a workspace’s openai_compatible provider (EMBEDDING_MODELS_DIR is not set: no local models)';
  let known: string | null | undefined;
  const version = async () => {
    known ??= await deps.vectorExtensionVersion();
    return known;
  };
  return {
    name: VECTOR_SEARCH_ROW,
    // Nothing runs in the background: the system service only asks it for its health.
    async start() {},
    async stop() {},
    async health(): Promise<ComponentHealth> {
      const installed = await version();
      if (installed === null) {
        return {
          name: VECTOR_SEARCH_ROW,
          status: 'down',
          detail: 'the pgvector extension (vector) is not installed in the database',
        };
      }
      return {
        name: VECTOR_SEARCH_ROW,
        status: 'up',
        detail: `keyword search (BM25) on every source; vector and hybrid search (pgvector ${installed}) on sources whose embedding names a model: ${models}`,
      };
    },
  };
}
