import { access, readdir } from 'node:fs/promises';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { AppError } from '../../errors.ts';
import { isInside, PathOutsideRootError, resolveWithinRoot } from '../../lib/fs/within-root.ts';
import type { Component, ComponentHealth } from '../../lifecycle.ts';
import type { LocalEmbedReply, LocalEmbedRequest } from './local-models-worker.ts';

/**
 * Embedding models in folders under the operator's `EMBEDDING_MODELS_DIR`, run with
 * transformers.js (`@huggingface/transformers`, onnxruntime-node) and nothing downloaded:
 * a folder in the transformers.js layout (`config.json`, `tokenizer.json`,
 * `onnx/model.onnx` or `onnx/model_quantized.onnx`), a `feature-extraction` pipeline, mean
 * pooling and normalised vectors. A source names the folder relative to the root
 * (`{"provider": "local", "model": "all-MiniLM-L6-v2"}`); names leaving the root are refused.
 *
 * Inference runs in one worker thread, started on first use and kept (unreferenced while idle,
 * so it never keeps the process alive): onnxruntime-node runs a session synchronously, which
 * would otherwise block the event loop for a whole batch. The worker keeps each folder's
 * pipeline loaded after its first batch.
 *
 * transformers.js is an optional dependency (about 430 MB installed with onnxruntime-node and
 * sharp): `npm ci` installs it, `npm ci --omit=optional` leaves it out. Nothing loads it until a
 * batch is embedded; with EMBEDDING_MODELS_DIR set and the package missing, `local` settings are
 * refused with a message saying what to install, and the health report's row says the same.
 */

/** The package that runs the models, in the worker thread (local-models-worker.ts). */
export const LOCAL_MODELS_RUNTIME = '@huggingface/transformers';

/** Its row in the health report (`GET /api/system/health`). */
export const LOCAL_MODELS_COMPONENT = 'Local Embedding Models';

/** The provider id of local model folders in a source's embedding settings. */
export const LOCAL_EMBEDDING = 'local';

/** A model folder name: segments of letters, digits, `.`, `_`, `-`, not starting with a dot. */
const FOLDER_NAME = /^[A-Za-z0-9_][A-Za-z0-9._-]*(\/[A-Za-z0-9_][A-Za-z0-9._-]*){0,2}$/;

/** The weights a folder may hold, in the order they are preferred. */
const WEIGHTS = [
  { file: 'onnx/model.onnx', dtype: 'fp32' },
  { file: 'onnx/model_quantized.onnx', dtype: 'q8' },
] as const;

/** A model folder found fit to load. */
interface ModelFolder {
  root: string;
  folder: string;
  dtype: LocalEmbedRequest['dtype'];
}

/** Why a name is no usable model folder; undefined when it is one. */
export type FolderProblem = { field: 'provider' | 'model'; message: string } | undefined;

export interface LocalModels {
  /** Whether EMBEDDING_MODELS_DIR is set. */
  readonly configured: boolean;
  /** Whether the package that runs the models is installed (it is optional). */
  readonly installed: boolean;
  /**
   * The health report's row: not configured without EMBEDDING_MODELS_DIR, down when it is set
   * and the package is missing; stopping it ends the worker thread.
   */
  readonly component: Component;
  /** What is wrong with `name` as a model folder, or undefined when it can be loaded. */
  problem(name: string): Promise<FolderProblem>;
  /** Embeds `texts` with the model in folder `name`: one normalised vector per text. */
  embed(name: string, texts: string[], signal?: AbortSignal): Promise<number[][]>;
  /** Ends the worker thread (tests, shutdown). */
  close(): Promise<void>;
}

export interface LocalModelsOptions {
  /** The package the worker runs the models with; `LOCAL_MODELS_RUNTIME` (tests name a missing one). */
  runtime?: string;
}

