import net from 'node:net';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestDatabaseEnv, onPostgres, type TestDatabaseEnv } from '../../tests/helpers/test-app.ts';
import { createTestDb, type TestDb } from '../../tests/helpers/test-db.ts';
import { loadConfig } from '../config.ts';
import { type Database, openDatabase } from './client.ts';
import { isDatabaseUnavailable } from './errors.ts';
import { rowsOf } from './rows.ts';
import { afterCommit, type Db, inTransaction, isTransaction, lockAppendOrder } from './transaction.ts';

let t: TestDb;
let db: Db;

beforeAll(async () => {
  // The ordering test holds a transaction open on purpose: on PGlite the other one waits for
  // the single connection longer than the gate's default deadline.
  t = await createTestDb({ env: { DB_QUEUE_TIMEOUT_MS: '30000' } });
  db = t.database.db;
  await db.execute(sql`create table transaction_test_log (id bigserial primary key, stream text not null)`);
});
afterAll(() => t.close());

const append = async (tx: Db, stream: string): Promise<number> => {
  const result = await tx.execute(
    sql`insert into transaction_test_log (stream) values (${stream}) returning id`,
  );
  return Number(rowsOf<{ id: string | number }>(result)[0]?.id);
};

/** A promise and the function that resolves it. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, opened };
}

describe('afterCommit', () => {
  it('runs once the transaction has committed, in registration order', async () => {
    const ran: string[] = [];
    await inTransaction(db, async (tx) => {
      expect(isTransaction(tx)).toBe(true);
      afterCommit(tx, () => ran.push('first'));
      afterCommit(tx, () => ran.push('second'));
      await append(tx, 'commit');
      expect(ran).toEqual([]);
    });
    expect(ran).toEqual(['first', 'second']);
  });

  it('never runs for a transaction that rolls back', async () => {
    const ran: string[] = [];
    await expect(
      inTransaction(db, async (tx) => {
        afterCommit(tx, () => ran.push('rolled back'));
        throw new Error('abandon');
      }),
    ).rejects.toThrow('abandon');
    expect(ran).toEqual([]);
  });

  it('holds a savepoint’s work for the outer commit, and drops a savepoint rolled back', async () => {
    const ran: string[] = [];
    await inTransaction(db, async (tx) => {
      await inTransaction(tx, async (inner) => {
        afterCommit(inner, () => ran.push('kept'));
      });
      expect(ran).toEqual([]);
      await inTransaction(tx, async (inner) => {
        afterCommit(inner, () => ran.push('dropped'));
        throw new Error('undo the savepoint');
      }).catch(() => undefined);
    });
    expect(ran).toEqual(['kept']);
  });

  it('runs at once outside a transaction', () => {
    expect(isTransaction(db)).toBe(false);
    const callback = vi.fn();
    afterCommit(db, callback);
    expect(callback).toHaveBeenCalledOnce();
  });

  it('keeps a committed change committed when a callback throws, and reports it as a warning', async () => {
    const warning = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    const ran: string[] = [];
    try {
      const id = await inTransaction(db, async (tx) => {
        afterCommit(tx, () => {
          throw new Error('hub down');
        });
        afterCommit(tx, () => ran.push('still runs'));
        return append(tx, 'throwing');
      });
      const rows = await db.execute(sql`select id from transaction_test_log where id = ${id}`);
      expect(rowsOf(rows)).toHaveLength(1);
      expect(ran).toEqual(['still runs']);
      expect(warning).toHaveBeenCalledWith(
        expect.objectContaining({ message: 'hub down' }),
        'AfterCommitWarning',
      );
    } finally {
      warning.mockRestore();
    }
  });
});

describe('lockAppendOrder', () => {
  it('refuses to run outside a transaction, where it would order nothing', async () => {
    await expect(lockAppendOrder(db, 'stream')).rejects.toThrow(/needs a transaction/);
  });

  it('makes a second append to a stream wait until the first commits, so ids become visible in order', async () => {
    const holdFirst = gate();
    const firstAppended = gate();
    const events: string[] = [];
    const first = inTransaction(db, async (tx) => {
      await lockAppendOrder(tx, 'ordered');
      const id = await append(tx, 'ordered');
      events.push('first appended');
      firstAppended.open();
      await holdFirst.opened;
      events.push('first commits');
      return id;
    });
    await firstAppended.opened;
    const second = inTransaction(db, async (tx) => {
      await lockAppendOrder(tx, 'ordered');
      events.push('second appends');
      return append(tx, 'ordered');
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(events).toEqual(['first appended']);
    holdFirst.open();
    const [firstId, secondId] = await Promise.all([first, second]);
    expect(events).toEqual(['first appended', 'first commits', 'second appends']);
    expect(secondId).toBeGreaterThan(firstId);
  });

  // PGlite runs one transaction at a time whatever the lock, so only PostgreSQL can show this.
  it.runIf(onPostgres)('does not hold back appends to other streams', async () => {
    const holdFirst = gate();
    const firstAppended = gate();
    const first = inTransaction(db, async (tx) => {
      await lockAppendOrder(tx, 'stream-a');
      await append(tx, 'stream-a');
      firstAppended.open();
      await holdFirst.opened;
    });
    await firstAppended.opened;
    const other = await inTransaction(db, async (tx) => {
      await lockAppendOrder(tx, 'stream-b');
      return append(tx, 'stream-b');
    });
    expect(other).toBeGreaterThan(0);
    holdFirst.open();
    await first;
  });
});

/**
 * A loopback proxy in front of PostgreSQL that, once armed, forwards the next simple-protocol
 * COMMIT and then cuts the connection before the server's answer reaches the client (`after`),
 * or cuts it without forwarding the COMMIT at all (`before`): the two sides of a lost COMMIT.
 */
