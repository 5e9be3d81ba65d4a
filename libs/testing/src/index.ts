export * from './app';
export * from './child-process';
export * from './chromium';
export * from './dialect';
export * from './hooks';
export * from './hostile';
export * from './outage';
export * from './readiness';
