import { ApiError } from '../src/errors.js';
import { eventStream, typedEvents } from '../src/event-stream.js';
import type { ServerSentEvent } from '../src/server-sent-events.js';

/** One scripted answer of the fake server: a stream of chunks (then its end, or a drop), or a status. */
type Answer =
  | { chunks: string[]; drop?: boolean; hang?: boolean }
  | { status: number; body?: unknown; headers?: Record<string, string> };

/** A fetch that answers each connection with the next scripted answer, and remembers the requests. */
function server(...answers: Answer[]) {
  const requests: Request[] = [];
  const fetch = async (request: Request): Promise<Response> => {
    requests.push(request);
    const answer = answers.shift();
    if (!answer) return new Promise<Response>(() => undefined); // no more: never answers
    if ('status' in answer)
      return new Response(answer.body === undefined ? null : JSON.stringify(answer.body), {
        status: answer.status,
        headers: { 'content-type': 'application/json', ...answer.headers },
      });
    // One chunk a read; then the end, a drop (an error, as undici's "terminated"), or silence.
    const chunks = [...answer.chunks];
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        request.signal.addEventListener('abort', () =>
          controller.error(new DOMException('aborted', 'AbortError')),
        );
      },
      pull(controller) {
        const chunk = chunks.shift();
        if (chunk !== undefined) return controller.enqueue(new TextEncoder().encode(chunk));
        if (answer.drop) controller.error(new TypeError('terminated'));
        else if (!answer.hang) controller.close();
      },
    });
    return new Response(stream, { headers: { 'content-type': 'text/event-stream' } });
  };
  return { fetch, requests };
}

async function take(stream: AsyncIterable<ServerSentEvent>, n: number): Promise<ServerSentEvent[]> {
  const out: ServerSentEvent[] = [];
  if (n === 0) return out;
  for await (const message of stream) {
    out.push(message);
    if (out.length === n) break;
  }
  return out;
}

const event = (id: number, name = 'post', data: unknown = { n: id }) =>
  `id: ${id}\nevent: ${name}\ndata: ${JSON.stringify(data)}\n\n`;

