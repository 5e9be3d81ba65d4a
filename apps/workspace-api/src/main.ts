import { serve } from '@platform/http-kit';
import { buildApp } from './app';
import { loadConfig } from './config';

serve(buildApp, loadConfig()).catch((error) => {
  console.error(error instanceof Error && !(error as NodeJS.ErrnoException).code ? error.message : error);
  process.exit(1);
});
