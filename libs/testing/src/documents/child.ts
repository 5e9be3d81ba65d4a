/**
 * Loaded first (`--import`) in a service's own process that a test starts (`childProcessEnv` puts it
 * in NODE_OPTIONS): the responses of that process are proven against the service's document as the
 * test's own are, each violation written to PROVEN_RESPONSES_CHILD_LOG as it is found and the counts
 * when the process exits, for the test's proof to read (`proveResponses`).
 */
import { appendFileSync } from 'node:fs';
import { proveResponses } from './proof';

const log = process.env.PROVEN_RESPONSES_CHILD_LOG;
if (log) {
  const proof = proveResponses((violation) => appendFileSync(log, `${JSON.stringify({ violation })}\n`));
  process.on('exit', () => {
    if (Object.values(proof.counts).some((n) => n > 0))
      appendFileSync(log, `${JSON.stringify({ counts: proof.counts })}\n`);
  });
}