describe('eventStream: an async iterator over SSE with resume from the last id', () => {
  test('after a dropped connection it reconnects with last_event_id after the retry hint, nothing twice', async () => {
    const { fetch, requests } = server(
      { chunks: ['retry: 5\n\n', event(1), event(2)], drop: true },
      { chunks: [event(3)] },
      { chunks: [event(4)] },
    );
    const reconnects: number[] = [];
    const stream = eventStream({
      url: 'http://svc/api/events?topic=x',
      fetch,
      onReconnect: ({ delayMs }) => reconnects.push(delayMs),
    });
    expect((await take(stream, 4)).map((m) => m.id)).toEqual(['1', '2', '3', '4']);
    expect(requests.map((r) => new URL(r.url).search)).toEqual([
      '?topic=x',
      '?topic=x&last_event_id=2',
      '?topic=x&last_event_id=3',
    ]);
    expect(requests[0].headers.get('accept')).toBe('text/event-stream');
    // The first reconnection followed a failure (5 ms); the second, a stream the server ended (5 ms).
    expect(reconnects).toEqual([5, 5]);
  });

  test('onOpen: each connection the service answered, before its messages; not a refused one', async () => {
    const { fetch } = server(
      { chunks: [event(1)], drop: true },
      { status: 503, headers: { 'retry-after': '0' } },
      { chunks: [event(2)] },
    );
    const log: string[] = [];
    const stream = eventStream({
      url: 'http://svc/s',
      fetch,
      retryMs: 1,
      onOpen: ({ attempt, response }) => log.push(`open ${attempt} ${response.status}`),
      onReconnect: ({ attempt }) => log.push(`reconnect ${attempt}`),
    });
    for await (const message of stream) {
      log.push(`message ${message.id}`);
      if (message.id === '2') break;
    }
    expect(log).toEqual(['open 0 200', 'message 1', 'reconnect 1', 'reconnect 2', 'open 2 200', 'message 2']);
  });

  test('resumes with the Last-Event-ID header when asked, and starts from a given id', async () => {
    const { fetch, requests } = server({ chunks: [event(10)] }, { chunks: [event(11)] });
    const stream = eventStream({
      url: 'http://svc/s',
      fetch,
      lastEventId: 9,
      resumeWith: 'header',
      retryMs: 1,
    });
    expect((await take(stream, 2)).map((m) => m.id)).toEqual(['10', '11']);
    expect(requests.map((r) => r.headers.get('last-event-id'))).toEqual(['9', '10']);
    expect(requests.every((r) => new URL(r.url).search === '')).toBe(true);
  });

  test('a reset is yielded like any event, and its id is where the stream resumes', async () => {
    const { fetch, requests } = server(
      { chunks: [event(50, 'reset', { reason: 'too_old' })], drop: true },
      { chunks: [event(51)] },
    );
    const messages = await take(eventStream({ url: 'http://svc/s', fetch, lastEventId: 3, retryMs: 1 }), 2);
    expect(messages.map((m) => [m.event, m.id])).toEqual([
      ['reset', '50'],
      ['post', '51'],
    ]);
    expect(new URL(requests[1].url).searchParams.get('last_event_id')).toBe('50');
  });

  test('ends after a final event (token_expired), once it has been yielded', async () => {
    const { fetch, requests } = server({
      chunks: [event(1), 'event: token_expired\ndata: {}\n\n', event(2)],
    });
    const messages: ServerSentEvent[] = [];
    for await (const m of eventStream({
      url: 'http://svc/s',
      fetch,
      isFinal: (m) => m.event === 'token_expired',
    }))
      messages.push(m);
    expect(messages.map((m) => m.event)).toEqual(['post', 'token_expired']);
    expect(requests).toHaveLength(1);
  });

  test('a 503 is waited out (Retry-After); a 4xx ends the iterator with the typed body', async () => {
    const { fetch } = server(
      { status: 503, body: { detail: 'full' }, headers: { 'retry-after': '0' } },
      { chunks: [event(1)], drop: true },
      { status: 401, body: { code: 401 } },
    );
    const seen: ServerSentEvent[] = [];
    const run = async () => {
      for await (const m of eventStream({ url: 'http://svc/s', fetch, retryMs: 1 })) seen.push(m);
    };
    const error = await run().catch((e: unknown) => e);
    expect(seen.map((m) => m.id)).toEqual(['1']);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ status: 401, body: { code: 401 } });
  });

  test('a silent connection (no heartbeat) is dropped and reopened', async () => {
    const { fetch, requests } = server({ chunks: [event(1)], hang: true }, { chunks: [event(2)] });
    const messages = await take(
      eventStream({ url: 'http://svc/s', fetch, idleTimeoutMs: 30, retryMs: 1 }),
      2,
    );
    expect(messages.map((m) => m.id)).toEqual(['1', '2']);
    expect(new URL(requests[1].url).searchParams.get('last_event_id')).toBe('1');
  });

  test('failed attempts in a row wait longer each time, up to maxAttempts', async () => {
    const { fetch } = server({ status: 502 }, { status: 502 }, { status: 502 });
    const delays: number[] = [];
    const run = async () => {
      for await (const m of eventStream({
        url: 'http://svc/s',
        fetch,
        retryMs: 2,
        maxAttempts: 3,
        onReconnect: ({ delayMs }) => delays.push(delayMs),
      }))
        void m;
    };
    await expect(run()).rejects.toMatchObject({ status: 502 });
    expect(delays).toEqual([2, 4]);
  });

  test('leaving the loop or the signal closes the connection', async () => {
    const { fetch, requests } = server({ chunks: [event(1), event(2)], hang: true });
    expect(await take(eventStream({ url: 'http://svc/s', fetch }), 1)).toHaveLength(1);
    expect(requests[0].signal.aborted).toBe(true);

    const second = server({ chunks: [event(1)], hang: true });
    const controller = new AbortController();
    const seen: string[] = [];
    for await (const m of eventStream({
      url: 'http://svc/s',
      fetch: second.fetch,
      signal: controller.signal,
    })) {
      seen.push(m.id!);
      controller.abort();
    }
    expect(seen).toEqual(['1']);
    expect(second.requests).toHaveLength(1);
  });

  test('typedEvents: the id a number, the data parsed', async () => {
    const { fetch } = server({
      chunks: [event(4, 'post', { text: 'hi' }), 'event: token_expired\ndata: {}\n\n'],
    });
    type E = { id: number; event: 'post'; data: { text: string } } | { event: 'token_expired'; data: object };
    const out: E[] = [];
    for await (const e of typedEvents<E>(
      eventStream({ url: 'http://svc/s', fetch, isFinal: (m) => m.event === 'token_expired' }),
    ))
      out.push(e);
    expect(out).toEqual([
      { id: 4, event: 'post', data: { text: 'hi' } },
      { event: 'token_expired', data: {} },
    ]);
  });
});
