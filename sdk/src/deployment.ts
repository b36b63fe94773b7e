import { address as toAddress, createSolanaRpc } from '@solana/kit';
import { atomicToUsd } from '@agent-economy/contracts';
import { AgentEconomyError, ApiError, ConnectionError, SolanaRpcError } from './errors';

/**
 * Where a deployment's services and chain are: the `services.json` that `npm start` writes to its data
 * directory (`.data/services.json`). `createClient({ deployment })` takes its addresses, network and RPC.
 */
export interface Deployment {
  chain: {
    /** CAIP-2 id of the Solana network the services are paid on. */
    network: string;
    /** Solana JSON-RPC of that network: blockhashes, balances. */
    rpcUrl: string;
    /** Mint of the USD stablecoin the services quote. */
    stablecoin: string;
    /** True for the local ledger `npm start` runs. */
    local?: boolean;
    /** The local ledger's faucet (POST), when it has one. */
    faucet?: string;
  };
  /** Each running service: its id (as in the contracts), public address and pay-to wallet. */
  services: { id: string; url: string; title?: string; docs?: string; wallet?: string }[];
  /** The demo agent wallet `npm start` funds on the local ledger; `keyFile` holds its key. */
  demoWallet?: { address: string; keyFile?: string; usd?: string };
  database?: string;
  ai?: unknown;
}

const isUrl = (text: string) => /^https?:\/\//i.test(text);

/** Checks the shape a client relies on; the message names the first field that is wrong. */
export function parseDeployment(value: unknown, where = 'the deployment'): Deployment {
  const fail = (what: string): never => {
    throw new AgentEconomyError(`${where} is not a services.json of an Agent Economy deployment: ${what}`);
  };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return fail('not a JSON object');
  const { chain, services } = value as { chain?: Record<string, unknown>; services?: unknown };
  if (typeof chain !== 'object' || chain === null) return fail('no "chain" object');
  if (typeof chain.network !== 'string' || !chain.network.startsWith('solana:'))
    fail('chain.network must be a CAIP-2 Solana id (solana:…)');
  if (typeof chain.rpcUrl !== 'string' || !isUrl(chain.rpcUrl)) fail('chain.rpcUrl must be an http(s) URL');
  if (typeof chain.stablecoin !== 'string') fail('chain.stablecoin must be a mint address');
  if (chain.faucet !== undefined && (typeof chain.faucet !== 'string' || !isUrl(chain.faucet)))
    fail('chain.faucet must be an http(s) URL');
  if (!Array.isArray(services)) return fail('no "services" list');
  services.forEach((service: { id?: unknown; url?: unknown } | null, i) => {
    if (typeof service?.id !== 'string' || typeof service.url !== 'string' || !isUrl(service.url))
      fail(`services[${i}] needs an id and an http(s) url`);
  });
  return value as Deployment;
}

function defaultLocation(): string {
  const env = typeof process === 'undefined' ? undefined : process.env;
  return env?.AGENT_ECONOMY_DEPLOYMENT || `${env?.DATA_DIR || '.data'}/services.json`;
}

/**
 * Reads a deployment's services.json from a file path or an http(s) URL. Default:
 * AGENT_ECONOMY_DEPLOYMENT, else `$DATA_DIR/services.json`, else `.data/services.json` (what `npm start`
 * writes, relative to where you run).
 */
export async function loadDeployment(pathOrUrl: string = defaultLocation()): Promise<Deployment> {
  let text: string;
  if (isUrl(pathOrUrl)) {
    let response: Response;
    try {
      response = await fetch(pathOrUrl, { headers: { accept: 'application/json' } });
    } catch (error) {
      throw new ConnectionError(`cannot fetch the deployment at ${pathOrUrl}: ${(error as Error).message}`, {
        cause: error,
      });
    }
    if (!response.ok)
      throw new AgentEconomyError(`cannot fetch the deployment at ${pathOrUrl}: HTTP ${response.status}`);
    text = await response.text();
  } else {
    try {
      const fsModule = 'node:fs/promises';
      const { readFile } = (await import(
        /* webpackIgnore: true */ /* @vite-ignore */ fsModule
      )) as typeof import('node:fs/promises');
      text = await readFile(pathOrUrl, 'utf8');
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      const hint =
        code === 'ENOENT' ? ' (start the economy with npm start, or pass the path of its services.json)' : '';
      throw new AgentEconomyError(
        `cannot read the deployment file ${pathOrUrl}: ${typeof code === 'string' ? code : (error as Error).message}${hint}`,
        { cause: error },
      );
    }
  }
  return parseDeploymentText(text, pathOrUrl);
}

function parseDeploymentText(text: string, where: string): Deployment {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new AgentEconomyError(`${where} is not JSON`);
  }
  return parseDeployment(value, where);
}

/**
 * A deployment given to createClient: the object, or the path of its file, read at once (Node only).
 * A URL cannot be read synchronously: `createClient({ deployment: await loadDeployment(url) })`.
 */
