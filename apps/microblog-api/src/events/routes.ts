import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { describeEventStreamSettings, errorResponses, eventStreamResponses } from '@platform/http-kit';
import { problemDetailsDialect } from '../errors';
import { EVENT_DATA, EventsQuery, type MicroblogEvent } from './schemas';

const eventsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/microblog/events',
    {
      schema: {
        tags: ['posts'],
        summary: 'Live updates (Server-Sent Events)',
        description:
          'A stream of what changes the list: `post` (a new post, the same JSON as a list item), `reply` (a reply ' +
          'and its post’s new `reply_count`) and `reaction` (a post’s new `reactions`), each with an `id:`. ' +
          'Anonymous; `topic` keeps only the events of that topic’s posts. A client that reconnects with ' +
          '`Last-Event-ID` (as EventSource does) or `last_event_id` gets every later event in order, then the live ' +
          'ones, none twice; an id older than the events kept (24 h by default) gets one `reset` event: reload ' +
          'the list and follow on. A comment line every 15 s keeps the stream alive; `retry:` says when to ' +
          'reconnect (also when the instance shuts down, so clients move to another). ' +
          describeEventStreamSettings(),
        querystring: EventsQuery,
        response: {
          ...eventStreamResponses(problemDetailsDialect, {
            description: 'The stream: text/event-stream, one message per event',
            events: EVENT_DATA,
          }),
          ...errorResponses(problemDetailsDialect, [400]),
        },
      },
    },
    async (request, reply) => {
      const { topic } = request.query;
      await app.eventStream.serve<MicroblogEvent>(request, reply, {
        filter: topic ? (event) => event.data.quest_topic === topic : undefined,
      });
    },
  );
};

export default eventsRoutes;
