/**
 * `npm run bench:retrieval`: search quality on BEIR SciFact and search speed on a large
 * synthetic corpus, on embedded PGlite and on PostgreSQL.
 *
 * Quality: the 5,183 SciFact abstracts (SCIFACT_DIR, default ../shared/data/beir-scifact;
 * evaluation data, never copied into the repository) go in through the HTTP API like any
 * user's files: an `upload` source is created (`POST /api/sources`, with the embedding
 * settings), each abstract is uploaded as a Markdown file, its title as the heading
 * (`# Title\n\ntext`, `<corpus id>.md`, `POST /api/documents/upload`, BENCH_UPLOADS at a
 * time, default 4), and the bench waits until no document of the source is `processing`
 * (`GET /api/documents?source_id=…&status=…`): the platform's own extraction, chunking (the
 * default 500/50 tokens), embedding and indexing jobs did the work. The 300 test claims are
 * then searched through HTTP (`POST /api/documents/search` on a real port, top_k 100); it
 * prints nDCG@10 and Recall@100 per mode beside the published references.
 *
 * Vector and hybrid run when an embedding provider is given: BENCH_EMBEDDING_URL (an
 * OpenAI-compatible base URL), BENCH_EMBEDDING_MODEL and, for a keyed API,
 * BENCH_EMBEDDING_KEY; or BENCH_EMBEDDING_SERVER=<model> (`use-lite`, see
 * bench/embedding-server.ts), which starts the loopback server of a model shipped in an npm
 * package as a child process and points the provider at it. The provider is configured in
 * the workspace's provider settings, with `refuse_private_networks` off so the address guard
 * admits loopback. Or BENCH_LOCAL_MODEL=<folder> with EMBEDDING_MODELS_DIR: the platform's
 * `local` provider runs that model folder with transformers.js (docs/retrieval.md).
 * BENCH_HYBRID_WEIGHTS=`<keyword>,<vector>` also runs hybrid with those arm
 * weights, and `tuned` with the weights of the best training-claims nDCG@10 over the grid of
 * `--tune` (run first, in the same process), never chosen on the test claims.
 *
 * `--tune`: instead of the test claims, SciFact's training claims (the claims of
 * queries.jsonl outside the test qrels whose evidence names documents; their evidence is the
 * relevance judgement): BM25's k1 and b over a grid and, with an embedding provider, the
 * hybrid arm weights over a grid (through HTTP). Never on the test claims.
 *
 * Speed: BENCH_CHUNKS (default 100,000) synthetic chunks, words drawn from the SciFact
 * corpus's own word frequencies (so term statistics look like real text), 10 per document;
 * ingestion chunks/s and documents/s; the time the in-memory postings take to build after the
 * first search; then BENCH_QUERIES (default 300) training claims (top_k 10, keyword), p50 and
 * p99, each query twice: through HTTP as served (postings in memory), and through a search
 * service with its postings off (the SQL path), with how many gave the same documents in the
 * same order. This part still writes its chunks
 * through the search index's service (`prepare` + `indexDocument`, as the knowledge module
 * calls them, 10 documents per transaction, stand-in `sources`/`documents` rows): it measures
 * the index, not extraction and the job queue.
 *
 * BENCH_ENGINES (default `pglite,postgres`; PostgreSQL is 127.0.0.1:5432 or POSTGRES_*, skipped
 * when it does not answer), BENCH_PARTS (default `quality,speed`).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { buildApp } from '../src/app.ts';
import { boot, startServices } from '../src/boot.ts';
import { loadConfig } from '../src/config.ts';
import { inTransaction } from '../src/db/transaction.ts';
import { mintDevToken } from '../src/modules/identity/dev-issuer.ts';
import type { IndexedChunk, PreparedChunks } from '../src/modules/retrieval/retrieval.service.ts';
import { createRetrievalService } from '../src/modules/retrieval/retrieval.service.ts';
import { insertDocument, insertSource } from '../tests/helpers/knowledge-rows.ts';
import { createBenchPostgres } from './postgres-env.ts';

const repoRoot = path.resolve(import.meta.dirname, '..');
const scifactDir = process.env.SCIFACT_DIR ?? path.resolve(repoRoot, '../shared/data/beir-scifact');
const engines = (process.env.BENCH_ENGINES ?? 'pglite,postgres').split(',');
const parts = (process.env.BENCH_PARTS ?? 'quality,speed').split(',');
const tune = process.argv.includes('--tune');
const syntheticChunks = Number(process.env.BENCH_CHUNKS ?? 100_000);
const latencyQueries = Number(process.env.BENCH_QUERIES ?? 300);

interface CorpusDoc {
  _id: string;
  title: string;
  text: string;
}
interface Query {
  _id: string;
  text: string;
  metadata: Record<string, unknown>;
}

const readJsonl = <T>(file: string): T[] =>
  fs
    .readFileSync(path.join(scifactDir, file), 'utf8')
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as T);

function loadScifact() {
  if (!fs.existsSync(path.join(scifactDir, 'corpus.jsonl'))) {
    throw new Error(`SciFact not found in ${scifactDir} (set SCIFACT_DIR)`);
  }
  const corpus = readJsonl<CorpusDoc>('corpus.jsonl');
  const queries = readJsonl<Query>('queries.jsonl');
  const testQrels = new Map<string, Set<string>>();
  const qrelsText = fs.readFileSync(path.join(scifactDir, 'qrels/test.tsv'), 'utf8');
  for (const line of qrelsText.split(/\r?\n/).slice(1)) {
    const [query, doc, score] = line.split('\t');
    if (!query || !doc || Number(score) <= 0) continue;
    if (!testQrels.has(query)) testQrels.set(query, new Set());
    testQrels.get(query)?.add(doc);
  }
  const test = queries
    .filter((q) => testQrels.has(q._id))
    .map((q) => ({ ...q, relevant: testQrels.get(q._id) as Set<string> }));
  // Training claims: not in the test qrels, with evidence naming documents (SciFact's labels).
  const train = queries
    .filter((q) => !testQrels.has(q._id) && Object.keys(q.metadata ?? {}).length > 0)
    .map((q) => ({ ...q, relevant: new Set(Object.keys(q.metadata)) }));
  return { corpus, test, train };
}

/** nDCG@10 with binary relevance, and recall@100, of one ranked list of corpus ids. */
function evaluate(ranked: string[], relevant: Set<string>) {
  let dcg = 0;
  ranked.slice(0, 10).forEach((id, index) => {
    if (relevant.has(id)) dcg += 1 / Math.log2(index + 2);
  });
  let ideal = 0;
  for (let index = 0; index < Math.min(10, relevant.size); index++) ideal += 1 / Math.log2(index + 2);
  const found = ranked.slice(0, 100).filter((id) => relevant.has(id)).length;
  return { ndcg: ideal > 0 ? dcg / ideal : 0, recall: found / relevant.size };
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

async function startService(engine: string) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-retrieval-'));
  let env: NodeJS.ProcessEnv = {
    ...process.env,
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    POSTGRES_HOST: '',
    POSTGRES_DB: '',
    POSTGRES_USER: '',
    POSTGRES_PASSWORD: '',
    REDIS_URL: '',
    DB_QUEUE_TIMEOUT_MS: '60000',
  };
  let drop = async () => {};
  if (engine === 'postgres') {
    const pg = await createBenchPostgres('bench_retrieval');
    if (!pg) return undefined;
    env = { ...env, ...pg.env };
    drop = pg.drop;
  }
  const config = loadConfig(env);
  const { database, services } = await boot(config);
  const stop = await startServices(services);
  const app = await buildApp(services);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const owner = `bench-${engine}`;
  const workspace = await services.workspaces.createWorkspace(owner, { name: `retrieval ${engine}` });
  if (!services.devKey) throw new Error('the benchmark uses development auth');
  const token = await mintDevToken(services.devKey, {
    userId: owner,
    issuer: config.auth.issuer,
    audience: config.auth.audience,
  });
  const authHeaders = { authorization: `Bearer ${token}`, 'x-workspace-id': workspace.id };
  const headers = { ...authHeaders, 'content-type': 'application/json' };
  return {
    database,
    services,
    workspaceId: workspace.id,
    owner,
    headers,
    authHeaders,
    url,
    async close() {
      await app.close();
      await stop();
      await database.close();
      await drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

type Service = NonNullable<Awaited<ReturnType<typeof startService>>>;

/**
 * Indexes documents through the service, `perTransaction` documents per transaction (the
 * speed part: the knowledge module writes one per transaction; batching a few measures the
 * index rather than the commits); returns their ids in order.
 */
async function ingest(
  service: Service,
  sourceId: string,
  documents: Array<{ title: string; chunks: IndexedChunk[] }>,
  perTransaction = 1,
) {
  const embedding = { provider: 'none', model: 'none' };
  const ids: string[] = [];
  const started = performance.now();
  let chunks = 0;
  for (let start = 0; start < documents.length; start += perTransaction) {
    const prepared: Array<{ id: string; chunks: PreparedChunks }> = [];
    for (const document of documents.slice(start, start + perTransaction)) {
      const { id } = await insertDocument(service.database.db, service.workspaceId, sourceId, {
        title: document.title,
      });
      ids.push(id);
      chunks += document.chunks.length;
      prepared.push({
        id,
        chunks: await service.services.retrieval.prepare(service.workspaceId, embedding, document.chunks),
      });
    }
    await inTransaction(service.database.db, async (tx) => {
      for (const document of prepared) {
        await service.services.retrieval.indexDocument(
          tx,
          { workspaceId: service.workspaceId, sourceId, documentId: document.id, generation: 1 },
          document.chunks,
        );
      }
    });
  }
  const seconds = (performance.now() - started) / 1000;
  return { ids, seconds, documentsPerSecond: documents.length / seconds, chunksPerSecond: chunks / seconds };
}

/** A JSON request to the service's HTTP API; throws unless it answers `expected`. */
async function api<T>(service: Service, method: string, route: string, body?: unknown, expected = [200]) {
  const response = await fetch(`${service.url}${route}`, {
    method,
    headers: body === undefined ? service.authHeaders : service.headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = (await response.json()) as T;
  if (!expected.includes(response.status)) {
    throw new Error(`${method} ${route} answered ${response.status}: ${JSON.stringify(json)}`);
  }
  return json;
}

/** Markdown that reads back as exactly this text: ASCII punctuation Markdown acts on is escaped. */
const markdownText = (text: string) =>
  text
    .replace(/[\\`*_[\]<>#|~!&]/g, (character) => `\\${character}`)
    .replace(/^(\s*)([-+])(\s)/gm, '$1\\$2$3')
    .replace(/^(\s*)(\d+)([.)])(\s)/gm, '$1$2\\$3$4');

/**
 * Uploads each SciFact abstract as `<corpus id>.md` (`# Title\n\ntext`) into the source,
 * `concurrency` uploads at a time, then waits until none of the source's documents is
 * `processing`. Returns the platform's document id of each corpus id, and the timings.
 */
async function uploadCorpus(service: Service, sourceId: string, corpus: CorpusDoc[], concurrency: number) {
  const corpusIdOf = new Map<string, string>();
  const started = performance.now();
  let next = 0;
  const uploadOne = async (doc: CorpusDoc) => {
    const form = new FormData();
    form.append('source_id', sourceId);
    const markdown = `# ${markdownText(doc.title)}\n\n${markdownText(doc.text)}\n`;
    form.append('file', new Blob([markdown], { type: 'text/markdown' }), `${doc._id}.md`);
    for (let attempt = 1; ; attempt++) {
      const response = await fetch(`${service.url}/api/documents/upload`, {
        method: 'POST',
        headers: service.authHeaders,
        body: form,
      });
      const json = (await response.json()) as { id: string };
      if (response.status === 201) return corpusIdOf.set(json.id, doc._id);
      if (response.status >= 500 && attempt < 3) continue;
      throw new Error(`upload of ${doc._id} answered ${response.status}: ${JSON.stringify(json)}`);
    }
  };
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < corpus.length) await uploadOne(corpus[next++] as CorpusDoc);
    }),
  );
  const uploadSeconds = (performance.now() - started) / 1000;
  const count = async (status: string) =>
    (
      await api<{ total: number }>(
        service,
        'GET',
        `/api/documents?source_id=${sourceId}&status=${status}&limit=1`,
      )
    ).total;
  let lastReport = performance.now();
  for (;;) {
    const processing = await count('processing');
    if (processing === 0) break;
    if (performance.now() - lastReport > 60_000) {
      lastReport = performance.now();
      console.log(
        `  ${corpus.length - processing} of ${corpus.length} processed after ${((lastReport - started) / 1000).toFixed(0)} s`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
  const failed = await count('failed');
  const processed = await count('processed');
  const seconds = (performance.now() - started) / 1000;
  return { corpusIdOf, uploadSeconds, seconds, processed, failed };
}

async function searchHttp(service: Service, body: Record<string, unknown>) {
  const started = performance.now();
  const response = await fetch(`${service.url}/api/documents/search`, {
    method: 'POST',
    headers: service.headers,
    body: JSON.stringify(body),
  });
  const json = (await response.json()) as {
    results: Array<{ document: { id: string } }>;
    mode: string;
    exact: boolean;
  };
  if (response.status !== 200) throw new Error(`search answered ${response.status}: ${JSON.stringify(json)}`);
  return { json, ms: performance.now() - started };
}

const tokens = (text: string) => text.split(/\s+/).filter(Boolean).length;

interface EmbeddingEndpoint {
  url: string;
  model: string;
  key?: string;
  /** The loopback server's counters (BENCH_EMBEDDING_SERVER only). */
  stats?: () => Promise<{ texts: number; busy_ms: number; texts_per_second: number; rss_mb: number }>;
  loadMs?: number;
  close(): Promise<void>;
}

/**
 * The embedding provider of the quality part: BENCH_EMBEDDING_SERVER starts the loopback
 * server of a shipped model (bench/embedding-server.ts) as a child process, at the bench's
 * own priority; BENCH_EMBEDDING_URL names a running one. None: keyword only.
 */
async function embeddingEndpoint(): Promise<EmbeddingEndpoint | undefined> {
  const model = process.env.BENCH_EMBEDDING_SERVER;
  if (model) {
    const child = spawn(
      process.execPath,
      [path.join(import.meta.dirname, 'embedding-server.ts'), '--model', model],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    const lines = readline.createInterface({ input: child.stdout });
    const [line] = (await Promise.race([
      once(lines, 'line'),
      once(child, 'exit').then(([code]) => {
        throw new Error(`the embedding server exited with ${code}`);
      }),
    ])) as [string];
    lines.close();
    const info = JSON.parse(line) as { url: string; model: string; load_ms: number };
    const statsUrl = info.url.replace(/\/v1$/, '/stats');
    return {
      url: info.url,
      model: info.model,
      loadMs: info.load_ms,
      stats: async () =>
        (await fetch(statsUrl)).json() as ReturnType<NonNullable<EmbeddingEndpoint['stats']>>,
      async close() {
        const exited = once(child, 'exit');
        child.kill('SIGTERM');
        await exited;
      },
    };
  }
  if (!process.env.BENCH_EMBEDDING_URL) return undefined;
  return {
    url: process.env.BENCH_EMBEDDING_URL,
    model: process.env.BENCH_EMBEDDING_MODEL ?? 'embedding',
    ...(process.env.BENCH_EMBEDDING_KEY ? { key: process.env.BENCH_EMBEDDING_KEY } : {}),
    close: async () => {},
  };
}

/** `<keyword>,<vector>` (BENCH_HYBRID_WEIGHTS) as hybrid search weights, or `tuned`. */
function parseWeights(text: string | undefined) {
  if (!text) return undefined;
  if (text === 'tuned') return 'tuned' as const;
  const [keyword, vector] = text.split(',').map(Number);
  if (!Number.isFinite(keyword) || !Number.isFinite(vector)) {
    throw new Error(`BENCH_HYBRID_WEIGHTS must be <keyword>,<vector> or tuned (got ${text})`);
  }
  return { keyword: keyword as number, vector: vector as number };
}

type Claims = ReturnType<typeof loadScifact>['train'];
type Scorer = (
  claims: Claims,
  body: Record<string, unknown>,
) => Promise<{ ndcg: number; recall: number; p50: number }>;

/**
 * Hybrid arm weights over a grid, scored on SciFact's training claims through HTTP (keyword
 * and vector alone beside them); prints the table and returns the weights with the best
 * train nDCG@10. The test claims play no part.
 */
async function tuneHybrid(train: Claims, score: Scorer) {
  console.log(
    `\nHybrid arm weights on SciFact's training claims (${train.length}), top_k 100 through HTTP\n`,
  );
  console.log('| keyword | vector | train nDCG@10 | train R@100 |');
  console.log('|---|---|---|---|');
  let best = { keyword: 1, vector: 1, ndcg: -1 };
  for (const [keyword, vector] of [
    [1, 0],
    [0, 1],
    [1, 1],
    [2, 1],
    [3, 1],
    [5, 1],
    [1, 2],
  ] as const) {
    const body =
      vector === 0
        ? { mode: 'keyword' }
        : keyword === 0
          ? { mode: 'vector' }
          : { mode: 'hybrid', weights: { keyword, vector } };
    const result = await score(train, body);
    console.log(`| ${keyword} | ${vector} | ${result.ndcg.toFixed(4)} | ${result.recall.toFixed(4)} |`);
    if (keyword > 0 && vector > 0 && result.ndcg > best.ndcg) best = { keyword, vector, ndcg: result.ndcg };
  }
  return { keyword: best.keyword, vector: best.vector };
}

async function quality(engine: string) {
  const { corpus, test, train } = loadScifact();
  const hybridWeights = parseWeights(process.env.BENCH_HYBRID_WEIGHTS);
  const endpoint = await embeddingEndpoint();
  const service = await startService(engine);
  if (!service) {
    await endpoint?.close();
    return console.log(`${engine}: no server answered, skipped`);
  }
  try {
    const embedding = process.env.BENCH_LOCAL_MODEL
      ? { provider: 'local', model: process.env.BENCH_LOCAL_MODEL }
      : endpoint
        ? await configureEmbedding(service, endpoint)
        : { provider: 'none', model: 'none' };
    const source = await api<{ id: string }>(
      service,
      'POST',
      '/api/sources',
      { name: 'scifact', kind: 'upload', embedding },
      [201],
    );
    const uploads = Number(process.env.BENCH_UPLOADS ?? 4);
    const ingested = await uploadCorpus(service, source.id, corpus, uploads);
    if (ingested.failed > 0 || ingested.processed !== corpus.length) {
      throw new Error(`${ingested.processed} documents processed, ${ingested.failed} failed`);
    }
    let chunks = 0;
    for (let offset = 0; offset < corpus.length; offset += 200) {
      const page = await api<{ items: Array<{ chunk_count: number }> }>(
        service,
        'GET',
        `/api/documents?source_id=${source.id}&limit=200&offset=${offset}`,
      );
      for (const item of page.items) chunks += item.chunk_count;
    }
    const { corpusIdOf } = ingested;
    console.log(
      `${engine}: ${corpus.length} SciFact abstracts uploaded through HTTP in ${ingested.uploadSeconds.toFixed(1)} s (${uploads} at a time), all processed after ${ingested.seconds.toFixed(1)} s (${(corpus.length / ingested.seconds).toFixed(1)} documents/s), ${chunks} chunks, embedding ${embedding.provider}/${embedding.model}`,
    );
    if (endpoint?.stats) {
      const stats = await endpoint.stats();
      console.log(
        `embedding server ${endpoint.model}: loaded in ${endpoint.loadMs} ms, ${stats.texts} texts in ${(stats.busy_ms / 1000).toFixed(1)} s of model time (${stats.texts_per_second.toFixed(1)} texts/s), RSS ${stats.rss_mb} MB`,
      );
    }

    const score: Scorer = async (claims, body) => {
      let ndcg = 0;
      let recall = 0;
      const times: number[] = [];
      for (const query of claims) {
        const { json, ms } = await searchHttp(service, { query: query.text, top_k: 100, ...body });
        times.push(ms);
        const scores = evaluate(
          json.results.map((r) => corpusIdOf.get(r.document.id) ?? ''),
          query.relevant,
        );
        ndcg += scores.ndcg;
        recall += scores.recall;
      }
      times.sort((a, b) => a - b);
      return { ndcg: ndcg / claims.length, recall: recall / claims.length, p50: percentile(times, 50) };
    };

    if (tune) {
      const what = process.env.BENCH_TUNE ?? (embedding.provider === 'none' ? 'bm25' : 'hybrid');
      if (what.includes('bm25')) await tuneBm25(service, train, corpusIdOf);
      if (what.includes('hybrid') && embedding.provider !== 'none') await tuneHybrid(train, score);
      return;
    }

    const runs: Array<{ label: string; body: Record<string, unknown> }> = [
      { label: 'keyword', body: { mode: 'keyword' } },
      { label: 'keyword, exact: false (candidate budget)', body: { mode: 'keyword', exact: false } },
    ];
    if (embedding.provider !== 'none') {
      runs.push(
        { label: 'vector', body: { mode: 'vector' } },
        { label: 'hybrid (1, 1)', body: { mode: 'hybrid' } },
      );
      // Weights given, or chosen on the training claims (the best train nDCG@10 of the grid).
      const weights = hybridWeights === 'tuned' ? await tuneHybrid(train, score) : hybridWeights;
      if (weights) {
        runs.push({
          label: `hybrid (${weights.keyword}, ${weights.vector})${hybridWeights === 'tuned' ? ', chosen on train' : ''}`,
          body: { mode: 'hybrid', weights },
        });
      }
    }
    const rows: string[] = [];
    for (const run of runs) {
      const result = await score(test, run.body);
      rows.push(
        `| ${engine} | ${run.label} | ${result.ndcg.toFixed(4)} | ${result.recall.toFixed(4)} | ${result.p50.toFixed(1)} |`,
      );
    }
    console.log(
      `\nSciFact test (${test.length} claims, top_k 100 through HTTP; embedding ${embedding.model})\n`,
    );
    console.log('| engine | mode (hybrid: keyword, vector weights) | nDCG@10 | Recall@100 | p50 ms |');
    console.log('|---|---|---|---|---|');
    for (const row of rows) console.log(row);
    console.log('| reference | BM25, BEIR paper (Elasticsearch) | 0.665 | | |');
    console.log('| reference | BM25, Anserini flat (k1 0.9, b 0.4) | 0.679 | 0.925 | |');
    console.log('| reference | all-MiniLM-L6-v2 (MTEB) | 0.645 | 0.925 | |\n');
  } finally {
    await service.close();
    await endpoint?.close();
  }
}

/** BM25's k1 and b over a grid, scored on the training claims (the search service, in process). */
async function tuneBm25(
  service: Service,
  train: ReturnType<typeof loadScifact>['train'],
  corpusIdOf: Map<string, string>,
) {
  const grid = [
    [0.9, 0.4],
    [1.2, 0.75],
    [0.9, 0.75],
    [1.2, 0.4],
    [0.7, 0.3],
    [1.5, 0.5],
  ] as const;
  for (const [k1, b] of grid) {
    const tuned = createRetrievalService({
      db: service.database.db,
      models: service.services.modelGateway,
      settings: service.services.settings,
      credentials: service.services.credentials,
      bm25: { k1, b },
    });
    let ndcg = 0;
    let recall = 0;
    for (const query of train) {
      const found = await tuned.search(
        { workspaceId: service.workspaceId, userId: service.owner },
        { query: query.text, top_k: 100, mode: 'keyword' },
      );
      const scores = evaluate(
        found.results.map((r) => corpusIdOf.get(r.document.id) ?? ''),
        query.relevant,
      );
      ndcg += scores.ndcg;
      recall += scores.recall;
    }
    console.log(
      `tune k1=${k1} b=${b}: train nDCG@10 ${(ndcg / train.length).toFixed(4)} R@100 ${(recall / train.length).toFixed(4)} (${train.length} claims)`,
    );
  }
}

/**
 * Configures the embedding provider in the workspace's provider settings (its key, if any,
 * in the vault), with `refuse_private_networks` off: the outbound address guard then admits
 * the loopback server.
 */
async function configureEmbedding(service: Service, endpoint: EmbeddingEndpoint) {
  let credentialId: number | null = null;
  const caller = { userId: service.owner, workspaceId: service.workspaceId };
  if (endpoint.key) {
    const types = await service.services.credentials.listTypes(caller, {});
    const type = types.find((candidate) => candidate.name === 'openai_credentials');
    if (!type) throw new Error('the openai_credentials type is missing');
    const credential = await service.services.credentials.create(caller, {
      name: 'bench embeddings',
      credential_type_id: type.id,
      data: { api_key: endpoint.key },
    });
    credentialId = credential.id;
  }
  await service.services.credentials.updateSettings(caller, { refuse_private_networks: false });
  await service.services.providers.update(caller, {
    providers: [
      {
        id: 'bench',
        kind: 'openai_compatible',
        base_url: endpoint.url,
        credential_id: credentialId,
        timeout_ms: 300_000,
      },
    ],
    default_model: { provider: 'bench', name: endpoint.model },
  });
  return { provider: 'bench', model: endpoint.model };
}

/** Synthetic chunks whose words follow the SciFact corpus's word frequencies. */
function syntheticDocuments(corpus: CorpusDoc[], chunks: number) {
  const counts = new Map<string, number>();
  for (const doc of corpus) {
    for (const word of `${doc.title} ${doc.text}`.toLowerCase().match(/[a-z][a-z0-9-]+/g) ?? []) {
      counts.set(word, (counts.get(word) ?? 0) + 1);
    }
  }
  const words = [...counts.keys()];
  const cumulative: number[] = [];
  let total = 0;
  for (const word of words) {
    total += counts.get(word) as number;
    cumulative.push(total);
  }
  let state = 12_345;
  const random = () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
  const pick = () => {
    const target = random() * total;
    let low = 0;
    let high = cumulative.length - 1;
    while (low < high) {
      const middle = (low + high) >> 1;
      if ((cumulative[middle] as number) < target) low = middle + 1;
      else high = middle;
    }
    return words[low] as string;
  };
  const documents: Array<{ title: string; chunks: IndexedChunk[] }> = [];
  for (let made = 0; made < chunks; made += 10) {
    const title = Array.from({ length: 6 }, pick).join(' ');
    documents.push({
      title,
      chunks: Array.from({ length: Math.min(10, chunks - made) }, (_, position) => {
        const text = Array.from({ length: 120 + Math.floor(random() * 240) }, pick).join(' ');
        return { position, text, headingPath: [title], tokenCount: tokens(text) };
      }),
    });
  }
  return documents;
}

async function speed(engine: string) {
  const { corpus, train } = loadScifact();
  const service = await startService(engine);
  if (!service) return console.log(`${engine}: no server answered, skipped`);
  try {
    const source = await insertSource(service.database.db, service.workspaceId, 'synthetic');
    const documents = syntheticDocuments(corpus, syntheticChunks);
    const ingested = await ingest(service, source.id, documents, 10);
    const queries = train.slice(0, latencyQueries);
    // The first search finds no postings in memory: SQL answers it and the build starts.
    const buildStarted = performance.now();
    await searchHttp(service, { query: queries[0]?.text ?? 'cell', top_k: 10, mode: 'keyword' });
    await service.services.retrieval.postings.settled();
    const buildSeconds = (performance.now() - buildStarted) / 1000;
    const usage = service.services.retrieval.postings.usage();
    // The same search service with its postings off: every search ranked in SQL.
    const inSql = createRetrievalService({
      db: service.database.db,
      models: service.services.modelGateway,
      settings: service.services.settings,
      credentials: service.services.credentials,
      postings: { maxBytes: 0 },
    });
    const caller = { workspaceId: service.workspaceId, userId: service.owner };
    for (const query of queries.slice(0, 20)) {
      await searchHttp(service, { query: query.text, top_k: 10, mode: 'keyword' });
      await inSql.search(caller, { query: query.text, top_k: 10, mode: 'keyword' });
    }
    // Each query both ways, one after the other; "same top 10" compares documents and order.
    const memoryTimes: number[] = [];
    const sqlTimes: number[] = [];
    let same = 0;
    for (const query of queries) {
      const fromMemory = await searchHttp(service, { query: query.text, top_k: 10, mode: 'keyword' });
      const started = performance.now();
      const fromSql = await inSql.search(caller, { query: query.text, top_k: 10, mode: 'keyword' });
      sqlTimes.push(performance.now() - started);
      memoryTimes.push(fromMemory.ms);
      const order = (ids: string[]) => ids.join(',');
      if (
        order(fromMemory.json.results.map((r) => r.document.id)) ===
        order(fromSql.results.map((r) => r.document.id))
      )
        same += 1;
    }
    memoryTimes.sort((a, b) => a - b);
    sqlTimes.sort((a, b) => a - b);
    const served = service.services.retrieval.postings.usage().served - usage.served;
    console.log(
      `| ${engine} | ${syntheticChunks} | ${ingested.documentsPerSecond.toFixed(0)} | ${ingested.chunksPerSecond.toFixed(0)} | ${buildSeconds.toFixed(1)} | ${(usage.bytes / 1024 / 1024).toFixed(0)} | **${percentile(memoryTimes, 50).toFixed(1)}** | ${percentile(memoryTimes, 99).toFixed(1)} | ${percentile(sqlTimes, 50).toFixed(1)} | ${percentile(sqlTimes, 99).toFixed(1)} | ${same} / ${queries.length} | ${served} |`,
    );
  } finally {
    await service.close();
  }
}

for (const engine of engines) {
  if (parts.includes('quality')) await quality(engine);
}
if (parts.includes('speed') && !tune) {
  console.log(
    `\nSearch speed, ${syntheticChunks} synthetic chunks (keyword, top_k 10, ${latencyQueries} queries; in memory through HTTP, SQL through the service)\n`,
  );
  console.log(
    '| engine | chunks | documents/s | chunks/s | postings build s | postings MB | search p50 ms | search p99 ms | SQL path p50 ms | SQL path p99 ms | same top 10 | answered from memory |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const engine of engines) await speed(engine);
}
