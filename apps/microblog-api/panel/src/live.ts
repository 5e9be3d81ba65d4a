import { ApiError, type MicroblogClient, type MicroblogEvent } from '@platform/microblog-client';

/** Pause before reopening a stream the service refused with a status the client does not retry. */
const STREAM_REOPEN_MS = 3000;

export interface StreamHandlers {
  /** The stream is open: live again (what was missed meanwhile follows, in order). */
  onOpen(): void;
  /** The stream is away (dropped, the service restarting or refusing): the client reconnects. */
  onOffline(): void;
  onEvent(event: MicroblogEvent): void;
}

/**
 * Follows the live stream for as long as the page lives, through the client's `events()`: it resumes
 * from the last id after a drop, a stream the server ended, a silent connection or a retryable refusal
 * (503 with Retry-After, 502, 504…), so the server replays what was missed, nothing twice. A stream
 * refused otherwise (the client gives up with an ApiError) is reopened here after a pause, from the
 * last id seen, as the panel always did.
 */
export async function followStream(microblog: MicroblogClient, handlers: StreamHandlers): Promise<never> {
  let lastEventId: number | undefined;
  for (;;) {
    try {
      for await (const event of microblog.events({
        lastEventId,
        onOpen: () => handlers.onOpen(),
        onReconnect: () => handlers.onOffline(),
      })) {
        if (event.id !== undefined) lastEventId = event.id;
        handlers.onEvent(event);
      }
    } catch (error) {
      // Not a refusal: a bug of the panel's, shown as the page's error (the stream goes on anyway).
      if (!(error instanceof ApiError))
        setTimeout(() => {
          throw error;
        });
    }
    handlers.onOffline();
    await new Promise((resolve) => setTimeout(resolve, STREAM_REOPEN_MS * (0.5 + Math.random())));
  }
}
