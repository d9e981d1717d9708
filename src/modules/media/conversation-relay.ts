/**
 * A provider's conversation relay (Twilio's ConversationRelay), from its upgrade to its end: the
 * provider listens and speaks, and the call's text travels over the socket. The relay proves whose
 * call it carries exactly as a media stream does (service.ts): the provider's signature on the
 * upgrade over the relay URL, checked once `setup` names the call; our token in its parameters; a
 * call still live whose conversation no stream or relay has claimed. Then the agent converses on
 * it (relay-call.ts), every turn recorded.
 */
import type { Deps } from '../../platform/context.ts';
import { telephonyProvider } from '../../providers/registry.ts';
import type { ConversationRelayEvent } from '../../providers/types.ts';
import * as calls from '../calls/service.ts';
import { endCallConversation, usageOf } from '../conversation/service.ts';
import { startRelayCall, type RelayCall } from './relay-call.ts';
import {
  acceptCallSocket,
  claimedConversation,
  DONE,
  type BoundSocket,
  type MediaSocket,
  type MediaStreamHandler,
  type StreamUpgrade,
} from './service.ts';

/** Messages that arrive before the relay is bound wait for it, up to this many. */
const EARLY_MESSAGES = 100;

/** Handles one conversation relay, from its first message to its close. */
export function acceptConversationRelay(deps: Deps, providerName: string, upgrade: StreamUpgrade, socket: MediaSocket): MediaStreamHandler {
  const provider = telephonyProvider(providerName);
  const wire = provider.telephony.conversationRelay!;
  let relayCall: RelayCall | undefined;
  let callId: string | undefined;
  const pending: ConversationRelayEvent[] = [];

  function handle(event: ConversationRelayEvent): void {
    if (event.type === 'error') return void deps.log.warn({ callId, description: event.description }, 'conversation relay error');
    if (!relayCall) {
      if (pending.length < EARLY_MESSAGES) pending.push(event);
      return;
    }
    switch (event.type) {
      case 'prompt':
        return relayCall.prompt(event.text, event.last);
      case 'interrupt':
        return relayCall.interrupted(event.heard);
      case 'dtmf':
        return relayCall.dtmf(event.digit);
      default:
        return;
    }
  }

  async function bind(
    setup: Extract<ConversationRelayEvent, { type: 'setup' }>,
    closed: () => boolean,
  ): Promise<BoundSocket | string | undefined> {
    // Twilio listens and speaks: nothing of the agent's own speech is needed.
    const claimed = await claimedConversation(
      deps,
      provider.name,
      wire,
      calls.conversationRelayUrl,
      upgrade,
      setup,
      closed,
      async () => true,
    );
    if (!claimed || typeof claimed === 'string') return claimed;
    const { ctx, call, agent, conversation } = claimed;
    const { session, model } = conversation;
    callId = call.id;
    relayCall = startRelayCall({
      session,
      line: { send: (token, last) => socket.send(wire.text(token, last)) },
      clock: deps.clock,
      // Twilio listens and speaks on this line, and bills it: no provider of ours ran.
      record: (turns, { sttSeconds, ttsCharacters }) =>
        calls.appendTurns(
          ctx,
          call.id,
          turns,
          calls.withSpeech(usageOf(session, model), { sttSeconds, ttsCharacters, sttProvider: null, ttsProvider: null }),
        ),
      hangUp: async (reason) => {
        // The calls module notes why and hangs up, or for a transfer gives the call new TwiML that
        // dials the target (which ends this session). Otherwise `end` closes the session for
        // Twilio too, also when the hang-up failed: nothing follows it in the call's TwiML.
        const handedOver = await endCallConversation(ctx, call, reason, agent).then(
          () => reason === 'transferred' && agent.transferNumber !== null,
          (error: unknown) => {
            deps.log.warn({ callId: call.id, err: error }, 'conversation relay end');
            return false;
          },
        );
        if (!handedOver) socket.send(wire.end(JSON.stringify({ endReason: reason })));
        socket.close(DONE, 'The call is over.');
      },
      silenceTimeoutMs: deps.config.voice.silenceSeconds * 1000,
      maxDurationMs: deps.config.dialer.maxCallSeconds * 1000,
      charactersPerSecond: deps.config.voice.relayCharactersPerSecond,
      onError: (error) => deps.log.warn({ callId: call.id, err: error }, 'conversation relay'),
    });
    for (const event of pending.splice(0)) handle(event);
    return { ctx, callId: call.id, stop: () => relayCall!.stop() };
  }

  return acceptCallSocket(deps, socket, { kind: 'conversation relay', read: wire.read, opening: 'setup', bind, handle });
}
