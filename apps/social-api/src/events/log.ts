import { sql, type QueryCreator, type RawBuilder } from 'kysely';
import type { SocialDatabase } from '../db/schema';

/**
 * The event of a change, logged by the statement that makes it (a data-modifying CTE reading the
 * change's rows `from`): the event's insert takes the log's lock (EVENT_LOG_V1), held to the commit,
 * so the event commits with the change, and in id order with every other.
 */
export const logged = <DB extends SocialDatabase>(
  w: QueryCreator<DB>,
  kind: string,
  from: string,
  payload: RawBuilder<unknown>,
) =>
  (w as unknown as QueryCreator<SocialDatabase>)
    .insertInto('events')
    .columns(['kind', 'payload'])
    .expression(
      sql<{ kind: string; payload: string }>`select ${sql.lit(kind)}, ${payload} from ${sql.table(from)}`,
    );
