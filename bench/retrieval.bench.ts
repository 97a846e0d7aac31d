/**
 * `npm run bench:retrieval`: search quality on BEIR SciFact and search speed on a large
 * synthetic corpus, on embedded PGlite and on PostgreSQL.
 *
 * Quality: the 5,183 SciFact abstracts (SCIFACT_DIR, default ../shared/data/beir-scifact;
 * evaluation data, never copied into the repository) are indexed into a fresh workspace, one
 * document each, its title as the heading, and the 300 test claims are searched through the
 * HTTP API (`POST /api/documents/search` on a real port, top_k 100). It prints nDCG@10 and
 * Recall@100 per mode beside the published references. Vector and hybrid run when an
 * embedding provider is given: BENCH_EMBEDDING_URL (an OpenAI-compatible base URL),
 * BENCH_EMBEDDING_MODEL and, for a keyed API, BENCH_EMBEDDING_KEY.
 *
 * Until the knowledge module's upload route is on main, documents are written through the
 * search index's service (`prepare` + `indexDocument`, as the knowledge module calls them)
 * with stand-in `sources`/`documents` rows; the searches go through HTTP.
 *
 * `--tune`: instead, BM25's k1 and b over a grid, scored on SciFact's training claims (the
 * claims of queries.jsonl outside the test qrels whose evidence names documents; their
 * evidence is the relevance judgement). Never on the test claims.
 *
 * Speed: BENCH_CHUNKS (default 100,000) synthetic chunks, words drawn from the SciFact
 * corpus's own word frequencies (so term statistics look like real text), 10 per document;
 * ingestion chunks/s and documents/s through the service, then BENCH_QUERIES (default 300)
 * training claims searched through HTTP (top_k 10, keyword), p50 and p99.
 *
 * BENCH_ENGINES (default `pglite,postgres`; PostgreSQL is 127.0.0.1:5432 or POSTGRES_*, skipped
 * when it does not answer), BENCH_PARTS (default `quality,speed`).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
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
  const headers = {
    authorization: `Bearer ${token}`,
    'x-workspace-id': workspace.id,
    'content-type': 'application/json',
  };
  return {
    database,
    services,
    workspaceId: workspace.id,
    owner,
    headers,
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
 * knowledge module writes one per transaction; the speed part batches a few to measure the
 * index rather than the commits); returns their ids in order.
 */
