import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createEducationApp } from '../servers/src/services/education';
import { startService, type RunningService } from './support/servers';

const run = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));
let service: RunningService;

beforeAll(async () => {
  service = await startService(createEducationApp);
});
afterAll(() => service?.close());

it('education-tour browses the catalog and reads a lesson price from its 402 quote', async () => {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', '--conditions=ae-source', 'examples/education-tour.ts'], {
    cwd: root,
    env: { ...process.env, AGENT_ECONOMY_EDUCATION_URL: service.url },
  });
  expect(stdout).toContain('6 courses, 30 lessons');
  expect(stdout).toContain('1. Function Calling');
  expect(stdout).toContain(`costs 0.05 USD: 50000 atomic units of 4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU`);
  expect(stdout).toContain(`paid to ${service.context.paywall.payTo} on solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1`);
});
