/**
 * The media module: a provider's media stream, from its upgrade to its end. A stream proves whose
 * call it carries before anything about the call changes: the provider's signature on the upgrade
 * (checked with the tenant's credentials once the stream's `start` names the call), our token in
 * its parameters (signed for that tenant and call), and a call still live whose conversation no
 * other stream has claimed. Then the agent converses on it (voice-call.ts), every turn recorded.
 */
import { timingSafeEqual } from 'node:crypto';
import { tenantCtx, type Deps, type TenantCtx } from '../../platform/context.ts';
import { telephonyProvider } from '../../providers/registry.ts';
import type { MediaStreamEvent, MediaStreamWire } from '../../providers/types.ts';
import * as agents from '../agents/service.ts';
import * as calls from '../calls/service.ts';
import * as integrations from '../integrations/service.ts';
import { conversationOfCall, endCallConversation, usageOf } from '../conversation/service.ts';
import { listenInUtterances } from './utterance-recognition.ts';
import { startVoiceCall, type VoiceCall } from './voice-call.ts';

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
const DONE = 1000;
/** Audio that arrives before the stream is bound is kept for the recogniser, up to this much (5 s of 8 kHz μ-law). */
const EARLY_AUDIO_BYTES = 40_000;
/** More malformed messages than this and the stream is not the provider's: it is closed. */
const MALFORMED_LIMIT = 100;

export interface MediaStreamHandler {
  message(data: string): void;
  closed(): void;
}

/** Handles one provider media stream, from its first message to its close. */
export function acceptMediaStream(deps: Deps, providerName: string, upgrade: StreamUpgrade, socket: MediaSocket): MediaStreamHandler {
  const provider = telephonyProvider(providerName);
  const wire = provider.telephony.mediaStream!;
  let voiceCall: VoiceCall | undefined;
  /** The call the stream was bound to. */
  let bound: { ctx: TenantCtx; callId: string } | undefined;
  let binding: Promise<void> | undefined;
  let streamId = '';
  let malformed = 0;
  let closed = false;
  const early: Buffer[] = [];
  let earlyBytes = 0;
  const pending: MediaStreamEvent[] = [];

  const refuse = (reason: string) => {
    deps.log.warn({ provider: provider.name, reason }, 'media stream refused');
    closed = true;
    socket.close(REFUSED, reason);
  };

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
        return void hangUp();
      default:
        return;
    }
  }

  async function bind(start: Extract<MediaStreamEvent, { type: 'start' }>): Promise<void> {
    streamId = start.streamId;
    const verified = await verifiedCall(deps, provider.name, wire, upgrade, start);
    if (closed) return;
    if (typeof verified === 'string') return refuse(verified);
    const { ctx } = verified;
    const agent = verified.call.agent_id ? await agents.requireAgent(ctx, verified.call.agent_id).catch(() => undefined) : undefined;
    if (!agent) return refuse('The call has no agent to converse.');
    const speech = await agents.speechOf(deps, ctx, agent);
    if (!speech.stt) return refuse('The agent has no speech-to-text to listen with.');
    // Claimed last: a stream refused above leaves the call as it was.
    const call = await calls.claimStreamedConversation(ctx, verified.call.id);
    if (!call) return refuse(ALREADY_STREAMED);
    const conversation = await conversationOfCall(deps, ctx, call, agent);
    if (!conversation) return refuse('The call has no agent to converse.');
    const { session, model } = conversation;
    voiceCall = startVoiceCall({
      session,
      // A recogniser of whole utterances hears them as the voice-activity detection cuts them.
      stt: speech.stt.kind === 'live' ? speech.stt : listenInUtterances(speech.stt, { endOfSpeechMs: deps.config.voice.endOfSpeechMs }),
      tts: speech.tts,
      voice: speech.voice,
      language: conversation.agent.language,
      ...(speech.sttModel ? { sttModel: speech.sttModel } : {}),
      ...(speech.ttsModel ? { ttsModel: speech.ttsModel } : {}),
      line: {
        format: start.format,
        play: (audio) => socket.send(wire.audio(streamId, audio)),
        mark: (name) => socket.send(wire.mark(streamId, name)),
        clear: () => socket.send(wire.clear(streamId)),
      },
      clock: deps.clock,
      record: (turns, spoken) => calls.appendTurns(ctx, call.id, turns, { ...usageOf(session, model), ...spoken }),
      hangUp: async (reason) => {
        await endCallConversation(ctx, call, reason, agent);
        socket.close(DONE, 'The call is over.');
      },
      silenceTimeoutMs: deps.config.voice.silenceSeconds * 1000,
      maxDurationMs: deps.config.dialer.maxCallSeconds * 1000,
      onError: (error) => deps.log.warn({ callId: call.id, err: error }, 'voice call'),
    });
    bound = { ctx, callId: call.id };
    for (const audio of early.splice(0)) voiceCall.audio(audio);
    for (const event of pending.splice(0)) handle(event);
  }

  /**
   * The line is gone: the conversation stops, and the calls module ends the call if its provider
   * will not (an incoming call); an outgoing call is ended by its provider's status callback.
   */
  let stopping: Promise<void> | undefined;
  function hangUp(): Promise<void> {
    const logged = (error: unknown) => deps.log.warn({ err: error }, 'media stream end');
    stopping ??= (voiceCall?.stop() ?? Promise.resolve())
      .catch(logged)
      .then(() => bound && calls.streamEnded(bound.ctx, bound.callId))
      .catch(logged);
    return stopping;
  }

  return {
    message(data) {
      if (closed) return;
      let event: MediaStreamEvent;
      try {
        event = wire.read(data);
      } catch {
        // Counted and dropped: one bad frame does not end a call, a stream of them is not the provider.
        if (++malformed > MALFORMED_LIMIT) refuse('Too many malformed messages.');
        return;
      }
      if (event.type === 'start') {
        if (binding) return;
        binding = bind(event).catch((error: unknown) => {
          deps.log.error({ err: error }, 'media stream');
          refuse('The stream could not be started.');
        });
        return;
      }
      handle(event);
    },
    closed() {
      closed = true;
      if (malformed) deps.log.warn({ provider: provider.name, malformed }, 'media stream had malformed messages');
      void binding?.then(hangUp);
    },
  };
}

