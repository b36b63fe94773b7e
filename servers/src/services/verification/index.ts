import { verification } from '@agent-economy/contracts';
import { migrate } from '../../db';
import { createServiceApp, fromContext } from '../../runtime/app';
import type { ServiceContext } from '../../runtime/context';
import { assertParsableContent, assertStorableQuery, certificatePosition, verificationHandlers } from './handlers';
import { migrations, verificationStore } from './store';

export interface VerificationOptions {
  /** The clock certificates are issued and judged by (tests move it to watch a certificate expire). */
  now?: () => Date;
}

export async function createVerificationApp(context: ServiceContext, options: VerificationOptions = {}) {
  await migrate(context.db, 'verification', migrations);
  return await createServiceApp({
    service: verification,
    handlers: verificationHandlers({ store: verificationStore(context.db), wallet: context.wallet, now: options.now ?? (() => new Date()) }),
    ...fromContext(context),
    // A body may hold 100,000 characters of up to 4 UTF-8 bytes each, plus JSON escaping.
    bodyLimit: '1mb',
    // Content that cannot be scanned (a "json" body that does not parse, unstorable text) is refused before the 402.
    preflight: {
      scan: ({ body }) => assertParsableContent(body.content),
      listCertificates: ({ query }) => {
        assertStorableQuery(query.q);
        certificatePosition(query.cursor);
      },
    },
  });
}
