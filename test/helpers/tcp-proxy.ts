import net from 'node:net';

export interface TcpProxyOptions {
  /**
   * How many bytes of the server's answer the n-th connection (0, 1, ...) passes before the proxy cuts
   * it (both sides); undefined: that connection is not cut.
   */
  cutAfterBytes?: (connection: number) => number | undefined;
  /**
   * Where the cut may fall: from `cutAfterBytes` on, the proxy cuts after the first byte at which this
   * answers true for the answer so far (to aim at a byte, or to spare one a client cannot survive).
   */
  cutWhere?: (answerSoFar: Buffer, connection: number) => boolean;
}

/**
 * A TCP proxy in front of a server, to take it away and bring it back (database outage tests), or to
 * cut connections after a number of bytes of the answer (a network that drops mid-event).
 */
export async function startTcpProxy(targetHost: string, targetPort: number, options: TcpProxyOptions = {}) {
  const sockets = new Set<net.Socket>();
  let server: net.Server | null = null;
  let port = 0;
  let connections = 0;
  const listen = () =>
    new Promise<void>((resolve) => {
      server = net.createServer((client) => {
        const upstream = net.connect(targetPort, targetHost);
        sockets.add(client);
        sockets.add(upstream);
        const connection = connections++;
        const cutAfter = options.cutAfterBytes?.(connection);
        client.pipe(upstream);
        if (cutAfter === undefined) upstream.pipe(client);
        else {
          let cutAt = cutAfter;
          let answer = Buffer.alloc(0);
          upstream.on('data', (chunk: Buffer) => {
            if (answer.length >= cutAt) return;
            let part = chunk.subarray(0, cutAt - answer.length);
            answer = Buffer.concat([answer, part]);
            while (answer.length === cutAt && options.cutWhere && !options.cutWhere(answer, connection)) {
              cutAt++;
              const more = chunk.subarray(part.length, part.length + 1);
              part = chunk.subarray(0, part.length + more.length);
              answer = Buffer.concat([answer, more]);
            }
            // What passed is flushed to the client before both sides are cut.
            if (answer.length >= cutAt) client.end(part, drop);
            else client.write(part);
          });
        }
        const drop = () => {
          client.destroy();
          upstream.destroy();
          sockets.delete(client);
          sockets.delete(upstream);
        };
        client.on('error', drop).on('close', drop);
        upstream.on('error', drop).on('close', drop);
      });
      server.listen(port, '127.0.0.1', () => {
        port = (server!.address() as net.AddressInfo).port;
        resolve();
      });
    });
  await listen();
  return {
    get port() {
      return port;
    },
    /** Cuts every connection and stops accepting: the database is "down". */
    async down() {
      for (const s of sockets) s.destroy();
      sockets.clear();
      await new Promise<void>((r) => server!.close(() => r()));
    },
    /** Accepts again on the same port: the database is "back". */
    up: listen,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => (server?.listening ? server.close(() => r()) : r()));
    },
  };
}
