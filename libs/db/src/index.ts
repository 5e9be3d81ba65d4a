export * from './connection';
export * from './migrations';
export * from './errors';
export * from './local-server';
