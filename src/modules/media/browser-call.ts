/**
 * "Call me in the browser": the dashboard's microphone on a WebSocket, through the voice pipeline
 * of phone calls (voice-call.ts), recorded as a test chat (the conversation module's: same session,
 * billed as test cost, its speech too). The browser plays the agent's audio and echoes each mark
 * once the audio before it was played, as Twilio does, so what the caller heard and barge-in work
 * as on a phone line. The protocol is in schemas.ts; who may call was settled at the upgrade (a
 * dashboard session). Nothing is created until the agent is found able to take the call.
 */
import { Value } from '@sinclair/typebox/value';
import type { Deps, TenantCtx } from '../../platform/context.ts';
import { AppError, appError, errorBody } from '../../platform/errors.ts';
import { bytesFor } from '../../platform/audio.ts';
import { ProviderError } from '../../providers/errors.ts';
import * as agents from '../agents/service.ts';
import * as identity from '../identity/service.ts';
import { openVoiceTestChat, type VoiceTestChat } from '../conversation/service.ts';
import { BROWSER_AUDIO, BrowserCallCommand, type BrowserCallEvent, type BrowserCallQuery } from './schemas.ts';
import { turnChoiceOf } from './turn-detection/registry.ts';
import { startVoiceCall, type AudioLine, type VoiceCall } from './voice-call.ts';

/** The WebSocket as this module uses it. */
export interface BrowserSocket {
  send(data: string | Buffer): void;
  close(code: number, reason: string): void;
}

export interface BrowserCallHandler {
  message(data: Buffer, isBinary: boolean): void;
  closed(): void;
}

/** Close codes: 1008 (policy violation) for a call refused, 1011 for a fault of ours, 1000 once the call is over. */
const REFUSED = 1008;
const FAULT = 1011;
const DONE = 1000;
/** The microphone's audio before the call is ready is kept for the recogniser, up to this much. */
const EARLY_AUDIO_BYTES = bytesFor(5000, BROWSER_AUDIO);
/** More malformed messages than this and the socket is not our dashboard: it is closed. */
const MALFORMED_LIMIT = 100;

