import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Express } from 'express';

export interface RunningServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** How many connections a server holds: in all, and from one remote address. */
export interface ConnectionLimits {
  maxConnections: number;
  maxConnectionsPerClient: number;
}
export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = { maxConnections: 8_192, maxConnectionsPerClient: 256 };

/**
 * Keeps a server's connections within its limits. A new connection past a limit closes the oldest
 * connection that never sent a request (a flood of idle or half-open sockets) rather than being refused,
 * so real requests are still served during a flood. A kept-alive connection that has served requests is
 * closed only once idle for a while (its client may be reusing it this instant, and could not tell whether
 * a request it sent on it arrived); when none can go, the new connection is closed before it sends anything.
 */
export function limitConnections(server: Server, limits: ConnectionLimits = DEFAULT_CONNECTION_LIMITS): void {
  const IDLE_MS = 10_000;
  const all = new Map<Socket, { client: string; busy: number; served: number; idleSince: number }>(); // insertion order: oldest first
  const byClient = new Map<string, Set<Socket>>();
  const evict = (sockets: Iterable<Socket>, except: Socket): boolean => {
    const now = Date.now();
    let stale: Socket | undefined;
    for (const socket of sockets) {
      const entry = all.get(socket);
      if (socket === except || !entry || entry.busy > 0) continue;
      if (entry.served === 0) {
        socket.destroy();
        return true;
      }
      if (!stale && now - entry.idleSince >= IDLE_MS) stale = socket;
    }
    stale?.destroy();
    return stale !== undefined;
  };
  // A hard backstop: Node drops connections past it before any JavaScript runs.
  server.maxConnections = limits.maxConnections + 64;
  server.on('connection', (socket: Socket) => {
    const client = socket.remoteAddress ?? 'unknown';
    all.set(socket, { client, busy: 0, served: 0, idleSince: Date.now() });
    const mine = byClient.get(client) ?? new Set<Socket>();
    byClient.set(client, mine);
    mine.add(socket);
    socket.once('close', () => {
      all.delete(socket);
      mine.delete(socket);
      if (mine.size === 0 && byClient.get(client) === mine) byClient.delete(client);
    });
    if (mine.size > limits.maxConnectionsPerClient && !evict(mine, socket)) socket.destroy();
    else if (all.size > limits.maxConnections && !evict(all.keys(), socket)) socket.destroy();
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const entry = all.get(req.socket);
    if (!entry) return;
    entry.busy++;
    entry.served++;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      entry.busy--;
      entry.idleSince = Date.now();
    };
    res.once('finish', finish);
    res.once('close', finish);
  });
}

/** Listens on host:port (port 0 picks a free one) and resolves once the server accepts connections. */
export function listen(app: Express, port: number, host = '127.0.0.1', limits: ConnectionLimits = DEFAULT_CONNECTION_LIMITS): Promise<RunningServer> {
  return new Promise((resolve, reject) => {
    const server: Server = app.listen(port, host);
    // Idle connections must be closed by the client side first (Node's agent after 5 s, load balancers
    // typically after 60 s): a request sent on a socket the server has just closed fails, and the client
    // cannot tell whether a POST on it arrived, so it cannot safely send it again.
    server.keepAliveTimeout = 65_000;
    // A connection must send its headers within 10 s of opening (or of starting a request on a kept-alive
    // one: Node does not apply this to a connection idle between requests) and its whole request within 30 s.
    server.headersTimeout = 10_000;
    server.requestTimeout = 30_000;
    limitConnections(server, limits);
    server.once('error', reject);
    server.once('listening', () => {
      const address = server.address();
      const actual = typeof address === 'object' && address ? address.port : port;
      resolve({
        url: `http://${host}:${actual}`,
        port: actual,
        close: () =>
          new Promise<void>((done, fail) => {
            server.close((err) => (err ? fail(err) : done()));
            server.closeAllConnections();
          }),
      });
    });
  });
}
