export * from './core/index';
export * from './services/shared';
export * from './services/education';
import { education } from './services/education';

/** Every service of the economy, in the order `npm start` lists them. */
export const services = [education] as const;

export type Service = (typeof services)[number];
export type ServiceId = Service['id'];
