import { serve } from '@platform/http-kit';
import { buildApp } from './app';
import { loadConfig } from './config';

serve(buildApp, loadConfig()).catch((error) => {
  console.error(error);
  process.exit(1);
});
