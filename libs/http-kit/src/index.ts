export * from './server-options';
export * from './errors';
export * from './dialects';
export * from './error-handling';
export * from './platform';
export * from './run';
export * from './database';
export * from './config';
