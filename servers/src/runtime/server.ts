import type { Server } from 'node:http';
import type { Express } from 'express';

export interface RunningServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Listens on host:port (port 0 picks a free one) and resolves once the server accepts connections. */
export function listen(app: Express, port: number, host = '127.0.0.1'): Promise<RunningServer> {
  return new Promise((resolve, reject) => {
    const server: Server = app.listen(port, host);
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
