import { generateOpenApi } from '@ts-rest/open-api';
import { isZodType, type AppRoute } from '@ts-rest/core';
import { OpenApiBuilder, type OpenAPIObject, type PathItemObject } from 'openapi3-ts/oas31';
import {
  isPaid,
  listRoutes,
  priceRange,
  routeMeta,
  type DataModes,
  type ServiceDefinition,
} from '@agent-economy/contracts';

import { hoistNamedSchemas, tidySchemas } from './components';
import { exampleOf } from './examples';

export type OpenApiDocument = OpenAPIObject;

const STATUS_TEXT: Record<string, string> = {
  '200': 'Success',
  '201': 'Created',
  '204': 'No content',
  '400': 'Invalid input: `error.details.fields` lists each field and what is wrong',
  '401': 'Authentication failed',
  '402': 'Payment required, or the payment was refused: the x402 quote is in the PAYMENT-REQUIRED header',
  '403': 'Not allowed for this caller',
  '404': 'Not found',
  '409': 'Conflicts with the current state',
  '413': 'Request body too large',
  '422': 'Breaks a domain rule',
  '429': 'Rate limited: retry after the Retry-After header',
  '500': 'Unexpected server error, logged with the request id',
  '502': 'An upstream provider failed: retry after the Retry-After header',
  '503': 'Settlement or a dependency is unavailable: nothing was charged; retry after the Retry-After header',
};

const PAID_429_TEXT =
  'Rate limited, or the payment facilitator is at a settlement cap (global_settle_cap_exceeded, seller_settle_cap_exceeded, payer_settle_cap_exceeded): nothing was charged; pay again after the Retry-After header';

/** x402 wire routes answer errors in the x402 shape the route declares, not the envelope. */
const X402_STATUS_TEXT: Record<string, string> = {
  '400':
    'Malformed request: the x402 body names the reason (invalid_payload, invalid_payment_requirements, invalid_x402_version)',
  '500': 'Unexpected failure, in the x402 shape',
  '503': 'The chain is unreachable, in the x402 shape; retry after the Retry-After header',
};

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

/** The error body of a status: typed `details` where the runtime's are known, else the plain envelope. */
function errorSchema(code: number, paid: boolean, settleFirst: boolean) {
  if (code === 400) return ref('InvalidRequestError');
  if (code === 402) return ref('PaymentRequiredError');
  // A settle-first route's failures after settlement carry the refund sent.
  if (paid && settleFirst) return ref('RefundedError');
  return ref('ErrorEnvelope');
}

/** An x402 header: base64 of JSON, whose decoded value the named component describes (JSON Schema content keywords). */
const base64Json = (name: string) => ({
  type: 'string',
  contentEncoding: 'base64',
  contentMediaType: 'application/json',
  contentSchema: ref(name),
});

/** The security scheme a paid operation is paid through: the x402 payment header, answering the 402 quote. */
const X402_SCHEME = {
  type: 'apiKey',
  in: 'header',
  name: 'PAYMENT-SIGNATURE',
  description:
    'x402 v2 payment: base64 JSON PaymentPayload answering the quote of a 402 answer (its PAYMENT-REQUIRED header, decoded: ' +
    '`#/components/schemas/PaymentRequired`). Not a standing credential: each payment pays for one request. The `x-payment` ' +
    'extension of each operation states its price.',
} as const;
const SIWX_SCHEME = {
  type: 'apiKey',
  in: 'header',
  name: 'SIGN-IN-WITH-X',
  description: 'base64 JSON CAIP-122 / Sign-In-With-Solana proof of wallet ownership, Ed25519 signature in base58',
} as const;

// An OpenAPI operation object as ts-rest generates it, edited in place key by key.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Operation = Record<string, any>;

function paymentExtension(route: AppRoute) {
  const { payment, settle } = routeMeta(route);
  const range = priceRange(payment);
  return {
    ...payment,
    ...(isPaid(payment)
      ? {
          currency: 'USD',
          minUsd: range.minUsd,
          maxUsd: range.maxUsd,
          protocol: 'x402',
          x402Version: 2,
          scheme: 'exact',
        }
      : {}),
    // Settled before the handler runs; a failed request is refunded on chain (error.details.refund).
    ...(isPaid(payment) && settle === 'first' ? { settle: 'first' } : {}),
    // Where the decoded x402 headers are described: the quote (PAYMENT-REQUIRED) and the receipt (PAYMENT-RESPONSE).
    ...(isPaid(payment) ? { quoteSchema: ref('PaymentRequired').$ref, receiptSchema: ref('SettleResponse').$ref } : {}),
  };
}

