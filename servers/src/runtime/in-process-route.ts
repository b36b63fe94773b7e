import type { AppRoute } from '@ts-rest/core';
import type { Logger } from 'pino';
import type { InProcessAnswer, InProcessRoute } from '../http/in-process';
import { SpanKind, currentTrace, endSpan, randomHex, runInTrace, startSpan } from '../http/tracing';
import { routeMeta } from '@agent-economy/contracts';
import type { ErrorReply } from './app';
import { HttpError } from './errors';
import { siwxMissing } from './siwx';
import { summarizeIssues, validateRequest } from './validation';

/**
 * A route a service also answers in process (http/in-process.ts), as its HTTP route answers: the body validated
 * against the contract, errors rendered as that route renders them (`render`), and, seen from outside, a server span
 * of the service under the caller's span and its request log line, so traces and logs read the same either way.
 */
export function inProcessRoute<B>(options: {
  route: AppRoute;
  /** The service's logger (its lines name the service). */
  logger: Logger;
  /** The error body the HTTP route sends (the envelope, or the route's own wire format). */
  render: (error: ErrorReply, body: unknown, requestId: string) => unknown;
  /** The route's work, for a caller proven to be `caller` (undefined: anonymous; never on a SIGN-IN-WITH-X route). */
  answer: (body: B, caller: string | undefined) => Promise<unknown>;
}): InProcessRoute {
  const { route, logger, render } = options;
  const path = route.path;
  const serve = async (body: unknown, caller: string | undefined, requestId: string): Promise<InProcessAnswer> => {
    const fail = (error: ErrorReply, retryAfter?: string): InProcessAnswer => ({
      status: error.status,
      body: render(error, body, requestId),
      ...(retryAfter ? { retryAfter } : {}),
    });
    try {
      const checked = validateRequest(route, { body, params: {}, query: {}, headers: {} });
      if (!checked.ok) {
        return fail({
          status: 400,
          code: 'invalid_request',
          message: summarizeIssues(checked.issues),
          details: { fields: checked.issues },
        });
      }
      // A route that proves its caller over HTTP (SIGN-IN-WITH-X) needs one in process too: the wallet the call is for.
      if (caller === undefined && routeMeta(route).auth === 'siwx') throw siwxMissing();
      return { status: 200, body: await options.answer(checked.parsed.body as B, caller) };
    } catch (error) {
      if (error instanceof HttpError) return fail(error, error.headers['retry-after']);
      logger.error({ err: error, requestId, path }, 'unhandled error');
      return fail({
        status: 500,
        code: 'internal_error',
        message: 'An unexpected error occurred; it has been logged with this request id',
      });
    }
  };
  return async (body, caller) => {
    const started = performance.now();
    const requestId = `req_${randomHex(12)}`;
    const trace = startSpan(`${route.method} ${path}`, SpanKind.SERVER, currentTrace(), {
      'http.request.method': route.method,
      'url.path': path,
      'network.transport': 'inproc',
    });
    const answer = await runInTrace(trace, () => serve(body, caller, requestId));
    if (logger.isLevelEnabled('info')) {
      const ms = Math.round((performance.now() - started) * 10) / 10;
      logger.info(
        { requestId, traceId: trace.traceId, method: route.method, path, status: answer.status, ms },
        'request',
      );
    }
    endSpan(trace, answer.status >= 500 ? new Error(`HTTP ${answer.status}`) : undefined, {
      'http.response.status_code': answer.status,
      'http.route': path,
    });
    return answer;
  };
}
