import { runMain } from '@platform/http-kit';
import { buildApp } from './app';
import { loadConfig } from './config';

runMain(buildApp, loadConfig);
