/**
 * The calls module owns a call's life: the attempt is recorded, placed through its provider, moved
 * by the provider's events (ringing, answered, ended) and ended once with its usage, cost, wallet
 * debit and `call.ended`. Who is called and when is the dialer's business (campaigns); what follows
 * a call is for the modules that consume `call.ended` or listen to its end (onCallEnded).
 *
 * This file is the module's face to the others (they may import a module's service.ts only): it
 * names what they may use, each concern in its own file of the module.
 */
import { NO_BACKUP_USAGE, NO_USAGE, withSpeech, type CallUsage, type SpeechFigures } from './rate-card.ts';
import type { CallOutcomeRecord, EndReason, TranscriptTurn } from './schemas.ts';

export type { CallUsage, TranscriptTurn, EndReason, CallOutcomeRecord };
/** The call's schemas other modules' records reuse (a test chat's transcript and usage). */
export {
  CallCost as CallCostSchema,
  CallUsage as CallUsageSchema,
  END_REASONS,
  TranscriptTurn as TranscriptTurnSchema,
} from './schemas.ts';

/** Call recordings: written by the media pipeline in chunks, served as WAV, deleted after their retention. */
export { appendRecording, recordingWav, type RecordingChunk } from './recordings.ts';

export { NO_BACKUP_USAGE, NO_USAGE, withSpeech, type SpeechFigures };

/** Starting and placing attempts (the dialer's calls). */
export { providerProblem, startAttempts, placeAttempts, type NewAttempt, type AttemptToPlace } from './placing.ts';

/** Where a provider posts and streams, and the token a call's stream presents. */
export { mediaStreamToken, mediaStreamUrl, conversationRelayUrl } from './provider-line.ts';

/** Moving live calls on: provider status callbacks and calls past their deadline. */
export { CALL_ANSWERED, advanceDueCalls, receiveStatusCallback, type CallAnsweredJob } from './status.ts';

/** Who answered: answering-machine detection and the campaign's policy for a machine. */
export {
  classifyInCall,
  decideMachinesWith,
  receiveAnsweredByCallback,
  type Decision,
  type HeardBy,
  type MachinePolicy,
  type MachinePolicyOf,
} from './answering-machines.ts';

/** Incoming calls, simulated or on a provider's line. */
export { simulateInboundCall, answerIncomingCall, streamEnded } from './incoming.ts';

/** What a conversation does with its call. */
export {
  claimConversation,
  appendTurns,
  endConversation,
  pressKeys,
  pressKeysWith,
  transferWhisper,
  claimStreamedConversation,
  recordOutcome,
} from './conversing.ts';

/** Ending a call and its money (outcome, usage, cost, wallet debit), who hears of it, and a user's hang-up. */
export {
  priceUsage,
  CALL_ENDED,
  endedCallLine,
  onCallEnded,
  hangupCall,
  type CallEndedJob,
  type CallResult,
  type EndedCall,
  type CallEndedListener,
} from './ending.ts';

/** Reading calls: the API's view of a call, the call log, a live view, and what other modules ask of the calls table. */
export {
  toCall,
  listCalls,
  findCallRow,
  endedCallRow,
  followCall,
  getCall,
  findCallByProviderId,
  hasFinishedCallCondition,
  usageByAgent,
  answerLatency,
  callTrend,
  lockCalledNumbers,
  placedCalls,
  callsPerNumber,
  versionTallies,
  type VersionTally,
  type CallRow,
  type LiveEvent,
  type CallTrendRow,
  type CallUsageRow,
  type AnswerLatencyRow,
} from './queries.ts';
