import { AppError, type FieldError, invalidFields } from '../../errors.ts';
import type { CredentialsService } from '../credentials/credentials.service.ts';
import type { SettingsService } from '../settings/settings.service.ts';
import { LOCAL_EMBEDDING, type LocalModels } from './local-models.ts';

/** Which model embeds a source's chunks: a provider id and its model name. */
export interface EmbeddingSettings {
  provider: string;
  model: string;
}

/** The provider that embeds nothing: the source is searched by keywords only. */
export const NO_EMBEDDING = 'none';

/**
 * The embedding a source gets when its settings name none: keyword only, chosen by measurement
 * on SciFact (docs/retrieval.md, bench/RESULTS.md): the models npm packages ship here (USE-lite,
 * mean word vectors) reach nDCG@10 0.22 alone and pull hybrid below keyword's 0.69, on the
 * training claims as on the test claims. A shipped model that beats keyword would join
 * `BUILTIN_EMBEDDERS` and become this default.
 */
export const DEFAULT_EMBEDDING: EmbeddingSettings = { provider: NO_EMBEDDING, model: NO_EMBEDDING };

/** pgvector's `vector` holds at most this many dimensions. */
export const MAX_DIMENSIONS = 16_000;

/** Texts sent to a provider in one request. */
export const EMBED_BATCH = 64;

/** Turns texts into vectors with one model. */
export interface Embedder {
  /** `provider/model`, stored beside every vector it makes: only vectors of one model compare. */
  readonly model: string;
  embed(texts: string[], signal?: AbortSignal): Promise<number[][]>;
}

/**
 * A model that runs inside the service, needing no provider settings (the embedded default's
 * slot). `models` lists the model names it knows.
 */
export interface BuiltinEmbedder {
  models: readonly string[];
  create(model: string): Embedder;
}

/** Built-in providers by id. None: no shipped model improved search (see DEFAULT_EMBEDDING). */
export const BUILTIN_EMBEDDERS: ReadonlyMap<string, BuiltinEmbedder> = new Map();

/**
 * Embeddings through the workspace's providers (`PUT /api/settings/providers`): all the index
 * needs of the model gateway, whose `embed` fits it.
 */
export interface ProviderEmbeddings {
  /** One vector per text, in order, from the provider's embedding model. */
  embed(request: {
    workspaceId: string;
    userId?: string;
    provider: string;
    model: string;
    texts: string[];
    signal?: AbortSignal;
  }): Promise<number[][]>;
}

export interface EmbeddingDependencies {
  models: ProviderEmbeddings;
  settings: Pick<SettingsService, 'get'>;
  /** Checks a provider's credential still exists (no decryption). */
  credentials: Pick<CredentialsService, 'get'>;
  /** Model folders under EMBEDDING_MODELS_DIR (provider `local`); absent, none. */
  localModels?: LocalModels;
}

/**
 * Resolves embedding settings to an `Embedder`: `none` to no embedder (keyword search only),
 * `local` to a model folder under EMBEDDING_MODELS_DIR run with transformers.js
 * (local-models.ts), a built-in model, or a provider of the workspace's provider settings whose kind is
 * `openai_compatible` (OpenAI, Ollama, vLLM, ...), called through the model gateway, which
 * reads its key from the vault per call and sends every request through the address guard.
 */
