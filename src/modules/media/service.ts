/**
 * The media module: a provider's media stream, from its upgrade to its end. A stream proves whose
 * call it carries before anything about the call changes: the provider's signature on the upgrade
 * (checked with the tenant's credentials once the stream's `start` names the call), our token in
 * its parameters (signed for that tenant and call), and a call still live whose conversation no
 * other stream has claimed. Then the agent converses on it (voice-call.ts), every turn recorded, and
 * the line's audio too when the agent records its calls (recording.ts).
 * A conversation relay (conversation-relay.ts: the provider listens and speaks) is bound the same way.
 */
import { timingSafeEqual } from 'node:crypto';
import { tenantCtx, type Deps, type TenantCtx } from '../../platform/context.ts';
import { telephonyProvider } from '../../providers/registry.ts';
import type { AnsweredBy, MediaStreamEvent, MediaStreamWire } from '../../providers/types.ts';
import * as agents from '../agents/service.ts';
import * as calls from '../calls/service.ts';
import type { Agent } from '../agents/schemas.ts';
import * as integrations from '../integrations/service.ts';
import { conversationOfCall, endCallConversation, usageOf } from '../conversation/service.ts';
import { framedAudio } from './frames.ts';
import { keyTones } from './keys.ts';
import type { AudioFormat } from '../../platform/audio.ts';
import type { AnswerAction } from './pipeline/conversation.ts';
import { startCallRecording, type CallRecording } from './recording.ts';
import { turnChoiceOf } from './turn-detection/registry.ts';
import { agentSpeechFigures, liveSpeech, pipelineSpeech, speechFigures } from './line-speech.ts';
import { startSpeechToSpeechCall, startVoiceCall, type VoiceCall } from './voice-call.ts';

/** The WebSocket as this module uses it. */
export interface MediaSocket {
  send(message: string): void;
  close(code: number, reason: string): void;
}

export interface StreamUpgrade {
  headers: Record<string, string | string[] | undefined>;
}

/** Close codes: 1008 (policy violation) for a stream we refuse, 1000 once the call is over. */
const REFUSED = 1008;
export const DONE = 1000;
/** Audio that arrives before the stream is bound is kept for the recogniser, up to this much (5 s of 8 kHz μ-law). */
const EARLY_AUDIO_BYTES = 40_000;
/** More malformed messages than this and the stream is not the provider's: it is closed. */
const MALFORMED_LIMIT = 100;
/** Line time per stored chunk of a recording: 320 KB of both channels at 8 kHz μ-law, what a call holds at most. */
const RECORDING_CHUNK_SECONDS = 20;

export interface MediaStreamHandler {
  message(data: string): void;
  closed(): void;
}

