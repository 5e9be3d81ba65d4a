export { ApiError, errorBody } from './errors.js';
export {
  eventStream,
  typedEvents,
  type EventStreamOptions,
  type Fetch,
  type TypedEvent,
} from './event-stream.js';
export { parseLinkHeader } from './link.js';
export { parseServerSentEvents, type ServerSentEvent } from './server-sent-events.js';
