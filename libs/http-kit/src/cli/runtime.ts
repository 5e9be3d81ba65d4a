import { setFlagsFromString } from 'node:v8';

/**
 * V8 options every service process runs with, set by `serve` before the app is built (so no launcher,
 * image or manifest has to repeat them on its command line).
 *
 * `--no-allocation-site-pretenuring`: V8 watches each allocation site (an object or array literal)
 * and, when nearly all of its objects outlive a young-generation collection, allocates that site's
 * objects in the old generation from then on. A service's page rows (pg's row objects, the page's
 * objects) are alive across a round trip or a serialisation whenever a collection happens, so the
 * heuristic tenures them; but they die a moment later, and while they wait for the next full
 * collection as garbage in the old generation, every young string they point to is copied and
 * promoted by each scavenge. Measured on a 55 KiB page of 100 posts with their replies (300 req/s,
 * 8 s): scavenges took 1,130-1,220 ms with it and 360-460 ms without, and service CPU per request
 * fell by about a third. Objects that really live long are still promoted by age, as always.
 */
export const SERVICE_V8_FLAGS = ['--no-allocation-site-pretenuring'] as const;

let tuned = false;

/** Applies SERVICE_V8_FLAGS to this process (once; later calls do nothing). */
export function tuneRuntime(): void {
  if (tuned) return;
  tuned = true;
  for (const flag of SERVICE_V8_FLAGS) setFlagsFromString(flag);
}
