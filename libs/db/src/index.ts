export * from './connection';
export * from './compiled';
export * from './service-secrets/repository';
export * from './migrations';
export * from './errors';
export * from './local-settings';
export * from './events';
