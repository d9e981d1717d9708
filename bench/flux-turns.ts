// The kinds of turn bench/media.ts plays to Deepgram Flux's fake (BENCH_MEDIA_STT=flux), shared by its threads.

/**
 * Flux's turns, one kind per turn of a call in turn: its EndOfTurn about 260 ms after the caller's
 * last sound and an EagerEndOfTurn about 150 ms before it (Deepgram's published figures), the same
 * end without the eager one (Flux sends it only when its confidence passes the eager threshold
 * first), and an eager end inside a pause the caller goes on after (TurnResumed: the reply
 * prepared for it is dropped), then the eager and final ends.
 */
export const FLUX_TURNS = [
  { kind: 'eager end, then end of turn', eager: true, resumed: false },
  { kind: 'end of turn only', eager: false, resumed: false },
  { kind: 'eager end resumed, then both', eager: true, resumed: true },
] as const;
export const FLUX_END_OF_TURN_S = 0.26;
export const FLUX_EAGER_S = 0.11;
