export * from './validator';
export * from './proof';