/** Handles one provider media stream, from its first message to its close. */
export function acceptMediaStream(deps: Deps, providerName: string, upgrade: StreamUpgrade, socket: MediaSocket): MediaStreamHandler {
  const provider = telephonyProvider(providerName);
  const wire = provider.telephony.mediaStream!;
  let voiceCall: VoiceCall | undefined;
  let streamId = '';
  const early: Buffer[] = [];
  let earlyBytes = 0;
  const pending: MediaStreamEvent[] = [];

  function handle(event: MediaStreamEvent): void {
    if (!voiceCall) {
      // Before the stream is bound: its audio is kept (briefly), anything else waits for the binding.
      if (event.type === 'audio' && earlyBytes < EARLY_AUDIO_BYTES) {
        early.push(event.audio);
        earlyBytes += event.audio.length;
      } else if (event.type !== 'audio') pending.push(event);
      return;
    }
    switch (event.type) {
      case 'audio':
        return voiceCall.audio(event.audio);
      case 'mark':
        return voiceCall.marked(event.name);
      case 'dtmf':
        return voiceCall.dtmf(event.digit);
      case 'stop':
        return void stream.hangUp();
      case 'error':
        return deps.log.warn({ provider: provider.name, streamId, reason: event.message }, 'media stream error');
      default:
        return;
    }
  }

  async function bind(
    start: Extract<MediaStreamEvent, { type: 'start' }>,
    closed: () => boolean,
  ): Promise<BoundSocket | string | undefined> {
    streamId = start.streamId;
    const claimed = await claimedConversation(
      deps,
      provider.name,
      wire,
      calls.mediaStreamUrl,
      upgrade,
      start,
      closed,
      async (ctx, agent) => {
        const realtime = agent.realtime ? await agents.realtimeModelOf(ctx, agent) : null;
        if (agent.realtime && !realtime) return "The agent's speech-to-speech model has no server to reach.";
        // The model's server detects turns: no recogniser of ours listens.
        if (realtime?.turnDetection === 'server') return { realtime, speech: undefined };
        const speech = await agents.speechOf(deps, ctx, agent);
        const { stt } = speech;
        if (!stt) return 'The agent has no speech-to-text to listen with.';
        return { realtime, speech: liveSpeech(deps, { ...speech, stt }) };
      },
    );
    if (!claimed || typeof claimed === 'string') return claimed;
    const { ctx, call, agent, conversation, checked } = claimed;
    const { realtime, speech } = checked;
    const { session, model } = conversation;
    const frames = framedAudio(wire.frameBytes, start.format, (audio) => socket.send(wire.audio(streamId, audio)));
    const recording = agent.recording.enabled ? recordCall(deps, ctx, call.id, start.format, agent.recording.retentionDays) : undefined;
    const listening = speech && {
      stt: speech.stt,
      language: conversation.agent.language,
      ...(speech.sttModel ? { sttModel: speech.sttModel } : {}),
      turns: turnChoiceOf(deps.config, agent),
    };
    const line = {
      line: {
        format: start.format,
        play: frames.play,
        mark: (name: string) => {
          frames.flush();
          socket.send(wire.mark(streamId, name));
        },
        clear: () => {
          frames.drop();
          socket.send(wire.clear(streamId));
        },
      },
      session,
      clock: deps.clock,
      hangUp: async (reason: calls.EndReason) => {
        await endCallConversation(ctx, call, reason, agent);
        socket.close(DONE, 'The call is over.');
      },
      silenceTimeoutMs: deps.config.voice.silenceSeconds * 1000,
      maxDurationMs: deps.config.dialer.maxCallSeconds * 1000,
      onError: (error: unknown) => deps.log.warn({ callId: call.id, err: error }, 'voice call'),
      ...(recording ? { recording } : {}),
    };
    voiceCall = realtime
      ? startSpeechToSpeechCall({
          ...line,
          model: realtime.model,
          connect: (listener) =>
            realtime.connect(
              {
                instructions: session.spoken.instructions,
                tools: session.spoken.tools,
                format: start.format,
                language: conversation.agent.language,
              },
              listener,
            ),
          ...(listening ? { listen: listening } : {}),
          record: (turns, spoken) =>
            calls.appendTurns(
              ctx,
              call.id,
              turns,
              // Who transcribed the caller: our recogniser, or the model's server.
              calls.withSpeech(
                usageOf(session, { name: realtime.model, provider: realtime.provider }),
                speechFigures(spoken, { stt: speech?.sttProvider ?? realtime.provider, tts: null }),
              ),
            ),
        })
      : startVoiceCall({
          ...line,
          ...pipelineSpeech(deps, agent, speech!),
          ...(call.direction === 'OUTGOING' ? { answered: (who, heardBy) => actOnAnswerer(ctx, call.id, who, heardBy) } : {}),
          ignored: (heard, text) => deps.log.debug({ callId: call.id, heard, text }, 'caller spoke over the agent: not an interruption'),
          record: (turns, spoken) =>
            calls.appendTurns(ctx, call.id, turns, calls.withSpeech(usageOf(session, model), agentSpeechFigures(speech!)(spoken))),
        });
    for (const audio of early.splice(0)) voiceCall.audio(audio);
    for (const event of pending.splice(0)) handle(event);
    // A provider that cannot press keys while the stream runs (Twilio): the agent's keys are tones on the line.
    const noMoreKeys = calls.pressKeysWith(call.id, (digits) => {
      frames.play(keyTones(digits, start.format));
      frames.flush();
    });
    // The recording is finished once the conversation stopped, whether or not it stopped cleanly.
    return {
      ctx,
      callId: call.id,
      stop: () =>
        voiceCall!.stop().finally(() => {
          noMoreKeys();
          return recording?.finish();
        }),
    };
  }

  const stream = acceptCallSocket(deps, socket, { kind: 'media stream', read: wire.read, opening: 'start', bind, handle });
  return stream;
}

