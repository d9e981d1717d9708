/**
 * Events pushed by a callback-driven producer (a WebSocket's handlers) and pulled by one consumer
 * with `for await`. Events queued before `end` or `fail` are still delivered; a failure is thrown
 * after them, so the consumer sees everything that arrived and then why it stopped.
 */
export interface EventQueue<T> extends AsyncIterable<T> {
  push(event: T): void;
  end(): void;
  fail(error: Error): void;
  readonly finished: boolean;
}

export function eventQueue<T>(): EventQueue<T> {
  const queued: T[] = [];
  let finished = false;
  let failure: Error | undefined;
  let wake: (() => void) | undefined;
  const notify = () => {
    wake?.();
    wake = undefined;
  };
  return {
    push(event) {
      if (finished) return;
      queued.push(event);
      notify();
    },
    end() {
      finished = true;
      notify();
    },
    fail(error) {
      if (finished) return;
      failure = error;
      finished = true;
      notify();
    },
    get finished() {
      return finished;
    },
    async *[Symbol.asyncIterator]() {
      for (;;) {
        while (queued.length > 0) yield queued.shift()!;
        if (finished) {
          if (failure) throw failure;
          return;
        }
        await new Promise<void>((resolve) => (wake = resolve));
      }
    },
  };
}
