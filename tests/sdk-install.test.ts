import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SOLANA_DEVNET, USDC_DEVNET } from '@agent-economy/contracts';
import type { Economy } from './support/economy';
import { freePort } from './support/servers';

// The SDK as a user outside this repository gets it: both packages built, packed and published to a
// throwaway local registry (verdaccio, its storage in a temp dir), installed by name into an empty
// project (our scope from that registry, everything else from the user's own npm registry and cache),
// type-checked under a strict tsconfig, and run from ESM and CommonJS: a new wallet, funded by the local
// ledger's faucet, buys a lesson from a running economy. The README's "Install the SDK outside this
// repository" is these steps.
//
// It exercises packaging, not the database: the PostgreSQL run of the suite leaves it out (vitest.config.ts).

const run = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

let work: string;
let project: string;
let registry: ChildProcess | undefined;
let registryUrl: string;
let economy: Economy;
let installLog: string;

async function startRegistry(dir: string): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const config = join(dir, 'config.yaml');
  // No uplinks: the registry serves only what the test publishes; the consumer gets third-party
  // packages from its own npm registry (a scoped registry line routes @agent-economy here).
  writeFileSync(
    config,
    [
      `storage: ${join(dir, 'storage')}`,
      'auth:',
      '  htpasswd:',
      `    file: ${join(dir, 'htpasswd')}`,
      '    max_users: 10',
      'uplinks: {}',
      'packages:',
      "  '@agent-economy/*':",
      '    access: $all',
      '    publish: $authenticated',
      "  '**':",
      '    access: $all',
      'log: { type: stdout, format: pretty, level: error }',
      '',
    ].join('\n'),
  );
  const child = spawn(
    process.execPath,
    [join(root, 'node_modules/verdaccio/bin/verdaccio'), '--config', config, '--listen', `127.0.0.1:${port}`],
    { stdio: 'ignore' },
  );
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) throw new Error(`verdaccio exited with ${child.exitCode}`);
    const ok = await fetch(`${url}/-/ping`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return { child, url };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  child.kill();
  throw new Error('verdaccio did not start');
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'ae-sdk-install-'));
  project = join(work, 'consumer');
  const packs = join(work, 'packs');
  await run(npm, ['run', 'build'], { cwd: root });
  mkdirSync(packs);
  for (const pkg of ['contracts', 'sdk'])
    await run(npm, ['pack', '--pack-destination', packs], { cwd: join(root, pkg) });
  const tarballs = readdirSync(packs).sort();
  expect(tarballs).toEqual(['agent-economy-contracts-0.1.0.tgz', 'agent-economy-sdk-0.1.0.tgz']);

  const started = await startRegistry(work);
  registry = started.child;
  registryUrl = started.url;
  // A publisher account on the throwaway registry; its token goes in a user config of its own, so the
  // user's ~/.npmrc is neither read for the publish nor touched.
  const account = await fetch(`${registryUrl}/-/user/org.couchdb.user:publisher`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'publisher', password: 'throwaway-password' }),
  });
  const { token } = (await account.json()) as { token: string };
  const publisherRc = join(work, 'publisher.npmrc');
  writeFileSync(
    publisherRc,
    `registry=${registryUrl}/\n//127.0.0.1:${new URL(registryUrl).port}/:_authToken=${token}\n`,
  );
  for (const tarball of tarballs)
    await run(npm, ['publish', join(packs, tarball), '--userconfig', publisherRc, '--registry', `${registryUrl}/`], {
      cwd: work,
    });

  // The consumer: an empty project whose .npmrc routes our scope to the registry.
  mkdirSync(project);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  writeFileSync(join(project, '.npmrc'), `@agent-economy:registry=${registryUrl}/\n`);
  const installed = await run(npm, ['install', '--no-audit', '--no-fund', '--prefer-offline', '@agent-economy/sdk'], {
    cwd: project,
  });
  installLog = `${installed.stdout}\n${installed.stderr}`;

  const { startEconomy } = await import('./support/economy');
  economy = await startEconomy();
}, 900_000);

