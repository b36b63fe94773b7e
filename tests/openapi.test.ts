import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { isZodType } from '@ts-rest/core';
import { describe, expect, it } from 'vitest';
import { isPaid, listRoutes, routeMeta, services, usdToAtomic } from '@agent-economy/contracts';
import { generateSchema } from '@anatine/zod-openapi';
import openapiTS, { astToString } from 'openapi-typescript';
import { renderDocuments, renderIndex, renderReadme } from '../openapi-generator/src/files';
import { tidySchemas, toJsonSchema2020 } from '../openapi-generator/src/components';

const run = promisify(execFile);
const committed = (file: string) => readFileSync(new URL(`../openapi/${file}`, import.meta.url), 'utf8');

describe('OpenAPI documents', () => {
  it('are committed exactly as the contracts generate them (run `npm run openapi` after changing a contract)', () => {
    for (const [file, text] of Object.entries(renderDocuments())) expect(committed(file), file).toBe(text);
    expect(committed('README.md')).toBe(renderIndex());
    const readme = committed('../README.md');
    expect(readme).toBe(renderReadme(readme));
  });

  it('document prices, the 402 quote header and the error envelope', () => {
    for (const service of services) {
      const document = JSON.parse(committed(`${service.id}.json`));
      expect(document.components.schemas.ErrorEnvelope.required).toEqual(['error', 'requestId']);
      for (const { key, route } of listRoutes(service.router)) {
        const path = route.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
        const operation = document.paths[path][route.method.toLowerCase()];
        expect(operation.operationId).toBe(`${service.id}.${key}`);
        const payment = routeMeta(route).payment;
        expect(operation['x-payment'].kind).toBe(payment.kind);
        const meta = routeMeta(route);
        // x402 wire routes answer 400 in the shape they declare (not the envelope the others share).
        if (meta.wire === 'x402') {
          const declared = generateSchema(route.responses[400 as keyof typeof route.responses] as never) as Record<
            string,
            unknown
          >;
          tidySchemas(declared);
          toJsonSchema2020(declared);
          expect(
            deref(operation.responses['400'].content['application/json'].schema, document.components.schemas),
          ).toEqual(declared);
        } else
          expect(operation.responses['400'].content['application/json'].schema).toEqual({
            $ref: '#/components/schemas/InvalidRequestError',
          });
        for (const [status, response] of Object.entries<any>(operation.responses)) {
          if (Number(status) >= 400 && meta.wire !== 'x402' && status !== '400' && status !== '402') {
            const name = isPaid(payment) && meta.settle === 'first' ? 'RefundedError' : 'ErrorEnvelope';
            expect(response.content['application/json'].schema, `${key} ${status}`).toEqual({
              $ref: `#/components/schemas/${name}`,
            });
          }
        }
        if (isPaid(payment)) {
          // The quote and the receipt: base64 JSON whose decoded schemas are components.
          const quote = {
            type: 'string',
            contentEncoding: 'base64',
            contentMediaType: 'application/json',
            contentSchema: { $ref: '#/components/schemas/PaymentRequired' },
          };
          expect(operation.responses['402'].headers['PAYMENT-REQUIRED'].schema).toEqual(quote);
          expect(operation.responses['402'].content['application/json'].schema).toEqual({
            $ref: '#/components/schemas/PaymentRequiredError',
          });
          const ok = Object.entries<any>(operation.responses).find(([status]) => status.startsWith('2'))![1];
          expect(ok.headers['PAYMENT-RESPONSE'].schema.contentSchema).toEqual({
            $ref: '#/components/schemas/SettleResponse',
          });
          expect(usdToAtomic(operation['x-payment'].maxUsd)).toBeGreaterThan(0n);
          // Paid through the x402 scheme (the PAYMENT-SIGNATURE header), with the caller's proof where the route asks
          // for one.
          expect(operation.security).toEqual([{ x402: [], ...(meta.auth === 'siwx' ? { siwx: [] } : {}) }]);
        } else {
          expect(operation.responses['402']).toBeUndefined();
          expect(operation.security).toEqual(meta.auth === 'siwx' ? [{ siwx: [] }] : []);
        }
        if (operation.requestBody)
          expect(operation.requestBody.content['application/json'].example).toEqual(routeMeta(route).example?.body);
      }
    }
  });

  it('state the x402 scheme, and name the decoded x402 headers and typed errors as components', () => {
    for (const service of services) {
      const document = JSON.parse(committed(`${service.id}.json`));
      const schemas = document.components.schemas;
      const paid = listRoutes(service.router).some(({ route }) => isPaid(routeMeta(route).payment));
      expect(Object.keys(schemas)).toEqual(
        expect.arrayContaining(['ErrorEnvelope', 'InvalidRequestError', 'FieldIssue']),
      );
      expect(schemas.InvalidRequestError.properties.error.properties.details.properties.fields.items).toEqual({
        $ref: '#/components/schemas/FieldIssue',
      });
      if (!paid) {
        expect(document.components.securitySchemes?.x402).toBeUndefined();
        continue;
      }
      expect(document.components.securitySchemes.x402).toMatchObject({
        type: 'apiKey',
        in: 'header',
        name: 'PAYMENT-SIGNATURE',
      });
      expect(schemas.PaymentRequired.required).toEqual(['x402Version', 'resource', 'accepts']);
      expect(schemas.PaymentRequired.properties.accepts.items).toEqual({
        $ref: '#/components/schemas/PaymentRequirements',
      });
      expect(schemas.SettleResponse.required).toEqual(['success', 'transaction', 'network']);
      expect(schemas.PaymentRequiredError.properties.error.properties.details.allOf[0]).toEqual({
        $ref: '#/components/schemas/PaymentRequired',
      });
      expect(schemas.PaymentRequiredError.properties.error.properties.details.allOf[1].properties.refund).toEqual({
        $ref: '#/components/schemas/Refund',
      });
    }
  });

  it('hoist every named contract schema into components, once, and lose nothing of the contracts', () => {
    const named: Record<string, string[]> = {
      education: ['Lesson', 'Quiz', 'CourseDetail', 'Catalog'],
      cognition: ['CognitiveState', 'CognitiveStateRecord', 'ResourcePool', 'HealthReport'],
    };
    for (const service of services) {
      const document = JSON.parse(committed(`${service.id}.json`));
      const schemas: Record<string, unknown> = document.components.schemas;
      expect(Object.keys(schemas), service.id).toEqual(expect.arrayContaining(named[service.id] ?? []));
      // Every reference resolves, and no component's body is left inline anywhere (it would be a second, unnamed copy).
      const bodies = new Set(Object.values(schemas).map((schema) => JSON.stringify(schema)));
      const walk = (node: unknown, inComponent: unknown): void => {
        if (!node || typeof node !== 'object') return;
        const ref = (node as { $ref?: string }).$ref;
        if (ref) expect(schemas[ref.replace('#/components/schemas/', '')], ref).toBeDefined();
        if (node !== inComponent)
          expect(bodies.has(JSON.stringify(node)), `${service.id}: an inline copy of a component`).toBe(false);
        for (const [key, value] of Object.entries(node)) if (key !== 'example') walk(value, inComponent);
      };
      walk(document.paths, undefined);
      for (const schema of Object.values(schemas)) walk(schema, schema);
      // Dereferenced, each request body and answer is exactly what its contract's zod schema converts to.
      for (const { key, route } of listRoutes(service.router)) {
        const operation = document.paths[route.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')][route.method.toLowerCase()];
        const parts: [string, unknown, unknown][] = [];
        if ('body' in route && isZodType(route.body))
          parts.push(['body', route.body, operation.requestBody.content['application/json'].schema]);
        for (const [status, schema] of Object.entries(route.responses)) {
          if (status.startsWith('2') && isZodType(schema))
            parts.push([status, schema, operation.responses[status].content['application/json'].schema]);
        }
        for (const [part, zod, inDocument] of parts) {
          const expected = generateSchema(zod as never) as Record<string, unknown>;
          tidySchemas(expected);
          toJsonSchema2020(expected);
          expect(deref(inDocument, schemas), `${service.id}.${key} ${part}`).toEqual(expected);
        }
      }
    }
  });

  it('show an example of every answer, valid against the route’s own schema', () => {
    for (const service of services) {
      const document = JSON.parse(committed(`${service.id}.json`));
      for (const { key, route } of listRoutes(service.router)) {
        const operation = document.paths[route.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')][route.method.toLowerCase()];
        for (const [status, schema] of Object.entries(route.responses)) {
          if (!status.startsWith('2') || !isZodType(schema)) continue;
          const example = operation.responses[status].content['application/json'].example;
          expect(example, `${service.id}.${key} ${status} has no example`).toBeDefined();
          const result = schema.safeParse(example);
          expect(
            result.success,
            `${service.id}.${key} ${status}: ${JSON.stringify(!result.success && result.error.issues)}`,
          ).toBe(true);
        }
      }
    }
  });

  it('generate a client with named types (openapi-typescript)', async () => {
    for (const [id, names] of [
      ['education', ['Lesson', 'Quiz', 'PaymentRequired', 'SettleResponse']],
      ['cognition', ['CognitiveState', 'HealthReport']],
    ] as const) {
      const source = astToString(
        await openapiTS(JSON.parse(committed(`${id}.json`)), { rootTypes: true, rootTypesNoSchemaPrefix: true }),
      );
      for (const name of names)
        expect(source, `${id}: ${name}`).toContain(`export type ${name} = components['schemas']['${name}'];`);
      // Operations answer with the named type rather than a copy of it.
      expect(source).toMatch(/"application\/json": components\["schemas"\]\["(Lesson|CognitiveStateRecord)"\]/);
    }
    const education = astToString(await openapiTS(JSON.parse(committed('education.json'))));
    expect(education).toMatch(/Lesson: \{\s+courseId: string;\s+lessonId: string;/);
  }, 60_000);

  it('pass the Redocly linter with no error or warning', async () => {
    const files = services.map((s) => `openapi/${s.id}.json`);
    const { stdout, stderr } = await run(
      process.execPath,
      ['node_modules/@redocly/cli/bin/cli.js', 'lint', '--format=stylish', ...files],
      {
        cwd: new URL('..', import.meta.url),
      },
    );
    const output = stdout + stderr;
    // Problems print as "line:column  error|warning  rule  message"; a non-zero exit would have thrown.
    expect(output).not.toMatch(/\d+:\d+\s+(error|warning)\s/);
    for (const file of files) expect(output).toContain(`${file}: validated`);
  }, 120_000);
});

/** A document's schema with its references replaced by the components they name (for comparison with the contracts). */
function deref(node: unknown, schemas: Record<string, unknown>): unknown {
  if (Array.isArray(node)) return node.map((item) => deref(item, schemas));
  if (!node || typeof node !== 'object') return node;
  const { $ref, ...rest } = node as Record<string, unknown>;
  if (typeof $ref === 'string')
    return { ...(deref(schemas[$ref.replace('#/components/schemas/', '')], schemas) as object), ...rest };
  const anyOf = rest.anyOf as unknown[] | undefined;
  // A nullable named schema is `anyOf: [ref, {type: null}]`; inline it is `type: [t, "null"]`.
  if (
    anyOf?.length === 2 &&
    JSON.stringify(anyOf[1]) === '{"type":"null"}' &&
    Object.keys(rest).every((k) => k === 'anyOf' || k === 'description')
  ) {
    const inner = deref(anyOf[0], schemas) as Record<string, unknown>;
    const nullable: Record<string, unknown> = { ...inner, type: [inner.type, 'null'] };
    if (Array.isArray(inner.enum)) nullable.enum = [...inner.enum, null];
    if (rest.description !== undefined) nullable.description = rest.description;
    return nullable;
  }
  return Object.fromEntries(
    Object.entries(rest).map(([key, value]) => [key, key === 'example' ? value : deref(value, schemas)]),
  );
}
