import { generateSchema } from '@anatine/zod-openapi';
import { generateOpenApi } from '@ts-rest/open-api';
import type { AppRoute } from '@ts-rest/core';
import {
  ErrorEnvelope,
  isPaid,
  listRoutes,
  priceRange,
  routeMeta,
  type DataModes,
  type ServiceDefinition,
} from '@agent-economy/contracts';

export type OpenApiDocument = ReturnType<typeof generateOpenApi>;

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

/** x402 wire routes answer errors in the x402 shape the route declares, not the envelope. */
const X402_STATUS_TEXT: Record<string, string> = {
  '400': 'Malformed request: the x402 body names the reason (invalid_payload, invalid_payment_requirements, invalid_x402_version)',
  '500': 'Unexpected failure, in the x402 shape',
  '503': 'The chain is unreachable, in the x402 shape; retry after the Retry-After header',
};

const ERROR_REF = { $ref: '#/components/schemas/ErrorEnvelope' };

type Operation = Record<string, any>;

function paymentExtension(route: AppRoute) {
  const { payment, settle } = routeMeta(route);
  const range = priceRange(payment);
  return {
    ...payment,
    ...(isPaid(payment) ? { currency: 'USD', minUsd: range.minUsd, maxUsd: range.maxUsd, protocol: 'x402', x402Version: 2, scheme: 'exact' } : {}),
    // Settled before the handler runs; a failed request is refunded on chain (error.details.refund).
    ...(isPaid(payment) && settle === 'first' ? { settle: 'first' } : {}),
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
  const content = (operation.responses?.['200'] as { content?: Record<string, { schema?: { properties?: Record<string, unknown> } }> } | undefined)?.content;
  return !!content?.['application/json']?.schema?.properties?.source;
}

/** The sentence naming the modes a data route can answer with, and what each means for this service. */
function dataModesText(modes: DataModes): string {
  const parts = Object.entries(modes).map(([mode, meaning]) => `\`${mode}\` (${meaning})`);
  return `Data: \`source.mode\` is ${parts.join(', or ')}.`;
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
    const source = parameter.in === 'path' ? meta.example?.params : parameter.in === 'query' ? meta.example?.query : undefined;
    if (source && parameter.name in source) parameter.example = source[parameter.name];
  }
  if (paid) {
    operation.parameters = [
      ...(operation.parameters ?? []),
      {
        name: 'PAYMENT-SIGNATURE',
        in: 'header',
        required: false,
        description: 'x402 v2 payment: base64 JSON PaymentPayload answering the 402 quote',
        schema: { type: 'string' },
      },
    ];
  }
  if (paid && meta.settle === 'first') {
    operation.description +=
      '\n\nSettles first: the payment is settled on chain before the request is carried out. If the request then fails, the whole amount is refunded on chain to the payer and the error says so in `error.details.refund` (`transaction`, `amountAtomic`) and in the PAYMENT-RESPONSE header.';
  }
  if (meta.auth === 'siwx') {
    operation.security = [{ siwx: [] }];
    operation.description += '\n\nCaller identity: SIGN-IN-WITH-X header (CAIP-122 / SIWS wallet proof); a missing or failed proof is 401 siwx_invalid.';
  }
  if (operation.requestBody) {
    operation.requestBody.required = true;
    operation.requestBody.description = 'JSON request body';
    if (meta.example?.body !== undefined) operation.requestBody.content['application/json'].example = meta.example.body;
  }

  for (const [status, response] of Object.entries<Operation>(operation.responses)) {
    const code = Number(status);
    response.description =
      meta.wire === 'x402' && code >= 400 ? (X402_STATUS_TEXT[status] ?? response.description) : (STATUS_TEXT[status] ?? response.description);
    if (code >= 400 && meta.wire !== 'x402') response.content = { 'application/json': { schema: ERROR_REF } };
    if (code === 402) {
      response.headers = {
        'PAYMENT-REQUIRED': { description: 'base64 JSON x402 v2 PaymentRequired: what to pay, to whom, on which network', schema: { type: 'string' } },
      };
    }
    if (paid && code >= 200 && code < 300) {
      response.headers = {
        'PAYMENT-RESPONSE': { description: 'base64 JSON x402 v2 SettleResponse: the settlement receipt', schema: { type: 'string' } },
      };
    }
    if (paid && meta.settle === 'first' && code >= 400 && code !== 402) {
      response.headers = {
        'PAYMENT-RESPONSE': { description: 'base64 JSON x402 v2 SettleResponse when the payment had settled: the settlement, and `refund` (transaction, amountAtomic) once refunded', schema: { type: 'string' } },
      };
    }
    if ((code === 429 || code === 502 || code === 503) && !response.headers?.['Retry-After']) {
      response.headers = { ...response.headers, 'Retry-After': { description: 'seconds to wait before retrying', schema: { type: 'integer' } } };
    }
  }
  return operation;
}

/**
 * Repairs two things the zod converter writes that OpenAPI 3.0 readers reject: `nullable` on an untyped
 * schema (z.unknown(), which admits null anyway) and a discriminator over inline oneOf members (a
 * discriminator can only select $ref schemas; the members' own enums still tell them apart).
 */
function tidySchemas(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(tidySchemas);
  if (!node || typeof node !== 'object') return;
  const schema = node as Record<string, unknown>;
  if (schema.nullable && !('type' in schema) && !schema.$ref && !schema.allOf && !schema.oneOf && !schema.anyOf) delete schema.nullable;
  if (schema.discriminator && Array.isArray(schema.oneOf) && schema.oneOf.some((m) => !(m as { $ref?: string }).$ref)) delete schema.discriminator;
  Object.values(schema).forEach(tidySchemas);
}

/** The OpenAPI 3 document of one service, generated from its contract alone. */
export function buildOpenApiDocument(service: ServiceDefinition, options: { serverUrl: string }): OpenApiDocument {
  const keys = new Map(listRoutes(service.router).map(({ key, route }) => [route, key]));
  const document = generateOpenApi(
    service.router,
    {
      info: {
        title: service.title,
        version: '1.0.0',
        description:
          `${service.description}\n\n` +
          'Errors use one envelope: `{ "error": { "code", "message", "details" }, "requestId" }`. ' +
          'Paid operations answer 402 with an x402 v2 quote in the PAYMENT-REQUIRED header; pay it by retrying with ' +
          'PAYMENT-SIGNATURE. Each operation’s price is in its description and in its `x-payment` extension.',
        license: { name: 'MIT', url: 'https://opensource.org/licenses/MIT' },
      },
      servers: [{ url: options.serverUrl, description: 'this deployment' }],
      tags: [{ name: service.id, description: service.title }],
    },
    { operationMapper: (operation, route) => decorate(service, keys.get(route)!, route, operation) as typeof operation },
  );
  const errorSchema = generateSchema(ErrorEnvelope as any) as Record<string, unknown>;
  tidySchemas(document.paths);
  tidySchemas(errorSchema);
  const usesSiwx = listRoutes(service.router).some(({ route }) => routeMeta(route).auth === 'siwx');
  return {
    ...document,
    components: {
      ...document.components,
      schemas: { ...document.components?.schemas, ErrorEnvelope: errorSchema },
      ...(usesSiwx
        ? {
            securitySchemes: {
              siwx: {
                type: 'apiKey',
                in: 'header',
                name: 'SIGN-IN-WITH-X',
                description: 'base64 JSON CAIP-122 / Sign-In-With-Solana proof of wallet ownership, Ed25519 signature in base58',
              },
            },
          }
        : {}),
    },
  } as OpenApiDocument;
}
