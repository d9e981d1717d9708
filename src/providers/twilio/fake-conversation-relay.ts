/**
 * Twilio's side of a ConversationRelay session, for tests: connects as Twilio does (the upgrade
 * signed with `X-Twilio-Signature` over the relay URL from the call's TwiML; `setup` with the call
 * sid and the TwiML's parameters as `customParameters`), sends what Twilio's recogniser would
 * (`prompt`, partial then final, as with `partialPrompts`), `interrupt` with the words spoken until
 * the caller cut in, `dtmf` and `error`, and records what comes back: `text` tokens and `end`.
 * When the caller hangs up, Twilio closes the socket.
 *
 * The signature is computed independently of the provider's code (fake-media-stream.ts), so tests
 * check one against the other; the socket is opened as the media fakes open theirs (../fake-media-client.ts).
 */
import { randomBytes } from 'node:crypto';
import { openProviderSocket } from '../fake-media-client.ts';
import { parametersOf, signLikeTwilio, unescapeXml } from './fake-media-stream.ts';

export interface TwimlRelay {
  url: string;
  /** The `<ConversationRelay>` attributes other than `url`, as Twilio reads them. */
  attributes: Record<string, string>;
  parameters: Record<string, string>;
}

/** The `<ConversationRelay>` of a call's TwiML: where Twilio connects, how it speaks and listens, and the parameters it passes on. */
export function relayOf(twiml: string): TwimlRelay {
  const element = /<ConversationRelay ([^>]*)>/.exec(twiml)?.[1];
  if (element === undefined) throw new Error(`No <ConversationRelay> in ${twiml}`);
  const { url, ...attributes } = Object.fromEntries(
    [...element.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!, unescapeXml(m[2]!)]),
  ) as Record<string, string>;
  if (url === undefined) throw new Error(`<ConversationRelay> without a url in ${twiml}`);
  return { url, attributes, parameters: parametersOf(twiml) };
}

/** What we send Twilio. */
export type RelayMessage = { type: 'text'; token: string; last: boolean } | { type: 'end'; handoffData?: string } | { type: string };

export interface FakeConversationRelay {
  sessionId: string;
  /** Every message we received, in order. */
  received: RelayMessage[];
  /** The text of each reply Twilio was sent, closed by `last` (the one still open last, if any). */
  replies(): string[];
  /** The caller says `text`: a partial prompt with its first word, then the whole utterance (`last`). */
  prompt(text: string): void;
  /** The caller spoke over the agent after `heard` of its reply had been spoken. */
  interrupt(heard: string, durationMs?: number): void;
  sendDtmf(digit: string): void;
  sendError(description: string): void;
  /** Sends a raw text message (malformed messages in tests). */
  sendRaw(message: string): void;
  /** The caller hung up: Twilio closes the socket. */
  hangUp(): void;
  /** Resolves when the socket closes, with its close code and reason. */
  closed: Promise<{ code: number; reason: string }>;
}

export interface FakeConversationRelayOptions {
  /** Where to connect (the test server's address); the signature is over `relay.url`. */
  connectTo: string;
  relay: TwimlRelay;
  accountSid: string;
  authToken: string;
  callSid: string;
  /** Overrides the signature (unsigned: null). */
  signature?: string | null;
  /** Overrides the custom parameters sent in `setup`. */
  parameters?: Record<string, string>;
}

/** Opens the session; rejects when the upgrade is refused (with the HTTP status in the message). */
export async function openFakeConversationRelay(options: FakeConversationRelayOptions): Promise<FakeConversationRelay> {
  const signature = options.signature === undefined ? signLikeTwilio(options.authToken, options.relay.url) : options.signature;
  const { socket, closed } = await openProviderSocket(options.connectTo, signature === null ? {} : { 'X-Twilio-Signature': signature });
  const sessionId = `VX${randomBytes(16).toString('hex')}`;
  const received: RelayMessage[] = [];
  const lang = options.relay.attributes.language ?? 'en-US';
  const send = (message: object) => socket.send(JSON.stringify(message));
  socket.on('message', (data) => received.push(JSON.parse(data.toString()) as RelayMessage));

  send({
    type: 'setup',
    sessionId,
    accountSid: options.accountSid,
    parentCallSid: '',
    callSid: options.callSid,
    from: '+18005550100',
    to: '+18005550101',
    forwardedFrom: '',
    callType: 'PSTN',
    callerName: '',
    direction: 'outbound-api',
    callStatus: 'IN-PROGRESS',
    customParameters: options.parameters ?? options.relay.parameters,
  });

  return {
    sessionId,
    received,
    replies() {
      const replies: string[] = [];
      let open: string | undefined;
      for (const message of received) {
        if (message.type !== 'text') continue;
        const { token, last } = message as { token: string; last: boolean };
        open = (open ?? '') + token;
        if (last) {
          replies.push(open);
          open = undefined;
        }
      }
      return open === undefined ? replies : [...replies, open];
    },
    prompt(text) {
      send({ type: 'prompt', voicePrompt: text.split(' ')[0], lang, last: false });
      send({ type: 'prompt', voicePrompt: text, lang, last: true });
    },
    interrupt: (heard, durationMs = 1500) =>
      send({ type: 'interrupt', utteranceUntilInterrupt: heard, durationUntilInterruptMs: durationMs }),
    sendDtmf: (digit) => send({ type: 'dtmf', digit }),
    sendError: (description) => send({ type: 'error', description }),
    sendRaw: (message) => socket.send(message),
    hangUp: () => socket.close(1000),
    closed,
  };
}
