import { education } from '@agent-economy/contracts';
import { migrate } from '../../db';
import { createServiceApp } from '../../runtime/app';
import type { ServiceContext } from '../../runtime/context';
import { curriculum } from './curriculum';
import { educationHandlers } from './handlers';
import { educationStore, migrations } from './store';

export async function createEducationApp(context: ServiceContext) {
  await migrate(context.db, 'education', migrations);
  return createServiceApp({
    service: education,
    handlers: educationHandlers({ courses: curriculum, store: educationStore(context.db), reasoner: context.reasoner }),
    publicUrl: context.publicUrl,
    db: context.db,
    logger: context.logger,
    paywall: context.paywall,
    // Generating a quiz is the paid act; grading answers to a quiz already bought is free.
    pricing: { quiz: ({ body }) => ({ tier: body.action }) },
  });
}
