import { listenWithGracefulShutdown } from '@platform/http-kit';
import { buildApp } from './app';
import { loadConfig } from './config';

async function main() {
  const config = loadConfig();
  const app = await buildApp(config);
  await listenWithGracefulShutdown(app, { port: config.port, host: config.host });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
