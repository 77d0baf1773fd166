import net from 'node:net';

/** A TCP proxy in front of a server, to take it away and bring it back (database outage tests). */
export async function startTcpProxy(targetHost: string, targetPort: number) {
  const sockets = new Set<net.Socket>();
  let server: net.Server | null = null;
  let port = 0;
  const listen = () =>
    new Promise<void>((resolve) => {
      server = net.createServer((client) => {
        const upstream = net.connect(targetPort, targetHost);
        sockets.add(client);
        sockets.add(upstream);
        client.pipe(upstream).pipe(client);
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
