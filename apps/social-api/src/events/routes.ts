import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { describeEventStreamSettings, eventStreamResponses, type OpenStream } from '@platform/http-kit';
import { socialDialect } from '../errors';
import { errors, routeOptions } from '../wire/http';
import { createEventsRepository } from './repository';
import { FEED_EVENTS, POST_EVENTS, STREAM_END_EVENTS, StreamQuery, type SocialEvent } from './schemas';
import { createTokenWatch } from './token-watch';

const COMMON =
  'Each event has an `id:`; a client that reconnects with `Last-Event-ID` (as EventSource does) or ' +
  '`last_event_id` gets every later event in order, then the live ones, none twice; an id older than the ' +
  'events kept (24 h by default) gets one `reset` event: reload, then follow on. A comment line every 15 s ' +
  'keeps the stream alive; `retry:` says when to reconnect (also when the instance shuts down, so clients ' +
  'move to another). The token goes as `Authorization: Bearer` or, for a browser’s EventSource (which cannot ' +
  'set headers), as `access_token` in the query (the logs censor it). When the token expires or is revoked ' +
  '(logout, a reset, a refresh replayed), the stream sends `token_expired` and ends: refresh, then reconnect ' +
  'with `last_event_id` and nothing is missed. ';

/**
 * The live streams of posts: every post (as `GET /api/posts` shows them) and a user's feed (as
 * `GET /api/feed` would show it), over the service's event log (@platform/http-kit's event stream).
 */
const eventsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const events = createEventsRepository(app.database.db);
  const { token } = routeOptions('posts', app.requireToken);
  const watch = createTokenWatch(app, events, app.config.events.tokenCheckMs);

  /** `access_token` in the query stands for the header (an EventSource cannot send one). */
  const bearerFromQuery = async (request: FastifyRequest) => {
    const query = request.query as { access_token?: unknown };
    if (request.headers.authorization === undefined && typeof query.access_token === 'string')
      request.headers.authorization = `Bearer ${query.access_token}`;
  };

  /** A stream ends with `token_expired` when its token does (see token-watch.ts). */
  const watched = (request: FastifyRequest) => (stream: OpenStream) => watch.add(request.tokenId, stream);

  app.get(
    '/events/posts',
    {
      ...token({
        summary: 'Live posts (Server-Sent Events)',
        description:
          'Every new, edited and deleted post, as `GET /api/posts` shows them: `post`, `post_updated`, ' +
          '`post_deleted`. ' +
          COMMON +
          describeEventStreamSettings(),
        querystring: StreamQuery,
        response: {
          ...eventStreamResponses(socialDialect, {
            description: 'The stream: text/event-stream, one message per event',
            events: POST_EVENTS,
            unnumbered: STREAM_END_EVENTS,
          }),
          ...errors(400, 401),
        },
      }),
      onRequest: [bearerFromQuery, app.requireToken],
    },
    async (request, reply) => {
      await app.eventStream.serve<SocialEvent>(request, reply, {
        filter: (event) => event.kind !== 'feed_changed',
        onOpen: watched(request),
      });
    },
  );

  app.get(
    '/events/feed',
    {
      ...token({
        summary: 'Live feed (Server-Sent Events)',
        description:
          'What the caller’s feed (`GET /api/feed`) shows, as it changes: `post`, `post_updated` and ' +
          '`post_deleted` of the caller and of everyone they follow, and `feed_changed` when the caller follows ' +
          'or unfollows someone (reload the feed: older posts join or leave it). ' +
          COMMON +
          describeEventStreamSettings(),
        querystring: StreamQuery,
        response: {
          ...eventStreamResponses(socialDialect, {
            description: 'The stream: text/event-stream, one message per event',
            events: FEED_EVENTS,
            unnumbered: STREAM_END_EVENTS,
          }),
          ...errors(400, 401),
        },
      }),
      onRequest: [bearerFromQuery, app.requireToken],
    },
    async (request, reply) => {
      const me = request.user.id;
      // The feed's authors and the log's position read in one snapshot: a follow after it is an
      // event after that position, which the filter sees.
      const { authors: following, position } = await events.feedAuthors(me);
      const authors = new Set(following);
      await app.eventStream.serve<SocialEvent>(request, reply, {
        from: position,
        filter: (event) => {
          switch (event.kind) {
            case 'feed_changed':
              if (event.data.follower_id !== me) return false;
              // Never the caller themself: their own posts are in their feed whoever they follow.
              if (event.data.user_id !== me) {
                if (event.data.following) authors.add(event.data.user_id);
                else authors.delete(event.data.user_id);
              }
              return true;
            case 'post_deleted':
              return authors.has(event.data.author_id);
            default:
              return authors.has(event.data.author.id);
          }
        },
        onOpen: watched(request),
      });
    },
  );
};

export default eventsRoutes;