export function resolveDeployment(deployment: Deployment | string): Deployment {
  if (typeof deployment !== 'string') return parseDeployment(deployment);
  if (isUrl(deployment)) {
    throw new AgentEconomyError(
      `createClient reads a deployment file, not a URL: pass { deployment: await loadDeployment('${deployment}') }`,
    );
  }
  const fs =
    typeof process === 'undefined'
      ? undefined
      : (process.getBuiltinModule?.('node:fs') as typeof import('node:fs') | undefined);
  if (!fs)
    throw new AgentEconomyError(
      'createClient can read a deployment file only on Node: pass { deployment: await loadDeployment(path) }',
    );
  let text: string;
  try {
    text = fs.readFileSync(deployment, 'utf8');
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    throw new AgentEconomyError(
      `cannot read the deployment file ${deployment}: ${typeof code === 'string' ? code : (error as Error).message}`,
      { cause: error },
    );
  }
  return parseDeploymentText(text, deployment);
}

/** What the local ledger's faucet answers: the wallet's balances after the grant. */
export interface FaucetGrant {
  /** The airdrop and mint transactions. */
  signatures: string[];
  /** SOL balance, decimal, and in lamports. */
  sol: string;
  lamports: string;
  /** Stablecoin balance, decimal USD, and in atomic units. */
  usd: string;
  usdAtomic: string;
}

/**
 * Tops a wallet up from the local ledger's faucet (`POST /faucet`; `npm start` without SOLANA_RPC_URL):
 * `usd` of the stablecoin and `sol` for fees, decimal strings (at most 1,000 USD and 10 SOL a request
 * unless the ledger is configured otherwise). Give the ledger by `deployment`, `faucetUrl` or its `rpcUrl`.
 * A real cluster has no such faucet.
 */
export async function fundWallet(options: {
  address: string;
  usd?: string;
  sol?: string;
  deployment?: Deployment;
  faucetUrl?: string;
  rpcUrl?: string;
}): Promise<FaucetGrant> {
  const { deployment } = options;
  if (deployment && !deployment.chain.local && !deployment.chain.faucet && !options.faucetUrl && !options.rpcUrl) {
    throw new AgentEconomyError(
      `the deployment's chain (${deployment.chain.network} at ${deployment.chain.rpcUrl}) is not the local ledger: it has no faucet`,
    );
  }
  const base = options.rpcUrl ?? deployment?.chain.rpcUrl;
  const url =
    options.faucetUrl ?? deployment?.chain.faucet ?? (base ? `${base.replace(/\/+$/, '')}/faucet` : undefined);
  if (!url) throw new AgentEconomyError('fundWallet needs the local ledger: pass deployment, faucetUrl or rpcUrl');
  const body = {
    address: options.address,
    ...(options.usd !== undefined ? { usd: options.usd } : {}),
    ...(options.sol !== undefined ? { sol: options.sol } : {}),
  };
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  } catch (error) {
    throw new ConnectionError(`the faucet at ${url} does not answer: ${(error as Error).message}`, { cause: error });
  }
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (!response.ok) throw ApiError.from(response.status, parsed, Object.fromEntries(response.headers));
  return parsed as FaucetGrant;
}

/** A wallet's balances on the chain: SOL in lamports and a token (the stablecoin) in atomic units. */
export interface Balances {
  lamports: bigint;
  /** Atomic units of `mint`, over all the wallet's token accounts of it (0 without one). */
  tokenAtomic: bigint;
  /** The same as a decimal USD string (the stablecoin has 6 decimals). */
  usd: string;
}

/** Reads a wallet's SOL and stablecoin balances; `mint` defaults to the deployment's stablecoin. */
export async function fetchBalances(options: {
  address: string;
  deployment?: Deployment;
  rpcUrl?: string;
  mint?: string;
}): Promise<Balances> {
  const rpcUrl = options.rpcUrl ?? options.deployment?.chain.rpcUrl;
  const mint = options.mint ?? options.deployment?.chain.stablecoin;
  if (!rpcUrl || !mint) throw new AgentEconomyError('fetchBalances needs a deployment, or rpcUrl and mint');
  const rpc = createSolanaRpc(rpcUrl);
  const owner = toAddress(options.address);
  try {
    const [balance, accounts] = await Promise.all([
      rpc.getBalance(owner).send(),
      rpc.getTokenAccountsByOwner(owner, { mint: toAddress(mint) }, { encoding: 'jsonParsed' }).send(),
    ]);
    const tokenAtomic = accounts.value.reduce(
      (sum, a) =>
        sum +
        BigInt(
          (a.account.data as { parsed: { info: { tokenAmount: { amount: string } } } }).parsed.info.tokenAmount.amount,
        ),
      0n,
    );
    return { lamports: BigInt(balance.value), tokenAtomic, usd: atomicToUsd(tokenAtomic) };
  } catch (error) {
    throw new SolanaRpcError(
      `could not read the balances of ${options.address} from the Solana RPC at ${rpcUrl}: ${(error as Error).message}`,
      { cause: error },
    );
  }
}
