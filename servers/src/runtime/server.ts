import type { Server } from 'node:http';
import type { Express } from 'express';
import { DEFAULT_CONNECTION_LIMITS, limitConnections, type ConnectionLimits } from '../http/connections';
import { serveInProcess } from '../http/in-process';

export { DEFAULT_CONNECTION_LIMITS, type ConnectionLimits };

export interface RunningServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Listens on host:port (port 0 picks a free one) and resolves once the server accepts connections. */
export function listen(
  app: Express,
  port: number,
  host = '127.0.0.1',
  limits: ConnectionLimits = DEFAULT_CONNECTION_LIMITS,
): Promise<RunningServer> {
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
      const url = `http://${host}:${actual}`;
      const unserve = serveInProcess(app, url);
      resolve({
        url,
        port: actual,
        close: () =>
          new Promise<void>((done, fail) => {
            unserve();
            server.close((err) => (err ? fail(err) : done()));
            server.closeAllConnections();
          }),
      });
    });
  });
}