/** Handles one browser call, from the socket's opening to its close. */
export function acceptBrowserCall(
  deps: Deps,
  ctx: TenantCtx,
  query: BrowserCallQuery,
  socket: BrowserSocket,
  requestId: string,
): BrowserCallHandler {
  let voiceCall: VoiceCall | undefined;
  let chat: VoiceTestChat | undefined;
  let closed = false;
  let malformed = 0;
  const early: Buffer[] = [];
  let earlyBytes = 0;
  const send = (event: BrowserCallEvent) => !closed && socket.send(JSON.stringify(event));

  function close(code: number, reason: string): void {
    if (closed) return;
    closed = true;
    socket.close(code, reason);
  }

  function refuse(error: unknown): void {
    const known = error instanceof AppError ? error : appError('INTERNAL_ERROR');
    if (!(error instanceof AppError)) deps.log.error({ err: error }, 'browser call');
    send({ type: 'error', ...errorBody(known, requestId) });
    close(error instanceof AppError ? REFUSED : FAULT, known.code);
  }

  async function begin(): Promise<void> {
    const agent = await agents.requireAgent(ctx, query.agentId);
    const balance = await identity.walletBalance(ctx);
    if (!balance.amount.greaterThan(0))
      throw appError('WALLET_EMPTY.browserCall', { balance: balance.amount.toFixed(4), currency: balance.currency });
    const speech = await agents.speechOf(deps, ctx, agent).catch((error: unknown) => {
      if (error instanceof ProviderError) throw appError('PROVIDER_ERROR.browserCall', { reason: error.message });
      throw error;
    });
    if (speech.stt?.kind !== 'live') throw appError('BROWSER_CALL_NEEDS_LIVE_STT', { agent: agent.name });
    // The tester may have hung up while the agent was looked at: then nothing is created.
    if (closed) return;
    const { agentId: _agentId, ...contact } = query;
    chat = await openVoiceTestChat(deps, ctx, agent, Object.keys(contact).length ? contact : undefined);
    const voiceChat = chat;
    send({ type: 'started', chatId: voiceChat.chat().id, format: BROWSER_AUDIO });
    voiceCall = startVoiceCall({
      session: voiceChat.session,
      stt: speech.stt,
      tts: speech.tts,
      voice: speech.voice,
      language: agent.language,
      ...(speech.sttModel ? { sttModel: speech.sttModel } : {}),
      ...(speech.ttsModel ? { ttsModel: speech.ttsModel } : {}),
      turns: turnChoiceOf(deps.config, agent),
      line: browserLine(socket, send, () => closed),
      clock: deps.clock,
      record: async (turns, spoken) => {
        const recorded = await voiceChat.record(turns, {
          ...spoken,
          sttProvider: spoken.sttSeconds > 0 ? speech.sttProvider : null,
          ttsProvider: spoken.ttsCharacters > 0 ? speech.ttsProvider : null,
        });
        if (recorded) send({ type: 'chat', chat: voiceChat.chat() });
        return recorded;
      },
      hangUp: async (reason) => {
        await voiceChat.end(reason);
        send({ type: 'chat', chat: voiceChat.chat() });
        send({ type: 'ended', reason: voiceChat.chat().endReason ?? reason });
        close(DONE, 'The call is over.');
      },
      heard: (text) => send({ type: 'heard', text }),
      silenceTimeoutMs: deps.config.voice.silenceSeconds * 1000,
      maxDurationMs: deps.config.dialer.maxCallSeconds * 1000,
      onError: (error) => deps.log.warn({ chatId: voiceChat.chat().id, err: error }, 'browser call'),
    });
    for (const audio of early.splice(0)) voiceCall.audio(audio);
  }

  /** The tester hung up (or the socket went): the last turns are recorded, then the chat ends. */
  let stopping: Promise<void> | undefined;
  function hangUp(): Promise<void> {
    stopping ??= (async () => {
      await voiceCall?.stop();
      if (!chat) return;
      await chat.end('contact_hung_up');
      send({ type: 'chat', chat: chat.chat() });
      send({ type: 'ended', reason: chat.chat().endReason ?? 'contact_hung_up' });
      close(DONE, 'The call is over.');
    })().catch((error: unknown) => deps.log.warn({ err: error }, 'browser call end'));
    return stopping;
  }

  function command(data: Buffer): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(data.toString('utf8'));
    } catch {
      parsed = undefined;
    }
    if (!Value.Check(BrowserCallCommand, parsed)) {
      // Counted and dropped: one bad message does not end a call, a stream of them is not our dashboard.
      if (++malformed > MALFORMED_LIMIT)
        refuse(appError('VALIDATION_FAILED', { subject: 'The call', problem: 'sent too many malformed messages' }));
      return;
    }
    if (parsed.type === 'mark') voiceCall?.marked(parsed.name);
    else void hangUp();
  }

  const begun = begin().catch(refuse);

  return {
    message(data, isBinary) {
      if (closed) return;
      if (!isBinary) return command(data);
      if (voiceCall) return voiceCall.audio(data);
      if (earlyBytes < EARLY_AUDIO_BYTES) {
        early.push(data);
        earlyBytes += data.length;
      }
    },
    closed() {
      closed = true;
      void begun.then(hangUp);
    },
  };
}

/** The browser as the pipeline's far end: audio as binary messages, marks and clears as JSON. */
function browserLine(socket: BrowserSocket, send: (event: BrowserCallEvent) => void, isClosed: () => boolean): AudioLine {
  return {
    format: BROWSER_AUDIO,
    play: (audio) => !isClosed() && socket.send(audio),
    mark: (name) => send({ type: 'mark', name }),
    clear: () => send({ type: 'clear' }),
  };
}