function priceText(route: AppRoute): string {
  const payment = routeMeta(route).payment;
  switch (payment.kind) {
    case 'free':
      return 'Free.';
    case 'fixed':
      return `Price: ${payment.usd} USD per call.`;
    case 'adaptive':
      return `Price: ${payment.minUsd} to ${payment.maxUsd} USD, set per request (adaptive).`;
    case 'tiered':
      return `Price by tier: ${payment.tiers.map((t) => `${t.id} ${t.usd} USD (${t.description})`).join('; ')}.`;
  }
}

/** True when the operation's 200 answer carries a `source` (where its numbers came from). */
function answersWithSource(operation: Operation): boolean {
  const content = (
    operation.responses?.['200'] as
      { content?: Record<string, { schema?: { properties?: Record<string, unknown> } }> } | undefined
  )?.content;
  return !!content?.['application/json']?.schema?.properties?.source;
}

/** The sentence naming the modes a data route can answer with, and what each means for this service. */
function dataModesText(modes: DataModes): string {
  const parts = Object.entries(modes).map(([mode, meaning]) => `\`${mode}\` (${meaning})`);
  return `Data: \`source.mode\` is ${parts.join(', or ')}.`;
}

function asRecord(value: unknown): Record<string, unknown> {
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function decorate(service: ServiceDefinition, key: string, route: AppRoute, operation: Operation): Operation {
  const serviceId = service.id;
  const meta = routeMeta(route);
  const paid = isPaid(meta.payment);
  operation.operationId = `${serviceId}.${key}`;
  operation.tags = [serviceId];
  operation.description = `${route.description ?? ''}\n\n${priceText(route)}`.trim();
  operation['x-payment'] = paymentExtension(route);
  if (service.dataModes && answersWithSource(operation)) {
    operation.description += `\n\n${dataModesText(service.dataModes)}`;
    operation['x-data-modes'] = Object.keys(service.dataModes);
  }

  for (const parameter of operation.parameters ?? []) {
    const source =
      parameter.in === 'path' ? meta.example?.params : parameter.in === 'query' ? meta.example?.query : undefined;
    if (source && parameter.name in source) parameter.example = source[parameter.name];
  }
  // Paid operations are paid through the x402 scheme (PAYMENT-SIGNATURE); free ones state that they need nothing.
  const requirement: Record<string, string[]> = {};
  if (paid) requirement.x402 = [];
  if (meta.auth === 'siwx') requirement.siwx = [];
  operation.security = Object.keys(requirement).length ? [requirement] : [];
  if (paid && meta.settle === 'first') {
    operation.description +=
      '\n\nSettles first: the payment is settled on chain before the request is carried out. If the request then fails, the whole amount is refunded on chain to the payer and the error says so in `error.details.refund` (`transaction`, `amountAtomic`) and in the PAYMENT-RESPONSE header.';
  }
  if (meta.auth === 'siwx') {
    operation.description +=
      '\n\nCaller identity: SIGN-IN-WITH-X header (CAIP-122 / SIWS wallet proof); a missing or failed proof is 401 siwx_invalid.';
  }
  if (operation.requestBody) {
    operation.requestBody.required = true;
    operation.requestBody.description = 'JSON request body';
    if (meta.example?.body !== undefined) operation.requestBody.content['application/json'].example = meta.example.body;
  }

  for (const [status, response] of Object.entries<Operation>(operation.responses)) {
    const code = Number(status);
    response.description =
      meta.wire === 'x402' && code >= 400
        ? (X402_STATUS_TEXT[status] ?? response.description)
        : paid && code === 429
          ? PAID_429_TEXT
          : (STATUS_TEXT[status] ?? response.description);
    if (code >= 400 && meta.wire !== 'x402')
      response.content = { 'application/json': { schema: errorSchema(code, paid, meta.settle === 'first') } };
    if (code === 402) {
      response.headers = {
        'PAYMENT-REQUIRED': {
          description:
            'base64 JSON x402 v2 PaymentRequired: what to pay, to whom, on which network; the same quote is in `error.details`',
          schema: base64Json('PaymentRequired'),
        },
      };
    }
    if (paid && code >= 200 && code < 300) {
      response.headers = {
        'PAYMENT-RESPONSE': {
          description: 'base64 JSON x402 v2 SettleResponse: the settlement receipt',
          schema: base64Json('SettleResponse'),
        },
      };
    }
    if (paid && meta.settle === 'first' && code >= 400 && code !== 402) {
      response.headers = {
        'PAYMENT-RESPONSE': {
          description:
            'base64 JSON x402 v2 SettleResponse when the payment had settled: the settlement, and `refund` (transaction, amountAtomic) once refunded',
          schema: base64Json('SettleResponse'),
        },
      };
    }
    const json = response.content?.['application/json'];
    if (code >= 200 && code < 300 && json && json.example === undefined) {
      const schema = route.responses[code as keyof typeof route.responses];
      const request = { ...asRecord(meta.example?.body), ...meta.example?.query, ...meta.example?.params };
      const example = isZodType(schema) ? exampleOf(schema, request) : undefined;
      if (example !== undefined) json.example = example;
    }
    if ((code === 429 || code === 502 || code === 503) && !response.headers?.['Retry-After']) {
      response.headers = {
        ...response.headers,
        'Retry-After': { description: 'seconds to wait before retrying', schema: { type: 'integer' } },
      };
    }
  }
  return operation;
}

/** The OpenAPI 3.1 document of one service, generated from its contract alone (assembled with openapi3-ts' builder). */
export function buildOpenApiDocument(service: ServiceDefinition, options: { serverUrl: string }): OpenApiDocument {
  const keys = new Map(listRoutes(service.router).map(({ key, route }) => [route, key]));
  const generated = generateOpenApi(
    service.router,
    { info: { title: service.title, version: '1.0.0' } },
    {
      operationMapper: (operation, route) => decorate(service, keys.get(route)!, route, operation) as typeof operation,
    },
  );
  tidySchemas(generated.paths);
  const paid = listRoutes(service.router).some(({ route }) => isPaid(routeMeta(route).payment));
  const usesSiwx = listRoutes(service.router).some(({ route }) => routeMeta(route).auth === 'siwx');
  const settleFirst = listRoutes(service.router).some(
    ({ route }) => isPaid(routeMeta(route).payment) && routeMeta(route).settle === 'first',
  );
  // Components the decoration refers to by name: the error envelopes, and on paid services the decoded x402 headers.
  const always = [
    'ErrorEnvelope',
    'InvalidRequestError',
    ...(paid ? ['PaymentRequired', 'PaymentRequiredError', 'SettleResponse'] : []),
    ...(settleFirst ? ['RefundedError'] : []),
  ];
  const { paths, schemas } = hoistNamedSchemas(
    service.router,
    generated.paths as Record<string, PathItemObject>,
    always,
  );

  const builder = OpenApiBuilder.create({ openapi: '3.1.0', info: { title: '', version: '' }, paths: {} })
    .addInfo({
      title: service.title,
      version: '1.0.0',
      description:
        `${service.description}\n\n` +
        'Errors use one envelope: `{ "error": { "code", "message", "details" }, "requestId" }`. ' +
        'Paid operations answer 402 with an x402 v2 quote in the PAYMENT-REQUIRED header; pay it by retrying with ' +
        'PAYMENT-SIGNATURE. Each operation’s price is in its description and in its `x-payment` extension.',
      license: { name: 'MIT', url: 'https://opensource.org/licenses/MIT' },
    })
    .addServer({ url: options.serverUrl, description: 'this deployment' })
    .addTag({ name: service.id, description: service.title });
  for (const [path, item] of Object.entries(paths)) builder.addPath(path, item);
  for (const [name, schema] of Object.entries(schemas)) builder.addSchema(name, schema);
  if (paid) builder.addSecurityScheme('x402', X402_SCHEME);
  if (usesSiwx) builder.addSecurityScheme('siwx', SIWX_SCHEME);
  return builder.getSpec();
}
