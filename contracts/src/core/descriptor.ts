import type { ServiceDefinition } from './service';
import { listRoutes } from './service';
import { isPaid, routeMeta } from './payment';

/** The descriptor every deployment publishes at /.well-known/agent-card.json (spec 000, "Common descriptor"). */
export interface AgentCard {
  name: string;
  description: string;
  url: string;
  provider: { organization: string; url: string };
  iconUrl?: string;
  version: '1.0.0';
  documentationUrl: string;
  capabilities: { streaming: false; pushNotifications: false; stateTransitionHistory: false };
  defaultInputModes: string[];
  defaultOutputModes: string[];
  skills: { id: string; name: string; description: string; tags: string[] }[];
}

export interface DeploymentInfo {
  /** The deployment's public base address, as callers reach it (after any proxy or path prefix). */
  url: string;
  provider?: { organization: string; url: string };
  iconUrl?: string;
}

export function buildAgentCard(service: ServiceDefinition, deployment: DeploymentInfo): AgentCard {
  const url = deployment.url.replace(/\/+$/, '');
  return {
    name: service.title,
    description: service.description,
    url,
    provider: deployment.provider ?? { organization: 'Agent Economy', url },
    ...(deployment.iconUrl ? { iconUrl: deployment.iconUrl } : {}),
    version: '1.0.0',
    documentationUrl: url,
    capabilities: { streaming: false, pushNotifications: false, stateTransitionHistory: false },
    defaultInputModes: ['application/json', 'text/plain'],
    defaultOutputModes: ['application/json', 'text/plain'],
    skills: listRoutes(service.router).map(({ route }, n) => ({
      id: `endpoint-${n}`,
      name: `${route.method} ${route.path}`,
      description: route.summary ?? route.path,
      tags: ['x402', service.id, isPaid(routeMeta(route).payment) ? 'paid' : 'free'],
    })),
  };
}
