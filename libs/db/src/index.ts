export * from './connection';
export * from './compiled';
export * from './migrations';
export * from './errors';
export * from './local-server';
