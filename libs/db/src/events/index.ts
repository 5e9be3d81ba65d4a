export * from './migration';
export * from './repository';
export * from './listener';
