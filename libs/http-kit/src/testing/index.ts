export * from './app';
export * from './chromium';
export * from './readiness';
