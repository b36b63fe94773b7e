import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

// Shared by the services' runtime and the local ledger's server, which must not depend on each other.

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
  // insertion order: oldest first
  type Entry = { client: string; busy: number; served: number; idleSince: number };
  const all = new Map<Socket, Entry>();
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
  // A response emits 'close' once, answered or cut off. Its entry is kept by a closure: a property set on the response
  // (Node's responses hold their properties in a dictionary) cost about three times as much CPU a request, measured.
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const entry = all.get(req.socket);
    if (!entry) return;
    entry.busy++;
    entry.served++;
    res.on('close', () => {
      entry.busy--;
      entry.idleSince = Date.now();
    });
  });
}