export function createEmbeddings(deps: EmbeddingDependencies) {
  /** Field errors of embedding settings, under `field` (`body.embedding`). */
  async function problems(workspaceId: string, embedding: EmbeddingSettings, field: string) {
    const errors: FieldError[] = [];
    if (embedding.provider === NO_EMBEDDING) return errors;
    if (embedding.provider === LOCAL_EMBEDDING) {
      const problem = deps.localModels
        ? await deps.localModels.problem(embedding.model)
        : { field: 'provider', message: 'needs local models, which this service does not run' };
      if (problem) errors.push({ field: `${field}.${problem.field}`, message: problem.message });
      return errors;
    }
    const builtin = BUILTIN_EMBEDDERS.get(embedding.provider);
    if (builtin) {
      if (!builtin.models.includes(embedding.model)) {
        errors.push({
          field: `${field}.model`,
          message: `is not a model of ${embedding.provider} (known: ${builtin.models.join(', ')})`,
        });
      }
      return errors;
    }
    const settings = await deps.settings.get(workspaceId, 'providers');
    const provider = settings.providers.find((candidate) => candidate.id === embedding.provider);
    if (!provider) {
      const known = [
        NO_EMBEDDING,
        ...(deps.localModels?.configured ? [LOCAL_EMBEDDING] : []),
        ...BUILTIN_EMBEDDERS.keys(),
        ...settings.providers.map((p) => p.id),
      ];
      errors.push({
        field: `${field}.provider`,
        message: `is not a configured provider (known: ${known.join(', ')})`,
      });
      return errors;
    }
    if (provider.kind !== 'openai_compatible') {
      errors.push({
        field: `${field}.provider`,
        message: `is an ${provider.kind} provider, which has no embeddings endpoint`,
      });
    }
    if (embedding.model.trim() === '') errors.push({ field: `${field}.model`, message: 'is empty' });
    if (provider.credential_id !== null) {
      try {
        await deps.credentials.get({ workspaceId, userId: 'retrieval' }, provider.credential_id);
      } catch (error) {
        if (!(error instanceof AppError) || error.status !== 404) throw error;
        errors.push({
          field: `${field}.provider`,
          message: `uses credential ${provider.credential_id}, which no longer exists`,
        });
      }
    }
    return errors;
  }

  /** A model folder under EMBEDDING_MODELS_DIR, in batches of EMBED_BATCH through the worker. */
  function localEmbedder(folder: string): Embedder {
    return {
      model: `${LOCAL_EMBEDDING}/${folder}`,
      async embed(texts, signal) {
        const models = deps.localModels;
        if (!models)
          throw new AppError(502, 'provider_error', `${this.model}: this service runs no local models`);
        const vectors: number[][] = [];
        for (let start = 0; start < texts.length; start += EMBED_BATCH) {
          vectors.push(...(await models.embed(folder, texts.slice(start, start + EMBED_BATCH), signal)));
        }
        return checkVectors(vectors, texts.length, this.model);
      },
    };
  }

  return {
    /** Throws a 400 naming `body.embedding.*` when the settings cannot embed. */
    async validate(workspaceId: string, embedding: EmbeddingSettings): Promise<void> {
      const errors = await problems(workspaceId, embedding, 'body.embedding');
      if (errors.length > 0) throw invalidFields(errors);
    },

    /** The embedder of these settings; undefined for `none`. */
    embedder(workspaceId: string, embedding: EmbeddingSettings, userId?: string): Embedder | undefined {
      if (embedding.provider === NO_EMBEDDING) return undefined;
      if (embedding.provider === LOCAL_EMBEDDING) return localEmbedder(embedding.model);
      const builtin = BUILTIN_EMBEDDERS.get(embedding.provider);
      if (builtin) return builtin.create(embedding.model);
      return {
        model: `${embedding.provider}/${embedding.model}`,
        async embed(texts, signal) {
          const vectors: number[][] = [];
          for (let start = 0; start < texts.length; start += EMBED_BATCH) {
            const batch = texts.slice(start, start + EMBED_BATCH);
            vectors.push(
              ...(await deps.models.embed({
                workspaceId,
                ...(userId ? { userId } : {}),
                provider: embedding.provider,
                model: embedding.model,
                texts: batch,
                ...(signal ? { signal } : {}),
              })),
            );
          }
          return checkVectors(vectors, texts.length, this.model);
        },
      };
    },
  };
}

export type Embeddings = ReturnType<typeof createEmbeddings>;

/** Vectors a model returned must be one per text, all of one size pgvector holds, all finite. */
export function checkVectors(vectors: number[][], expected: number, model: string): number[][] {
  const size = vectors[0]?.length ?? 0;
  const fault =
    vectors.length !== expected
      ? `${vectors.length} vectors for ${expected} texts`
      : vectors.length > 0 && (size < 1 || size > MAX_DIMENSIONS)
        ? `vectors of ${size} dimensions (1 to ${MAX_DIMENSIONS} are stored)`
        : vectors.some((vector) => vector.length !== size)
          ? 'vectors of different sizes'
          : vectors.some((vector) => vector.some((value) => !Number.isFinite(value)))
            ? 'a vector with a value that is not a finite number'
            : undefined;
  if (fault) throw new AppError(502, 'provider_error', `${model} answered ${fault}`);
  return vectors;
}
