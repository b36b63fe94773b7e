/**
 * Default ports of a one-machine deployment (`npm start`); the SDK's default base addresses use them.
 * 'btc-metrics-2' is the second deployment of the bitcoin metrics service.
 */
export const DEFAULT_PORTS = {
  ledger: 8899,
  facilitator: 4020,
  ads: 4080,
  cognition: 4101,
  escrow: 4102,
  gateway: 4103,
  identity: 4104,
  education: 4105,
  pricing: 4106,
  intel: 4107,
  conviction: 4108,
  gas: 4109,
  entropy: 4110,
  tokens: 4111,
  funding: 4112,
  'btc-metrics': 4113,
  'btc-metrics-2': 4114,
  'exchange-flows': 4115,
  'wallet-history': 4116,
  marketplace: 4117,
  wagers: 4118,
  'knowledge-market': 4119,
  negotiation: 4120,
  reputation: 4121,
  verification: 4122,
} as const satisfies Record<string, number>;

/** The prefix of a service's environment variables: education -> EDUCATION, btc-metrics -> BTC_METRICS. */
export const envPrefix = (id: string) => id.toUpperCase().replace(/-/g, '_');
