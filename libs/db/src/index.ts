export * from './connection';
export * from './migrations';
export * from './errors';