/** What follows who answered, as the line heard it: the calls module stores it and decides by the campaign's policy. */
async function actOnAnswerer(ctx: TenantCtx, callId: string, who: AnsweredBy, heardBy: calls.HeardBy): Promise<AnswerAction> {
  const decision = await calls.classifyInCall(ctx, callId, who, heardBy);
  if (decision?.act === 'voicemail') return { act: 'voicemail', text: decision.turn.text };
  if (decision?.act === 'end') return { act: 'hang_up' };
  return { act: 'converse' };
}

/** The call's recording, its chunks stored through the calls module as the line passes them. */
function recordCall(deps: Deps, ctx: TenantCtx, callId: string, format: AudioFormat, retentionDays: number): CallRecording {
  return startCallRecording({
    format,
    chunkSeconds: RECORDING_CHUNK_SECONDS,
    write: (chunk) => calls.appendRecording(ctx, callId, { format, retentionDays }, chunk),
    onError: (error) => deps.log.warn({ callId, err: error }, 'call recording stopped: a chunk could not be stored'),
  });
}

const NO_AGENT = 'The call has no agent to converse.';

/**
 * The conversation a socket's opening names, once the call is verified (`verifiedCall`), its agent
 * `check`ed (what the socket needs of it, or why it cannot serve) and the call claimed; otherwise why
 * it is refused (undefined: the socket closed meanwhile). Claimed last, so a socket refused before
 * leaves the call as it was.
 */
export async function claimedConversation<T>(
  deps: Deps,
  providerName: string,
  wire: Pick<MediaStreamWire, 'verifyUpgrade' | 'upgradeParameters'>,
  signedUrl: (ctx: TenantCtx, providerName: string) => string,
  upgrade: StreamUpgrade,
  opening: { providerCallId: string; parameters: Record<string, string> },
  closed: () => boolean,
  check: (ctx: TenantCtx, agent: Agent) => Promise<T | string>,
) {
  const verified = await verifiedCall(deps, providerName, wire, (ctx) => signedUrl(ctx, providerName), upgrade, opening);
  if (closed()) return undefined;
  if (typeof verified === 'string') return verified;
  const { ctx } = verified;
  const agent = await agents.agentOfCall(ctx, verified.call);
  if (!agent) return NO_AGENT;
  const checked = await check(ctx, agent);
  if (typeof checked === 'string') return checked;
  const call = await calls.claimStreamedConversation(ctx, verified.call.id);
  if (!call) return ALREADY_STREAMED;
  const conversation = await conversationOfCall(deps, ctx, call, agent);
  if (!conversation) return NO_AGENT;
  return { ctx, call, agent, conversation, checked };
}

/** A provider's socket bound to its call: the conversation on it, stopped when the socket closes. */
export interface BoundSocket {
  ctx: TenantCtx;
  callId: string;
  stop(): Promise<void>;
}

/** What one kind of provider socket (a media stream, a conversation relay) does with its messages. */
export interface CallSocket<E extends { type: string }, O extends E['type']> {
  /** Names the socket in logs ('media stream'). */
  kind: string;
  /** One text message, normalised; throws for one that is not the provider's format. */
  read(data: string): E;
  /** The message that names the call (`start`, `setup`): the socket is bound with the first. */
  opening: O;
  /** Binds the socket to the call its opening names, or says why it is refused; `closed()` once the socket closed meanwhile. */
  bind(opening: Extract<E, { type: O }>, closed: () => boolean): Promise<BoundSocket | string | undefined>;
  /** Every other message, before the binding too (the socket keeps what it needs meanwhile). */
  handle(event: E): void;
}

