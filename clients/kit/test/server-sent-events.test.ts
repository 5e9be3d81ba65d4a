import { parseServerSentEvents, type ServerSentEvent } from '../src/server-sent-events.js';

/** A body of these chunks, as a server would send them over time. */
const body = (...chunks: string[]) =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk));
      controller.close();
    },
  });

async function parse(...chunks: string[]): Promise<{ messages: ServerSentEvent[]; retries: number[] }> {
  const messages: ServerSentEvent[] = [];
  const retries: number[] = [];
  for await (const message of parseServerSentEvents(body(...chunks), (ms) => retries.push(ms)))
    messages.push(message);
  return { messages, retries };
}

describe('Server-Sent Events parsing (the HTML standard)', () => {
  test('messages with id, event and data; comments and the retry hint', async () => {
    expect(
      await parse('retry: 2000\n\n: heartbeat\n\nid: 7\nevent: post\ndata: {"id":1}\n\ndata: plain\n\n'),
    ).toEqual({
      messages: [
        { id: '7', event: 'post', data: '{"id":1}' },
        { event: 'message', data: 'plain' },
      ],
      retries: [2000],
    });
  });

  test('data lines join with newlines; one space after the colon is dropped, others kept', async () => {
    const { messages } = await parse('data:a\ndata:  b\ndata\n\n');
    expect(messages).toEqual([{ event: 'message', data: 'a\n b\n' }]);
  });

  test('lines end with LF, CRLF or CR, also when a CRLF is split between chunks', async () => {
    const { messages } = await parse('id: 1\r', '\nevent: a\r\ndata: x\r\r', 'id: 2\revent: b\rdata: y\n\n');
    expect(messages).toEqual([
      { id: '1', event: 'a', data: 'x' },
      { id: '2', event: 'b', data: 'y' },
    ]);
  });

  test('a message split anywhere across chunks, a multi-byte character too', async () => {
    const whole = 'id: 3\nevent: post\ndata: {"text":"héllo ✓"}\n\n';
    const bytes = new TextEncoder().encode(whole);
    const chunks = [...bytes].map((b) => new Uint8Array([b]));
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const chunk of chunks) controller.enqueue(chunk);
        controller.close();
      },
    });
    const messages: ServerSentEvent[] = [];
    for await (const message of parseServerSentEvents(stream)) messages.push(message);
    expect(messages).toEqual([{ id: '3', event: 'post', data: '{"text":"héllo ✓"}' }]);
  });

  test('a message the stream ends in the middle of is not one; nor is one without data', async () => {
    expect((await parse('id: 1\nevent: x\n\nid: 2\ndata: cut')).messages).toEqual([]);
  });
});
