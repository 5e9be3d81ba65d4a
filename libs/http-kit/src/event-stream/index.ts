export * from './hub';
export * from './config';
export * from './openapi';
export * from './plugin';