const ALREADY_STREAMED = 'The call is over or already has its stream.';

/**
 * The call a stream's `start` names, once the provider's signature and our token agree; otherwise
 * why it is refused. Nothing about the call changes here.
 */
async function verifiedCall(
  deps: Deps,
  providerName: string,
  wire: MediaStreamWire,
  upgrade: StreamUpgrade,
  start: Extract<MediaStreamEvent, { type: 'start' }>,
): Promise<{ ctx: TenantCtx; call: calls.CallRow } | string> {
  // One answer for every failure before the signature holds: a stranger learns nothing about our calls.
  const unverified = 'The stream is not signed for a live call.';
  const found = await calls.findCallByProviderId(deps, providerName, start.providerCallId);
  if (!found || found.id !== start.parameters.callId) return unverified;
  const ctx = tenantCtx(deps, found.tenant_id);
  const expected = Buffer.from(calls.mediaStreamToken(deps.serverKeys, found.tenant_id, found.id));
  const given = Buffer.from(start.parameters.token ?? '');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return unverified;
  const connection = await integrations.connectionTo(ctx, telephonyProvider(providerName));
  if (!connection || !wire.verifyUpgrade(calls.mediaStreamUrl(ctx, providerName), upgrade.headers, connection.credentials))
    return unverified;
  // Over, or a stream already has it: a replayed or second stream.
  if (found.status === 'ENDED' || found.conversation_started_at) return ALREADY_STREAMED;
  return { ctx, call: found };
}
