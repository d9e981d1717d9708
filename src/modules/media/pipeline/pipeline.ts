/**
 * A call's voice pipeline: a line of small stages, each handling the frames it knows and passing
 * on the others (as Pipecat's frame processors do). The line of a phone call:
 *
 *   transport in → recognition → turn detection → conversation → sentences → synthesis → playback (transport out)
 *
 * Frames go down the line toward the caller's ear and some come back up (frames.ts). A stage names
 * the frame types it handles, down and up; a frame no stage below (or above) handles is dropped at
 * the end of the line. Observers (the recording, the latency meter) see every frame as it enters a
 * stage, and change nothing.
 */
import type { DownFrame, Frame, UpFrame } from './frames.ts';

type Handlers<F extends { type: string }> = { [T in F['type']]?: (frame: Extract<F, { type: T }>) => void };

export interface Stage {
  /** Names the stage to observers (`recognition`, `playback`, …). */
  readonly name: string;
  down?: Handlers<DownFrame>;
  up?: Handlers<UpFrame>;
  /** The call is over: let go of what the stage holds (connections, converters, timers). */
  close?(): Promise<void> | void;
}

/** How a stage sends frames on: down to the stages after it, up to the stages before it. */
export interface StageLink {
  down(frame: DownFrame): void;
  up(frame: UpFrame): void;
}

/** Sees every frame as it enters a stage; changes nothing. */
export type Observer = (frame: Frame, stage: string) => void;

export interface Pipeline {
  /** Adds a stage at the end of the line, made with its link; returns it as made, for whoever needs more of it. */
  add<S extends Stage>(make: (link: StageLink) => S): S;
  /** A frame into the top of the line (the transport's input). */
  send(frame: DownFrame): void;
  /** Closes every stage: each starts closing at once, from the top; settles once all have. */
  close(): Promise<void>;
}

type HandlerTable = Record<string, ((frame: never) => void) | undefined>;

/** An empty line of stages; `add` builds it from the top (the transport's input) down. */
export function pipeline(observers: Observer[] = []): Pipeline {
  const stages: Stage[] = [];
  /** Hands `frame` to the first stage from `index` on, in `step`'s direction, that handles its type. */
  function deliver(index: number, step: 1 | -1, frame: Frame, handlersOf: (stage: Stage) => HandlerTable | undefined): void {
    for (; index >= 0 && index < stages.length; index += step) {
      const stage = stages[index]!;
      const handle = handlersOf(stage)?.[frame.type];
      if (!handle) continue;
      for (const observe of observers) observe(frame, stage.name);
      return handle(frame as never);
    }
  }
  const down = (index: number, frame: DownFrame) => deliver(index, 1, frame, (stage) => stage.down as HandlerTable | undefined);
  const up = (index: number, frame: UpFrame) => deliver(index, -1, frame, (stage) => stage.up as HandlerTable | undefined);
  return {
    add(make) {
      const index = stages.length;
      const stage = make({ down: (frame) => down(index + 1, frame), up: (frame) => up(index - 1, frame) });
      stages.push(stage);
      return stage;
    },
    send: (frame) => down(0, frame),
    async close() {
      await Promise.all(stages.map((stage) => stage.close?.()));
    },
  };
}
