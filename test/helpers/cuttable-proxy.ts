import net from 'node:net';

/** A TCP proxy in front of a database that can be cut off without a word. */
export interface CuttableProxy {
  /** `databaseUrl` with the proxy's address. */
  url: string;
  /**
   * From now on nothing passes either way and no connection is closed or refused: a database whose
   * packets are dropped (a black hole). New connections are accepted and never answered.
   */
  cut(): void;
  close(): Promise<void>;
}

/** Starts a proxy on 127.0.0.1 to the server of `databaseUrl`, passing everything until `cut()`. */
export async function cuttableProxy(databaseUrl: string): Promise<CuttableProxy> {
  const target = new URL(databaseUrl);
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
  };
  let cut = false;
  const server = net.createServer((client) => {
    track(client);
    if (cut) return;
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    track(upstream);
    client.on('data', (chunk) => cut || upstream.write(chunk));
    upstream.on('data', (chunk) => cut || client.write(chunk));
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => cut || client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(databaseUrl);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as net.AddressInfo).port);
  return {
    url: url.toString(),
    cut: () => {
      cut = true;
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