/**
 * A provider's socket for one call, from its first message to its close: malformed messages are
 * counted and dropped (too many close it), the opening binds it once, a refusal closes it with
 * 1008, and when the line is gone (`hangUp`, or the close) the conversation stops and the calls
 * module ends the call if its provider will not (an incoming call); an outgoing call is ended by
 * its provider's status callback.
 */
export function acceptCallSocket<E extends { type: string }, O extends E['type']>(
  deps: Deps,
  socket: MediaSocket,
  transport: CallSocket<E, O>,
): MediaStreamHandler & { hangUp(): Promise<void> } {
  let bound: BoundSocket | undefined;
  let binding: Promise<void> | undefined;
  let malformed = 0;
  let closed = false;
  let stopping: Promise<void> | undefined;

  const refuse = (reason: string) => {
    deps.log.warn({ reason }, `${transport.kind} refused`);
    closed = true;
    socket.close(REFUSED, reason);
  };

  function hangUp(): Promise<void> {
    const logged = (error: unknown) => deps.log.warn({ err: error }, `${transport.kind} end`);
    // After the binding: a message handled while it finished may say the line is gone.
    stopping ??= Promise.resolve(binding)
      .then(() => bound?.stop())
      .catch(logged)
      .then(() => bound && calls.streamEnded(bound.ctx, bound.callId))
      .catch(logged);
    return stopping;
  }

  return {
    hangUp,
    message(data) {
      if (closed) return;
      let event: E;
      try {
        event = transport.read(data);
      } catch {
        // Counted and dropped: one bad frame does not end a call, a stream of them is not the provider.
        if (++malformed > MALFORMED_LIMIT) refuse('Too many malformed messages.');
        return;
      }
      if (event.type !== transport.opening) return transport.handle(event);
      binding ??= transport
        .bind(event as Extract<E, { type: O }>, () => closed)
        .then(
          (result) => {
            if (typeof result === 'string') refuse(result);
            else bound = result;
          },
          (error: unknown) => {
            deps.log.error({ err: error }, transport.kind);
            refuse(`The ${transport.kind} could not be started.`);
          },
        );
    },
    closed() {
      closed = true;
      if (malformed) deps.log.warn({ malformed }, `${transport.kind} had malformed messages`);
      void binding?.then(hangUp);
    },
  };
}

const ALREADY_STREAMED = 'The call is over or already has its stream.';

/**
 * The call a stream's `start` (or a relay's `setup`) names, once the provider's signature over the
 * URL we gave it (`signedUrl`) and our token agree; otherwise why it is refused. Nothing about the
 * call changes here.
 */
async function verifiedCall(
  deps: Deps,
  providerName: string,
  wire: Pick<MediaStreamWire, 'verifyUpgrade' | 'upgradeParameters'>,
  signedUrl: (ctx: TenantCtx) => string,
  upgrade: StreamUpgrade,
  start: { providerCallId: string; parameters: Record<string, string> },
): Promise<{ ctx: TenantCtx; call: calls.CallRow } | string> {
  // One answer for every failure before the signature holds: a stranger learns nothing about our calls.
  const unverified = 'The stream is not signed for a live call.';
  // Our parameters, in `start` or (Telnyx's token) on the upgrade.
  const parameters = { ...start.parameters, ...wire.upgradeParameters?.(upgrade.headers) };
  const found = await calls.findCallByProviderId(deps, providerName, start.providerCallId);
  if (!found || found.id !== parameters.callId) return unverified;
  const ctx = tenantCtx(deps, found.tenant_id);
  const expected = Buffer.from(calls.mediaStreamToken(deps.serverKeys, found.tenant_id, found.id));
  const given = Buffer.from(parameters.token ?? '');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return unverified;
  const connection = await integrations.connectionTo(ctx, telephonyProvider(providerName));
  if (!connection || !wire.verifyUpgrade(signedUrl(ctx), upgrade.headers, connection.credentials)) return unverified;
  // Over, or a stream already has it: a replayed or second stream.
  if (found.status === 'ENDED' || found.conversation_started_at) return ALREADY_STREAMED;
  return { ctx, call: found };
}

export { converseOnTestLine, voiceTestRefusal, type TestLineResult } from './test-line.ts';
