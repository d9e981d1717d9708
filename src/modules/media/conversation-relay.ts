/**
 * A provider's conversation relay (Twilio's ConversationRelay), from its upgrade to its end: the
 * provider listens and speaks, and the call's text travels over the socket. The relay proves whose
 * call it carries exactly as a media stream does (service.ts): the provider's signature on the
 * upgrade over the relay URL, checked once `setup` names the call; our token in its parameters; a
 * call still live whose conversation no stream or relay has claimed. Then the agent converses on
 * it (relay-call.ts), every turn recorded.
 */
import type { Deps, TenantCtx } from '../../platform/context.ts';
import { telephonyProvider } from '../../providers/registry.ts';
import type { ConversationRelayEvent } from '../../providers/types.ts';
import * as agents from '../agents/service.ts';
import * as calls from '../calls/service.ts';
import { conversationOfCall, endCallConversation, usageOf } from '../conversation/service.ts';
import { startRelayCall, type RelayCall } from './relay-call.ts';
import {
  ALREADY_STREAMED,
  DONE,
  MALFORMED_LIMIT,
  REFUSED,
  verifiedCall,
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
  let bound: { ctx: TenantCtx; callId: string } | undefined;
  let binding: Promise<void> | undefined;
  let malformed = 0;
  let closed = false;
  const pending: ConversationRelayEvent[] = [];

  const refuse = (reason: string) => {
    deps.log.warn({ provider: provider.name, reason }, 'conversation relay refused');
    closed = true;
    socket.close(REFUSED, reason);
  };

  function handle(event: ConversationRelayEvent): void {
    if (event.type === 'error')
      return void deps.log.warn({ callId: bound?.callId, description: event.description }, 'conversation relay error');
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

  async function bind(setup: Extract<ConversationRelayEvent, { type: 'setup' }>): Promise<void> {
    const signedUrl = (ctx: TenantCtx) => calls.conversationRelayUrl(ctx, provider.name);
    const verified = await verifiedCall(deps, provider.name, wire, signedUrl, upgrade, setup);
    if (closed) return;
    if (typeof verified === 'string') return refuse(verified);
    const { ctx } = verified;
    const agent = verified.call.agent_id ? await agents.requireAgent(ctx, verified.call.agent_id).catch(() => undefined) : undefined;
    if (!agent) return refuse('The call has no agent to converse.');
    // Claimed last: a relay refused above leaves the call as it was.
    const call = await calls.claimStreamedConversation(ctx, verified.call.id);
    if (!call) return refuse(ALREADY_STREAMED);
    const conversation = await conversationOfCall(deps, ctx, call, agent);
    if (!conversation) return refuse('The call has no agent to converse.');
    const { session, model } = conversation;
    relayCall = startRelayCall({
      session,
      line: { send: (token, last) => socket.send(wire.text(token, last)) },
      clock: deps.clock,
      record: (turns, spoken) => calls.appendTurns(ctx, call.id, turns, { ...usageOf(session, model), ...spoken }),
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
    bound = { ctx, callId: call.id };
    for (const event of pending.splice(0)) handle(event);
  }

  /** The line is gone: the conversation stops, and the calls module ends the call if its provider will not (an incoming call). */
  let stopping: Promise<void> | undefined;
  function hangUp(): Promise<void> {
    const logged = (error: unknown) => deps.log.warn({ err: error }, 'conversation relay end');
    stopping ??= (relayCall?.stop() ?? Promise.resolve())
      .catch(logged)
      .then(() => bound && calls.streamEnded(bound.ctx, bound.callId))
      .catch(logged);
    return stopping;
  }

  return {
    message(data) {
      if (closed) return;
      let event: ConversationRelayEvent;
      try {
        event = wire.read(data);
      } catch {
        // Counted and dropped: one bad message does not end a call, a stream of them is not the provider.
        if (++malformed > MALFORMED_LIMIT) refuse('Too many malformed messages.');
        return;
      }
      if (event.type === 'setup') {
        if (binding) return;
        binding = bind(event).catch((error: unknown) => {
          deps.log.error({ err: error }, 'conversation relay');
          refuse('The relay could not be started.');
        });
        return;
      }
      handle(event);
    },
    closed() {
      closed = true;
      if (malformed) deps.log.warn({ provider: provider.name, malformed }, 'conversation relay had malformed messages');
      void binding?.then(hangUp);
    },
  };
}
