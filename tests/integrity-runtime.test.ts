import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEducationApp } from '../servers/src/services/education';
import { listen, type RunningServer } from '../servers/src/runtime/server';
import { startEconomy, type Economy } from './support/economy';
import { startService, type RunningService } from './support/servers';

// The runtime under an attacker's requests: malformed paths, idle connection floods, and a service that
// quotes while nobody can settle its payments.

let economy: Economy;
beforeAll(async () => {
  economy = await startEconomy();
});
afterAll(async () => {
  await economy?.close();
});

describe('malformed percent-encoding in a path', () => {
  it('is a 400 in the envelope on a route with path parameters, and on unknown paths', async () => {
    for (const path of ['/api/course/%E2%82', '/api/course/%', '/api/course/%ZZ', '/nowhere/%E0%A4%A']) {
      const response = await fetch(`${economy.education.url}${path}`);
      expect(response.status, path).toBe(400);
      const body = (await response.json()) as { error: { code: string; message: string }; requestId: string };
      expect(body.error.code).toBe('invalid_path');
      expect(body.requestId).toMatch(/^req_/);
    }
  });
});

describe('idle connection floods', () => {
  let server: RunningServer;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    const app = express();
    app.get('/ping', (_req, res) => {
      res.json({ pong: true });
    });
    server = await listen(app, 0);
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await server?.close();
  });

  it('still serves a real request while 2,000 idle connections from one client are open', async () => {
    const open = () =>
      new Promise<void>((resolve) => {
        const socket = connect(server.port, '127.0.0.1', () => resolve());
        socket.on('error', () => resolve());
        socket.on('close', () => resolve());
        sockets.push(socket);
      });
    for (let i = 0; i < 2000; i += 200) await Promise.all(Array.from({ length: 200 }, open));
    const response = await fetch(`${server.url}/ping`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ pong: true });
    // The flood did not keep all its sockets: the server closed the oldest idle ones past its per-client cap.
    const alive = sockets.filter((s) => !s.destroyed && s.readyState === 'open').length;
    expect(alive).toBeLessThan(2000);
  });
});

describe('payments that cannot settle', () => {
  let orphan: RunningService;
  beforeAll(async () => {
    orphan = await startService(createEducationApp, {
      paywall: { feePayer: economy.feePayer.address, facilitatorUrl: 'http://127.0.0.1:9' },
    });
  });
  afterAll(async () => {
    await orphan?.close();
  });

  it('are not quoted: 503 with Retry-After while the facilitator is unreachable', async () => {
    const response = await fetch(`${orphan.url}/api/lesson`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ courseId: 'tool-use', lessonId: 'function-calling' }),
    });
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(response.headers.get('payment-required')).toBeNull();
    const body = (await response.json()) as { error: { code: string } };
    expect(body.error.code).toBe('payments_unavailable');
  });

  it('/health names each dependency: 503 with the unreachable facilitator, ok when it answers', async () => {
    const down = await fetch(`${orphan.url}/health`);
    expect(down.status).toBe(503);
    expect(down.headers.get('retry-after')).toMatch(/^\d+$/);
    // The one health body (ServiceHealth), status down, with the reason as in the error envelope.
    const body = (await down.json()) as {
      status: string;
      error: { code: string };
      dependencies: Record<string, { status: string }>;
    };
    expect(body.status).toBe('down');
    expect(body.error.code).toBe('dependency_unavailable');
    expect(body.dependencies).toMatchObject({ database: { status: 'ok' }, facilitator: { status: 'down' } });

    const up = await fetch(`${economy.education.url}/health`);
    expect(up.status).toBe(200);
    expect(await up.json()).toMatchObject({
      status: 'ok',
      database: 'ok',
      dependencies: { database: { status: 'ok' }, facilitator: { status: 'ok' } },
    });
  });

  it('the facilitator reports the chain it settles on', async () => {
    const response = await fetch(`${economy.facilitator.url}/health`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      status: 'ok',
      dependencies: { database: { status: 'ok' }, chain: { status: 'ok' } },
    });
  });

  it('a quote is issued again once the facilitator answers', async () => {
    const response = await fetch(`${economy.education.url}/api/lesson`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ courseId: 'tool-use', lessonId: 'function-calling' }),
    });
    expect(response.status).toBe(402);
  });
});

describe('a replica whose dependencies are down at start', () => {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const dataDir = mkdtempSync(join(tmpdir(), 'ae-integrity-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  /** Runs `npm start`'s entry until `done(output)` holds or it exits; then stops it. */
  async function run(
    env: Record<string, string>,
    done: (output: string) => boolean,
  ): Promise<{ output: string; code: number | null }> {
    const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=ae-source', 'servers/src/main.ts'], {
      cwd: root,
      env: {
        ...process.env,
        LOG_LEVEL: 'warn',
        DATA_DIR: dataDir,
        DATABASE_URL: '',
        SOLANA_RPC_URL: 'http://127.0.0.1:9',
        EDUCATION_PORT: '0',
        FACILITATOR_PORT: '0',
        ...env,
      },
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    // Bounded by the test's timeout, not a timing assertion: waits for the line or the exit.
    while (child.exitCode === null && !done(output)) await new Promise((r) => setTimeout(r, 100));
    if (child.exitCode === null) child.kill('SIGKILL');
    return { output, code: await exit };
  }

  it('waits for an unreachable facilitator, retrying with one line each, instead of exiting', async () => {
    const { output, code } = await run(
      { SERVICES: 'education', FACILITATOR_URL: 'http://127.0.0.1:9' },
      (o) => (o.match(/trying again/g) ?? []).length >= 2,
    );
    expect(code).toBeNull(); // killed by the test while still waiting, not exited
    expect(output).toMatch(/the facilitator at http:\/\/127\.0\.0\.1:9 does not answer \(.*\); trying again in 1 s/);
    expect(output).not.toMatch(/\n\s+at /); // no stack trace
  }, 60_000);

  it('stops with one line when DATABASE_URL cannot be reached', async () => {
    const { output, code } = await run(
      { SERVICES: 'facilitator', DATABASE_URL: 'postgres://postgres:secret@127.0.0.1:9/none' },
      () => false,
    );
    expect(code).toBe(1);
    expect(output.trim().split('\n')).toHaveLength(1);
    expect(output).toContain('The database at postgres://postgres:***@127.0.0.1:9/none cannot be reached');
    expect(output).not.toContain('secret');
  }, 60_000);
});