afterAll(async () => {
  await economy?.close();
  registry?.kill();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('@agent-economy/sdk installed from a registry', () => {
  it('installs by name with its published contracts, without warnings from our packages', async () => {
    // What was installed is what the registry serves: same version, same tarball integrity (the lockfile
    // may omit `resolved`, as npm's omit-lockfile-registry-resolved does).
    const lock = JSON.parse(readFileSync(join(project, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { version: string; integrity?: string }>;
    };
    for (const name of ['sdk', 'contracts']) {
      const packument = (await (await fetch(`${registryUrl}/@agent-economy%2f${name}`)).json()) as {
        versions: Record<string, { dist: { integrity: string } }>;
      };
      expect(lock.packages[`node_modules/@agent-economy/${name}`]).toMatchObject({
        version: '0.1.0',
        integrity: packument.versions['0.1.0']!.dist.integrity,
      });
    }
    // No warning names our packages, no peer range conflicts. The one engine warning on Node 20 is upstream:
    // @solana/kit 8's @solana/errors pins commander 15.0.0, which declares Node >= 22.12 (it serves only
    // that package's command-line tool); any other package with an engine warning fails here.
    const warnings = installLog.split('\n').filter((line) => /npm warn/i.test(line));
    expect(warnings.filter((line) => /ERESOLVE|peer dep|@agent-economy/i.test(line))).toEqual([]);
    const engineWarned = warnings.flatMap((line) => /EBADENGINE\s+package: '([^']+)'/.exec(line)?.[1] ?? []);
    expect(engineWarned.filter((pkg) => pkg !== 'commander@15.0.0')).toEqual([]);
  });

  it('ships what its manifest names: dist for both module systems, the sources of its ae-source condition, README and LICENSE', async () => {
    for (const pkg of ['sdk', 'contracts']) {
      const dir = join(project, 'node_modules/@agent-economy', pkg);
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
        main: string;
        module: string;
        types: string;
        license: string;
        exports: Record<string, Record<string, string | Record<string, string>>>;
        bin?: Record<string, string>;
      };
      expect(manifest.license).toBe('MIT');
      const named = [manifest.main, manifest.module, manifest.types, ...Object.values(manifest.bin ?? {})];
      for (const entry of Object.values(manifest.exports))
        for (const target of Object.values(entry))
          named.push(...(typeof target === 'string' ? [target] : Object.values(target)));
      expect(named.filter((file) => !existsSync(join(dir, file)))).toEqual([]);
      for (const file of ['README.md', 'LICENSE']) expect(existsSync(join(dir, file))).toBe(true);
      expect(readFileSync(join(dir, 'LICENSE'), 'utf8')).toContain('Copyright (c) 2026 Agent Economy contributors');
    }
  });

  it('type-checks a consumer under a strict NodeNext tsconfig, and catches a misuse', async () => {
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noUncheckedIndexedAccess: true,
          exactOptionalPropertyTypes: true,
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          noEmit: true,
          skipLibCheck: true,
          types: ['node'],
          typeRoots: [join(root, 'node_modules/@types')],
        },
        files: ['index.ts'],
      }),
    );
    writeFileSync(
      join(project, 'index.ts'),
      `import { createClient, fundWallet, generateWallet, InsufficientFundsError, loadDeployment, walletToFile, type Deployment } from '@agent-economy/sdk';
const deployment: Deployment = await loadDeployment(process.argv[2]);
const wallet = await generateWallet();
await walletToFile(wallet, 'agent.json');
const grant = await fundWallet({ deployment, address: wallet.address, usd: '1' });
const atomic: string = grant.usdAtomic;
const client = createClient({ deployment, wallet, payments: { maxPerCallUsd: '0.10' } });
try {
  const lesson = await client.education.lesson.withResponse({ body: { courseId: 'rag', lessonId: 'chunking' } });
  const sections: number = lesson.data.sections.length;
  console.log(lesson.payment?.transaction, sections, atomic);
} catch (error) {
  if (error instanceof InsufficientFundsError) console.log(error.needed, error.held);
  else throw error;
}
`,
    );
    writeFileSync(
      join(project, 'bad.ts'),
      `import { createClient } from '@agent-economy/sdk';\nawait createClient().education.course({ params: { course: 'rag' } });\n`,
    );
    const tsc = join(root, 'node_modules/typescript/bin/tsc');
    await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: project });
    const misuse = await run(
      process.execPath,
      [
        tsc,
        '--strict',
        '--module',
        'nodenext',
        '--moduleResolution',
        'nodenext',
        '--target',
        'es2022',
        '--noEmit',
        '--types',
        'node',
        '--typeRoots',
        join(root, 'node_modules/@types'),
        '--skipLibCheck',
        'bad.ts',
      ],
      { cwd: project },
    ).catch((e) => e);
    expect(misuse.stdout).toMatch(/bad\.ts.*error TS2/);
  }, 300_000);

  it('from ESM: a new wallet, saved, funded by the faucet, buys a lesson against the running economy', async () => {
    const services = join(project, 'services.json');
    writeFileSync(
      services,
      JSON.stringify({
        chain: {
          network: SOLANA_DEVNET,
          rpcUrl: economy.rpcUrl,
          stablecoin: USDC_DEVNET,
          local: true,
          faucet: `${economy.rpcUrl}/faucet`,
        },
        services: [
          { id: 'facilitator', url: economy.facilitator.url },
          { id: 'education', url: economy.education.url, wallet: economy.education.context.wallet.address },
        ],
      }),
    );
    writeFileSync(
      join(project, 'buy.mjs'),
      `import { createClient, fetchBalances, fundWallet, generateWallet, loadDeployment, walletFromFile, walletToFile } from '@agent-economy/sdk';
const deployment = await loadDeployment(process.argv[2]);
await walletToFile(await generateWallet(), 'buyer.json');
const wallet = await walletFromFile('buyer.json');
await fundWallet({ deployment, address: wallet.address, usd: '1' });
const before = await fetchBalances({ deployment, address: wallet.address });
const client = createClient({ deployment, wallet, payments: { maxPerCallUsd: '0.10' } });
const lesson = await client.education.lesson.withResponse({ body: { courseId: 'rag', lessonId: 'chunking' } });
const after = await fetchBalances({ deployment, address: wallet.address });
console.log(JSON.stringify({ address: wallet.address, title: lesson.data.title, receipt: lesson.payment, before: before.usd, after: after.usd }));
`,
    );
    const seller = economy.education.context.wallet.address;
    const sellerBefore = economy.ledger.tokenBalance(seller);
    const { stdout } = await run(process.execPath, ['buy.mjs', services], { cwd: project });
    const out = JSON.parse(stdout) as {
      address: string;
      title: string;
      receipt: Record<string, string>;
      before: string;
      after: string;
    };
    expect(out.title).toBe('Chunking Documents');
    expect(out.receipt).toMatchObject({
      service: 'education',
      route: 'POST /api/lesson',
      amount: '50000',
      amountUsd: '0.05',
      asset: USDC_DEVNET,
      network: SOLANA_DEVNET,
      payer: out.address,
      payTo: seller,
    });
    expect(economy.ledger.transaction(out.receipt.transaction!)).toBeDefined();
    expect([out.before, out.after]).toEqual(['1', '0.95']);
    expect(economy.ledger.tokenBalance(out.address)).toBe(950_000n);
    expect(economy.ledger.tokenBalance(seller) - sellerBefore).toBe(50_000n);
  });

  it('from CommonJS: require() gives the same SDK, typed errors included', async () => {
    writeFileSync(
      join(project, 'cjs.cjs'),
      `const { createClient, generateWallet, NotFoundError } = require('@agent-economy/sdk');
(async () => {
  const wallet = await generateWallet();
  const error = await createClient({ baseUrls: { education: process.argv[2] } }).education.course({ params: { courseId: 'nope' } }).catch((e) => e);
  console.log(JSON.stringify({ address: wallet.address.length >= 32, notFound: error instanceof NotFoundError, code: error.code }));
})();
`,
    );
    const { stdout } = await run(process.execPath, ['cjs.cjs', economy.education.url], { cwd: project });
    expect(JSON.parse(stdout)).toEqual({ address: true, notFound: true, code: 'course_not_found' });
  });

  it('its agent-economy command runs from the build: routes from the contracts, a free call against the economy', async () => {
    const bin = join(project, 'node_modules/.bin/agent-economy');
    const routes = await run(bin, ['routes', 'education', '--json'], { cwd: project });
    const listed = JSON.parse(routes.stdout) as { routes: { route: string; method: string; payment: unknown }[] };
    expect(listed.routes.find((r) => r.route === 'lesson')).toMatchObject({
      method: 'POST',
      payment: { kind: 'fixed', usd: '0.05' },
    });
    // services.json from the ESM test above; a free route needs no wallet.
    const course = await run(
      bin,
      [
        'call',
        'education.course',
        '--params',
        'courseId=rag',
        '--json',
        '--deployment',
        join(project, 'services.json'),
      ],
      { cwd: project, env: { ...process.env, HOME: project, AGENT_ECONOMY_WALLET: '' } },
    );
    expect(JSON.parse(course.stdout)).toMatchObject({ result: { id: 'rag' }, receipt: null });
  });
});
