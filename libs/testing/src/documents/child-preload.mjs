// Loaded by NODE_OPTIONS (`childProcessEnv`) after tsx's loader, in every thread Node starts with
// those options: only the main thread of a service's process proves its responses (`child.ts`).
import { isMainThread } from 'node:worker_threads';

if (isMainThread && process.env.PROVEN_RESPONSES_CHILD_LOG) await import('./child.ts');
