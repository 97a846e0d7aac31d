import net from 'node:net';
import { type Extensions, PGlite } from '@electric-sql/pglite';

/** A PostgreSQL wire-protocol server on a loopback port, backed by an in-memory PGlite. */
export interface PgliteWireServer {
  port: number;
  /** The engine behind it, to look at what a client did. */
  pglite: PGlite;
  close(): Promise<void>;
}

/**
 * Serves an in-memory PGlite over the PostgreSQL protocol with only `extensions` installed:
 * a real server that lacks, say, pgvector, which this machine's PostgreSQL (where it is
 * installed for the other tests) cannot be. PGlite has one session, so connections take turns:
 * a later one waits until the earlier one closes.
 */
export async function startPgliteWireServer(extensions: Extensions = {}): Promise<PgliteWireServer> {
  const pglite = await PGlite.create({ extensions });
  const sockets = new Set<net.Socket>();
  let turn = Promise.resolve();
  const serve = (socket: net.Socket) =>
    new Promise<void>((resolve) => {
      let last = Promise.resolve();
      socket.on('data', (data) => {
        last = last.then(async () => {
          const answer = await pglite.execProtocolRaw(new Uint8Array(data));
          if (answer.length > 0 && socket.writable) socket.write(Buffer.from(answer));
        });
      });
      socket.once('close', () => void last.finally(resolve));
      socket.resume();
    });
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
    socket.pause();
    turn = turn.then(() => serve(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    pglite,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
      await pglite.close();
    },
  };
}