async function ingest(
  service: Service,
  sourceId: string,
  documents: Array<{ title: string; chunks: IndexedChunk[] }>,
  embedding = { provider: 'none', model: 'none' },
  perTransaction = 1,
) {
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

async function searchHttp(service: Service, body: Record<string, unknown>) {
  const started = performance.now();
  const response = await fetch(`${service.url}/api/documents/search`, {
    method: 'POST',
    headers: service.headers,
    body: JSON.stringify(body),
  });
  const json = (await response.json()) as { results: Array<{ document: { id: string } }>; mode: string };
  if (response.status !== 200) throw new Error(`search answered ${response.status}: ${JSON.stringify(json)}`);
  return { json, ms: performance.now() - started };
}

const tokens = (text: string) => text.split(/\s+/).filter(Boolean).length;

const scifactDocuments = (corpus: CorpusDoc[]) =>
  corpus.map((doc) => ({
    title: doc.title,
    chunks: [
      {
        position: 0,
        text: doc.text,
        headingPath: doc.title ? [doc.title] : [],
        tokenCount: tokens(doc.text),
      },
    ],
  }));

async function quality(engine: string) {
  const { corpus, test, train } = loadScifact();
  const service = await startService(engine);
  if (!service) return console.log(`${engine}: no server answered, skipped`);
  try {
    const source = await insertSource(service.database.db, service.workspaceId, 'scifact');
    const embedding = process.env.BENCH_EMBEDDING_URL
      ? await configureEmbedding(service)
      : { provider: 'none', model: 'none' };
    const ingested = await ingest(service, source.id, scifactDocuments(corpus), embedding);
    const corpusIdOf = new Map(ingested.ids.map((id, index) => [id, (corpus[index] as CorpusDoc)._id]));
    console.log(
      `${engine}: indexed ${corpus.length} SciFact documents in ${ingested.seconds.toFixed(1)} s (${ingested.chunksPerSecond.toFixed(0)} chunks/s)`,
    );

    if (tune) {
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
      return;
    }

    const modes = embedding.provider === 'none' ? ['keyword'] : ['keyword', 'vector', 'hybrid'];
    const rows: string[] = [];
    for (const mode of modes) {
      let ndcg = 0;
      let recall = 0;
      const times: number[] = [];
      for (const query of test) {
        const { json, ms } = await searchHttp(service, { query: query.text, top_k: 100, mode });
        times.push(ms);
        const scores = evaluate(
          json.results.map((r) => corpusIdOf.get(r.document.id) ?? ''),
          query.relevant,
        );
        ndcg += scores.ndcg;
        recall += scores.recall;
      }
      times.sort((a, b) => a - b);
      rows.push(
        `| ${engine} | ${mode} | ${(ndcg / test.length).toFixed(4)} | ${(recall / test.length).toFixed(4)} | ${percentile(times, 50).toFixed(1)} |`,
      );
    }
    console.log(`\nSciFact test (${test.length} claims, top_k 100 through HTTP)\n`);
    console.log('| engine | mode | nDCG@10 | Recall@100 | p50 ms |');
    console.log('|---|---|---|---|---|');
    for (const row of rows) console.log(row);
    console.log('| reference | BM25, BEIR paper (Elasticsearch) | 0.665 | | |');
    console.log('| reference | BM25, Anserini flat (k1 0.9, b 0.4) | 0.679 | 0.925 | |');
    console.log('| reference | all-MiniLM-L6-v2 (MTEB) | 0.645 | 0.925 | |\n');
  } finally {
    await service.close();
  }
}

/** Configures the embedding provider of BENCH_EMBEDDING_* in the workspace's provider settings. */
async function configureEmbedding(service: Service) {
  let credentialId: number | null = null;
  const caller = { userId: service.owner, workspaceId: service.workspaceId };
  if (process.env.BENCH_EMBEDDING_KEY) {
    const types = await service.services.credentials.listTypes(caller, {});
    const type = types.find((candidate) => candidate.name === 'openai_credentials');
    if (!type) throw new Error('the openai_credentials type is missing');
    const credential = await service.services.credentials.create(caller, {
      name: 'bench embeddings',
      credential_type_id: type.id,
      data: { api_key: process.env.BENCH_EMBEDDING_KEY },
    });
    credentialId = credential.id;
  }
  await service.services.credentials.updateSettings(caller, { refuse_private_networks: false });
  await service.services.providers.update(caller, {
    providers: [
      {
        id: 'bench',
        kind: 'openai_compatible',
        base_url: process.env.BENCH_EMBEDDING_URL as string,
        credential_id: credentialId,
      },
    ],
    default_model: { provider: 'bench', name: process.env.BENCH_EMBEDDING_MODEL ?? 'embedding' },
  });
  return { provider: 'bench', model: process.env.BENCH_EMBEDDING_MODEL ?? 'embedding' };
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
    const ingested = await ingest(service, source.id, documents, undefined, 10);
    const queries = train.slice(0, latencyQueries);
    for (const query of queries.slice(0, 20))
      await searchHttp(service, { query: query.text, top_k: 10, mode: 'keyword' });
    const times: number[] = [];
    for (const query of queries) {
      times.push((await searchHttp(service, { query: query.text, top_k: 10, mode: 'keyword' })).ms);
    }
    times.sort((a, b) => a - b);
    console.log(
      `| ${engine} | ${syntheticChunks} | ${ingested.documentsPerSecond.toFixed(0)} | ${ingested.chunksPerSecond.toFixed(0)} | ${percentile(times, 50).toFixed(1)} | ${percentile(times, 99).toFixed(1)} |`,
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
    `\nSearch speed, ${syntheticChunks} synthetic chunks (keyword, top_k 10, through HTTP, ${latencyQueries} queries)\n`,
  );
  console.log('| engine | chunks | documents/s | chunks/s | p50 ms | p99 ms |');
  console.log('|---|---|---|---|---|---|');
  for (const engine of engines) await speed(engine);
}
