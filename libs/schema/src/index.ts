export * from './annotations';
export * from './building-blocks';
export * from './errors';
export * from './env';
