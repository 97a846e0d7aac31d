import { parentPort } from 'node:worker_threads';

/**
 * The worker thread of local embedding models (local-models.ts): runs transformers.js here
 * because onnxruntime-node's `session.run` is synchronous (it only waits for `setImmediate`),
 * so a batch of chunks through a real model would stop the API's event loop for its whole
 * inference. Pipelines are loaded on first use and kept per model folder.
 */

/** A batch to embed with the model in `path` (a vetted real path under EMBEDDING_MODELS_DIR). */
export interface LocalEmbedRequest {
  id: number;
  /** EMBEDDING_MODELS_DIR (real path): transformers.js's `localModelPath`. */
  root: string;
  /** The model folder relative to `root`. */
  folder: string;
  dtype: 'fp32' | 'q8';
  texts: string[];
}

export type LocalEmbedReply =
  | { id: number; ok: true; dimensions: number; vectors: Float32Array }
  | { id: number; ok: false; message: string };

type Extractor = (
  texts: string[],
  options: { pooling: 'mean'; normalize: boolean },
) => Promise<{ dims: number[]; data: Float32Array }>;

const pipelines = new Map<string, Promise<Extractor>>();

async function load(request: LocalEmbedRequest): Promise<Extractor> {
  const { env, pipeline } = await import('@huggingface/transformers');
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.localModelPath = request.root.endsWith('/') ? request.root : `${request.root}/`;
  const extractor = await pipeline('feature-extraction', request.folder, {
    dtype: request.dtype,
    local_files_only: true,
  });
  return extractor as unknown as Extractor;
}

async function embed(request: LocalEmbedRequest): Promise<LocalEmbedReply> {
  const key = `${request.root}\0${request.folder}\0${request.dtype}`;
  let loading = pipelines.get(key);
  if (!loading) {
    loading = load(request);
    pipelines.set(key, loading);
    // A folder that failed to load is tried again next time (it may have been fixed).
    loading.catch(() => pipelines.delete(key));
  }
  const extractor = await loading;
  const output = await extractor(request.texts, { pooling: 'mean', normalize: true });
  const dimensions = output.dims.at(-1) ?? 0;
  return { id: request.id, ok: true, dimensions, vectors: Float32Array.from(output.data) };
}

parentPort?.on('message', (request: LocalEmbedRequest) => {
  embed(request).then(
    (reply) => parentPort?.postMessage(reply, reply.ok ? [reply.vectors.buffer as ArrayBuffer] : []),
    (error: unknown) =>
      parentPort?.postMessage({
        id: request.id,
        ok: false,
        message: error instanceof Error ? error.message : String(error),
      } satisfies LocalEmbedReply),
  );
});
