import { isAbsolute, resolve } from 'node:path';
import { services, type Service } from '@agent-economy/contracts';
import { AgentEconomyError, ConnectionError, loadDeployment, type Deployment as SdkDeployment } from '../index';
import { CliFailure, EXIT, UsageError } from './failure';

/** A deployment (the services.json npm start writes) and where it was read from. */
export type Deployment = SdkDeployment & { source: string };
export type DeployedService = Deployment['services'][number];

/**
 * Where the deployment is read from when no --deployment is given: AGENT_ECONOMY_DEPLOYMENT, else
 * <DATA_DIR or ./.data>/services.json.
 */
export function defaultDeploymentSource(env: NodeJS.ProcessEnv = process.env): string {
  return env.AGENT_ECONOMY_DEPLOYMENT || `${env.DATA_DIR || '.data'}/services.json`;
}

/** Reads a services.json from a path or an http(s) URL (the SDK's loadDeployment), failing with the exit codes. */
export async function loadDeploymentFile(source: string = defaultDeploymentSource()): Promise<Deployment> {
  let deployment: SdkDeployment;
  try {
    deployment = await loadDeployment(source);
  } catch (error) {
    if (error instanceof ConnectionError) throw new CliFailure(EXIT.connection, 'connection_failed', error.message);
    if (error instanceof AgentEconomyError)
      throw new UsageError(`${error.message}; pass --deployment <services.json path or URL>`);
    throw error;
  }
  const remote = /^https?:\/\//i.test(source);
  const services = deployment.services.map((s) => ({ ...s, url: s.url.replace(/\/+$/, '') }));
  const keyFile = deployment.demoWallet?.keyFile;
  // A relative key file is taken from the directory above services.json's (DATA_DIR's parent), where npm start ran.
  const demoWallet =
    deployment.demoWallet && keyFile && !isAbsolute(keyFile) && !remote
      ? { ...deployment.demoWallet, keyFile: resolve(source, '..', '..', keyFile) }
      : deployment.demoWallet;
  return { ...deployment, services, ...(demoWallet ? { demoWallet } : {}), source };
}

/** The contract of a deployed service; undefined for a service the contracts do not know. */
export function contractOf(id: string): Service | undefined {
  return services.find((s) => s.id === id);
}

/** The deployment's services the contracts know, with their contracts, in the deployment's order. */
export function knownServices(deployment: Deployment): { deployed: DeployedService; contract: Service }[] {
  return deployment.services.flatMap((deployed) => {
    const contract = contractOf(deployed.id);
    return contract ? [{ deployed, contract }] : [];
  });
}
