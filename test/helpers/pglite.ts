import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';

/**
 * A PostgreSQL with pgvector for the tests of the pgvector path (test/knowledge/pgvector.test.ts):
 * PGlite (PostgreSQL compiled to WebAssembly, in this process) with its pgvector build, served over
 * PostgreSQL's wire protocol, so the app's own `pg` pool talks to it as to any server. The PostgreSQL
 * the suite runs on otherwise has no pgvector, and none can be installed there.
 */
export async function startPgvector(): Promise<{ url: string; close(): Promise<void> }> {
  const db = await PGlite.create({ extensions: { vector } });
  const server = new PGLiteSocketServer({ db: oneExchangeAtATime(db), port: 0, host: '127.0.0.1', maxConnections: 20 });
  await server.start();
  return {
    url: `postgres://postgres@${server.getServerConn()}/postgres`,
    close: async () => {
      await server.stop();
      await db.close();
    },
  };
}

/** Messages that end an exchange of PostgreSQL's protocol: Sync, a simple Query, Terminate. */
const EXCHANGE_ENDS = new Set(['S', 'Q', 'X'].map((c) => c.charCodeAt(0)));

/**
 * PGlite is one backend session for every connection, and pglite-socket (0.2) queues its connections'
 * messages one by one, keeping a connection's turn only inside a transaction: two connections' extended
 * queries (Parse, Bind, Execute, Sync: the `pg` driver's every parameterised statement) interleaved, and
 * one's Bind met the other's unnamed statement ("bind message supplies 2 parameters, but prepared
 * statement "" requires 10"). The server's queue reads `isInTransaction()` to keep a connection's turn;
 * here it is also true from a message that opens an exchange until the one that ends it.
 */
function oneExchangeAtATime(db: PGlite): PGlite {
  let midExchange = false;
  return new Proxy(db, {
    get(target, property) {
      if (property === 'isInTransaction') return () => midExchange || target.isInTransaction();
      if (property === 'execProtocolRawStream') {
        return (message: Uint8Array, options: Parameters<PGlite['execProtocolRawStream']>[1]) => {
          // A startup message begins with its length (a zero byte here), no type: it ends nothing and opens nothing.
          if (message[0] !== 0) midExchange = !EXCHANGE_ENDS.has(message[0]);
          return target.execProtocolRawStream(message, options);
        };
      }
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
