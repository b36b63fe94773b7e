import pino, { type Logger } from 'pino';

export type { Logger };

export function createLogger(level = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino({
    level,
    base: undefined,
    timestamp: pino.stdTimeFunctions.isoTime,
    // Payment and sign-in headers carry signed transactions and proofs: never log them.
    redact: ['req.headers["payment-signature"]', 'req.headers["sign-in-with-x"]', 'req.headers.authorization'],
  });
}