export function createLocalModels(root: string | undefined, options: LocalModelsOptions = {}): LocalModels {
  const runtime = options.runtime ?? LOCAL_MODELS_RUNTIME;
  const installed = root !== undefined && isInstalled(runtime);
  const missing = `EMBEDDING_MODELS_DIR is set, but the optional package ${runtime}, which runs local models, is not installed: run npm ci without --omit=optional (or npm install ${runtime}) and restart`;
  let worker: Worker | undefined;
  let nextId = 0;
  const pending = new Map<number, { resolve(reply: LocalEmbedReply): void; reject(error: Error): void }>();

  function failAll(error: Error) {
    for (const waiter of pending.values()) waiter.reject(error);
    pending.clear();
  }

  function takeWorker(): Worker {
    if (worker) return worker;
    const started = new Worker(new URL('./local-models-worker.ts', import.meta.url));
    started.on('message', (reply: LocalEmbedReply) => {
      const waiter = pending.get(reply.id);
      pending.delete(reply.id);
      waiter?.resolve(reply);
      if (pending.size === 0) started.unref();
    });
    started.on('error', (error) => {
      if (worker === started) worker = undefined;
      failAll(error);
    });
    started.on('exit', (code) => {
      if (worker === started) worker = undefined;
      failAll(new Error(`the embedding worker stopped (exit code ${code})`));
    });
    worker = started;
    return started;
  }

  /** The vetted folder of `name`, or why it is none. */
  async function resolve(name: string): Promise<ModelFolder | FolderProblem> {
    if (!root) {
      return {
        field: 'provider',
        message: 'needs local models, and the operator has not set EMBEDDING_MODELS_DIR',
      };
    }
    if (!installed) return { field: 'provider', message: `needs local models: ${missing}` };
    if (!FOLDER_NAME.test(name) || name.split('/').some((segment) => segment === '..')) {
      return {
        field: 'model',
        message: 'must be a model folder name under EMBEDDING_MODELS_DIR (letters, digits, . _ - and /)',
      };
    }
    let real: string;
    let realRoot: string;
    try {
      real = await resolveWithinRoot(root, name, 'directory');
      realRoot = await resolveWithinRoot(root, '.', 'directory');
    } catch (error) {
      if (!(error instanceof PathOutsideRootError)) throw error;
      const reason =
        error.reason === 'outside_root' ? 'leads outside EMBEDDING_MODELS_DIR' : 'is not a folder';
      return { field: 'model', message: `${reason} (known: ${(await known()).join(', ') || 'none'})` };
    }
    if (!isInside(realRoot, real) || real === realRoot) {
      return { field: 'model', message: 'must name a model folder below EMBEDDING_MODELS_DIR' };
    }
    if (
      !(await exists(path.join(real, 'config.json'))) ||
      !(await exists(path.join(real, 'tokenizer.json')))
    ) {
      return { field: 'model', message: 'is a folder without config.json and tokenizer.json' };
    }
    for (const weights of WEIGHTS) {
      if (await exists(path.join(real, weights.file))) {
        return { root: realRoot, folder: path.relative(realRoot, real), dtype: weights.dtype };
      }
    }
    return { field: 'model', message: 'has neither onnx/model.onnx nor onnx/model_quantized.onnx' };
  }

  /** Model folders directly under the root, to name in errors. */
  async function known(): Promise<string[]> {
    if (!root) return [];
    try {
      const entries = await readdir(root, { withFileTypes: true });
      const folders = entries.filter((entry) => entry.isDirectory() && !entry.name.startsWith('.'));
      const fit = await Promise.all(
        folders.map((entry) => exists(path.join(root, entry.name, 'config.json'))),
      );
      return folders.filter((_, index) => fit[index]).map((entry) => entry.name);
    } catch {
      return [];
    }
  }

  async function close() {
    const stopping = worker;
    worker = undefined;
    if (stopping) await stopping.terminate();
  }

  return {
    configured: root !== undefined,
    installed,
    component: {
      name: LOCAL_MODELS_COMPONENT,
      start: async () => undefined,
      stop: close,
      health: async (): Promise<ComponentHealth> =>
        root === undefined
          ? { name: LOCAL_MODELS_COMPONENT, status: 'not_configured' }
          : installed
            ? { name: LOCAL_MODELS_COMPONENT, status: 'up' }
            : { name: LOCAL_MODELS_COMPONENT, status: 'down', detail: missing },
    },

    async problem(name) {
      const found = await resolve(name);
      return found && 'field' in found ? found : undefined;
    },

    async embed(name, texts, signal) {
      if (texts.length === 0) return [];
      const model = `${LOCAL_EMBEDDING}/${name}`;
      const found = await resolve(name);
      if (!found || 'field' in found) {
        const why = found?.field === 'provider' ? found.message : `its folder ${found?.message ?? ''}`;
        throw new AppError(502, 'provider_error', `${model} cannot be loaded: ${why}`);
      }
      signal?.throwIfAborted();
      const id = nextId++;
      const thread = takeWorker();
      const reply = await new Promise<LocalEmbedReply>((resolveReply, reject) => {
        pending.set(id, { resolve: resolveReply, reject });
        thread.ref();
        thread.postMessage({ id, ...found, texts } satisfies LocalEmbedRequest);
        signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
      if (!reply.ok) {
        // The worker's message may hold the server's path: clients see the folder name only.
        const message = reply.message.replaceAll(found.root, 'EMBEDDING_MODELS_DIR');
        throw new AppError(502, 'provider_error', `${model} failed: ${message}`);
      }
      if (reply.dimensions < 1) throw new AppError(502, 'provider_error', `${model} answered empty vectors`);
      const vectors: number[][] = [];
      for (let start = 0; start < reply.vectors.length; start += reply.dimensions) {
        vectors.push(Array.from(reply.vectors.subarray(start, start + reply.dimensions)));
      }
      return vectors;
    },

    close,
  };
}

/** Whether `specifier` resolves from here: reads its package.json, loads none of its code. */
function isInstalled(specifier: string): boolean {
  try {
    import.meta.resolve(specifier);
    return true;
  } catch {
    return false;
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}