async function startCommitCutter(target: { host: string; port: number }) {
  let armed: 'before' | 'after' | undefined;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    sockets.add(client).add(upstream);
    const cut = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', cut);
    upstream.on('error', cut);
    client.on('close', cut);
    upstream.on('close', cut);
    let cutting = false;
    client.on('data', (chunk: Buffer) => {
      if (armed && chunk[0] === 0x51 && chunk.includes('commit\0')) {
        const side = armed;
        armed = undefined;
        cutting = true;
        if (side === 'after') upstream.write(chunk);
        // Long enough for the server to commit; its answer is never forwarded.
        setTimeout(cut, 200);
        return;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (!cutting) client.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    arm(side: 'before' | 'after') {
      armed = side;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe.runIf(onPostgres)('a COMMIT whose connection dies', () => {
  let dbEnv: TestDatabaseEnv;
  let cutter: Awaited<ReturnType<typeof startCommitCutter>>;
  let database: Database;

  beforeAll(async () => {
    dbEnv = await createTestDatabaseEnv();
    const config = loadConfig(dbEnv.env).database;
    if (config.kind !== 'postgres') throw new Error('expected PostgreSQL');
    cutter = await startCommitCutter({ host: config.host, port: config.port });
    database = await openDatabase({ ...config, port: cutter.port });
    await database.db.execute(sql`create table lost_commit_log (name text primary key)`);
  });
  afterAll(async () => {
    await database?.close();
    await cutter?.close();
    await dbEnv?.drop();
  });

  const names = async () => {
    const result = await database.db.execute(sql`select name from lost_commit_log order by name`);
    return rowsOf<{ name: string }>(result).map((row) => row.name);
  };

  it('is reported done when the server committed it, with its after-commit work', async () => {
    const ran: string[] = [];
    cutter.arm('after');
    const result = await inTransaction(database.db, async (tx) => {
      await tx.execute(sql`insert into lost_commit_log (name) values ('committed')`);
      afterCommit(tx, () => ran.push('announced'));
      return 'done';
    });
    expect(result).toBe('done');
    expect(ran).toEqual(['announced']);
    expect(await names()).toContain('committed');
  });

  it('fails as unavailable when the server never got it', async () => {
    const ran: string[] = [];
    cutter.arm('before');
    const attempt = inTransaction(database.db, async (tx) => {
      await tx.execute(sql`insert into lost_commit_log (name) values ('lost')`);
      afterCommit(tx, () => ran.push('announced'));
    });
    const error = await attempt.then(
      () => undefined,
      (reason: unknown) => reason,
    );
    expect(isDatabaseUnavailable(error)).toBe(true);
    expect(ran).toEqual([]);
    expect(await names()).not.toContain('lost');
  });
});
