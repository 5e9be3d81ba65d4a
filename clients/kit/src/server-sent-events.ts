/** One message of a `text/event-stream`, as the server framed it. */
export interface ServerSentEvent {
  /** The `id:` line, when the message had one. */
  id?: string;
  /** The `event:` line (`message` when absent). */
  event: string;
  /** The `data:` lines, joined by newlines. */
  data: string;
}

/**
 * Reads Server-Sent Events from a byte stream as the HTML standard's parser does: lines end with
 * CRLF, LF or CR; `:` starts a comment (a heartbeat); a blank line ends a message; a message without
 * data is not one, but its `id:` and a `retry:` line still count (`onRetry`).
 */
export async function* parseServerSentEvents(
  body: ReadableStream<Uint8Array>,
  onRetry: (ms: number) => void = () => undefined,
): AsyncGenerator<ServerSentEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let pendingCR = false;
  let id: string | undefined;
  let event = '';
  let data: string[] = [];
  const field = (line: string): ServerSentEvent | undefined => {
    if (line === '') {
      const message = data.length
        ? { ...(id !== undefined && { id }), event: event || 'message', data: data.join('\n') }
        : undefined;
      event = '';
      data = [];
      id = undefined;
      return message;
    }
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const name = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (name === 'data') data.push(value);
    else if (name === 'event') event = value;
    else if (name === 'id' && !value.includes('\0')) id = value;
    else if (name === 'retry' && /^\d+$/.test(value)) onRetry(Number(value));
    return undefined;
  };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      // A CR that ended the previous chunk and an LF that starts this one are one line end.
      if (pendingCR && buffer.startsWith('\n')) buffer = buffer.slice(1);
      pendingCR = false;
      let start = 0;
      for (let i = 0; i < buffer.length; i++) {
        const c = buffer[i];
        if (c !== '\n' && c !== '\r') continue;
        const message = field(buffer.slice(start, i));
        if (c === '\r') {
          if (i + 1 === buffer.length) pendingCR = true;
          else if (buffer[i + 1] === '\n') i++;
        }
        start = i + 1;
        if (message) yield message;
      }
      buffer = buffer.slice(start);
    }
  } finally {
    reader.releaseLock();
  }
}
