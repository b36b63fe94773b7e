import pino, { type Logger } from 'pino';
import { currentTrace } from '../http/tracing';

export type { Logger };

export function createLogger(level = process.env.LOG_LEVEL ?? 'info', destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: undefined,
    timestamp: pino.stdTimeFunctions.isoTime,
    // Every line written while a request is served names its trace (http/tracing.ts): a facilitator's lines carry
    // the trace id of the service request that asked it to settle.
    mixin: () => {
      const trace = currentTrace();
      return trace ? { traceId: trace.traceId } : {};
    },
    // Payment and sign-in headers carry signed transactions and proofs: never log them.
    redact: ['req.headers["payment-signature"]', 'req.headers["sign-in-with-x"]', 'req.headers.authorization'],
  };
  return destination ? pino(options, destination) : pino(options);
}
