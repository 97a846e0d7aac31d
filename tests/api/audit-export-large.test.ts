import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditChainHeads } from '../../src/db/schema/audit.ts';
import { sha256Digest } from '../../src/lib/crypto/hash-chain.ts';
import { chainedFields } from '../../src/modules/audit/audit-format.ts';
import type { Actor } from '../helpers/api-client.ts';
import { createTestApp, onPostgres, type TestApp } from '../helpers/test-app.ts';

/**
 * A 100,000-record export streamed to the end in bounded memory: the records (≈45 MB of JSON
 * lines, and more as row objects) are chained and inserted directly, then exported over a real
 * socket while the test samples the heap after forced collections. An export that loaded the
 * trail (or buffered its output) would hold tens of MB at once and fail the bound.
 */

// 100,000 on PostgreSQL. On embedded PGlite (several times slower to write and read) 5,000
// (still ten verification batches of 500 and megabytes of export, more than a socket buffers),
// and the memory bound is not asserted there: the database's WebAssembly memory lives in the
// same process, grows with its own work and never shrinks, so it blurs what the export holds.
const RECORDS = onPostgres ? 100_000 : 5_000;
const HEAP_BOUND = 24 * 1024 * 1024;

let t: TestApp;
let owner: Actor;
let base: string;

// A collection on demand, so samples measure what is retained rather than garbage not yet swept.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

beforeAll(async () => {
  const began = Date.now();
  t = await createTestApp();
  owner = await t.newWorkspace('audit-large');
  base = await t.app.listen({ host: '127.0.0.1', port: 0 });
  // Chain the records from the workspace's head, as `record` would, and insert them in batches.
  const [head] = await t.rows<{ hash: string }>(
    sql`select hash from audit_chain_heads where workspace_id = ${owner.workspaceId}`,
  );
  let prev = head?.hash ?? '';
  const start = Date.parse('2026-01-01T00:00:00Z');
  for (let offset = 0; offset < RECORDS; offset += 10_000) {
    const batch = [];
    for (let i = offset; i < Math.min(RECORDS, offset + 10_000); i++) {
      const fields = chainedFields({
        workspace_id: owner.workspaceId,
        created_at: new Date(start + i * 1_000),
        actor_id: owner.userId,
        actor_kind: 'user',
        action: i % 2 === 0 ? 'flag.updated' : 'member.added',
        target_type: 'flag',
        target_id: `bulk.flag.${i}`,
        changes: { enabled: { old: i % 2 === 0, new: i % 2 !== 0 }, note: { old: null, new: `record ${i}` } },
        request_id: `req-${i.toString(36)}`,
        ip_address: '203.0.113.7',
      });
      const hash = sha256Digest(prev, fields);
      batch.push({ ...fields, prev_hash: prev, hash });
      prev = hash;
    }
    // One statement per 10,000 rows, in chain order (times increase; ids follow the select's order).
    await t.rows(sql`insert into audit_records
        (workspace_id, created_at, actor_id, actor_kind, action, target_type, target_id, changes,
         request_id, ip_address, prev_hash, hash)
      select r.workspace_id, r.created_at, r.actor_id, r.actor_kind, r.action, r.target_type, r.target_id,
        r.changes, r.request_id, r.ip_address, r.prev_hash, r.hash
      from jsonb_to_recordset(${JSON.stringify(batch)}::jsonb) as r(
        workspace_id uuid, created_at timestamptz, actor_id text, actor_kind text, action text,
        target_type text, target_id text, changes jsonb, request_id text, ip_address text,
        prev_hash text, hash text)
      order by r.created_at`);
  }
  const [last] = await t.rows<{ id: string }>(
    sql`select max(id) as id from audit_records where workspace_id = ${owner.workspaceId}`,
  );
  const lastId = Number(last?.id);
  await t.database.db
    .update(auditChainHeads)
    .set({ hash: prev, last_id: lastId })
    .where(sql`${auditChainHeads.workspace_id} = ${owner.workspaceId}`);
  console.info(`audit export: set up in ${Date.now() - began} ms`);
}, 120_000);
afterAll(async () => {
  // The client side of the abandoned export (undici's pooled socket) stays open until Fastify's
  // 72 s keep-alive timeout, and app.close() would wait for it: drop every socket first.
  t.app.server.closeAllConnections();
  await t.close();
});

describe(`a ${RECORDS}-record export`, () => {
  it('streams to the end with the heap held under a fixed bound', async () => {
    // Retained memory: the heap after a collection, plus Buffers (a response written to the
    // socket faster than it drains waits there as Buffers, outside the heap).
    const retained = () => {
      gc();
      const usage = process.memoryUsage();
      return usage.heapUsed + usage.external;
    };
    // Several collections, a turn of the event loop apart, so Buffers freed by finalizers are gone.
    for (let i = 0; i < 4; i++) {
      gc();
      await new Promise((resolve) => setImmediate(resolve));
    }
    const baseline = retained();
    let peak = 0;
    const sample = () => {
      peak = Math.max(peak, retained() - baseline);
    };
    // Sampled on a timer too, so memory held before the first byte arrives is seen.
    const timer = setInterval(sample, 1_000);
    let lines = 0;
    let bytes = 0;
    try {
      const response = await fetch(`${base}/api/settings/audit/export`, {
        method: 'POST',
        headers: { ...owner.headers, 'content-type': 'application/json' },
        body: JSON.stringify({ format: 'jsonl' }),
      });
      expect(response.status).toBe(200);
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      let sinceSample = 0;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        if (bytes === 0) sample();
        bytes += value.byteLength;
        sinceSample += value.byteLength;
        for (const byte of value) if (byte === 10) lines += 1;
        if (sinceSample > 4_000_000) {
          sinceSample = 0;
          sample();
        }
      }
    } finally {
      clearInterval(timer);
    }
    // The workspace's creation, then the bulk records.
    expect(lines).toBe(RECORDS + 1);
    // About 470 bytes a line: all of it held at once (47 MB for 100,000) would exceed the bound.
    expect(bytes).toBeGreaterThan(RECORDS * 400);
    console.info(
      `audit export: ${lines} lines, ${(bytes / 1e6).toFixed(1)} MB, peak heap growth ${(peak / 1e6).toFixed(1)} MB`,
    );
    if (onPostgres) expect(peak).toBeLessThan(HEAP_BOUND);
  }, 120_000);

  it('stops reading when the client goes away', async () => {
    const gone = new AbortController();
    const chunks = t.services.audit.export(
      { workspaceId: owner.workspaceId, userId: owner.userId },
      { format: 'jsonl' },
      gone.signal,
    );
    const first = await chunks.next();
    expect(first.done).toBe(false);
    gone.abort();
    expect(await chunks.next()).toEqual({ done: true, value: undefined });

    // Over a socket: the client reads one chunk and leaves; the server stays healthy.
    const client = new AbortController();
    const response = await fetch(`${base}/api/settings/audit/export`, {
      method: 'POST',
      headers: { ...owner.headers, 'content-type': 'application/json' },
      body: JSON.stringify({ format: 'csv' }),
      signal: client.signal,
    });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    expect((await reader.read()).done).toBe(false);
    client.abort();
    const after = await t.call(owner, 'GET', '/api/settings/audit/info');
    expect(after.statusCode).toBe(200);
  }, 120_000);

  it('verifies the whole chain in batches', async () => {
    const response = await t.call(owner, 'GET', '/api/settings/audit/info');
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({
      total: RECORDS + 1,
      chain: { verified: true, checked: RECORDS + 1 },
    });
  }, 120_000);
});
