export * from './chromium';
export * from './readiness';
