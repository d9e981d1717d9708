/**
 * The browser call's protocol (docs/voice.md § Call me in the browser): a WebSocket on
 * `GET /api/v1/test-chats/voice`. Audio travels as binary messages both ways, PCM16 little-endian
 * mono at 16 kHz; everything else as JSON text messages.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { ErrorBody } from '../../platform/schemas.ts';
import { Uuid } from '../../platform/schemas.ts';
import type { AudioFormat } from '../../providers/types.ts';
import type { EndReason } from '../calls/service.ts';
import type { TestChat } from '../conversation/schemas.ts';

/** The subprotocol a browser offers (with `bearer.<session token>`, as browsers cannot set headers on a WebSocket). */
export const BROWSER_CALL_PROTOCOL = 'callforge.browser-call.v1';
export type BrowserCallProtocol = typeof BROWSER_CALL_PROTOCOL;

/** What the line carries both ways: what speech recognisers read natively, and a browser resamples to cheaply. */
export const BROWSER_AUDIO = { encoding: 'pcm16', sampleRate: 16_000 } as const satisfies AudioFormat;
export type BrowserAudio = typeof BROWSER_AUDIO;

export const BrowserCallQuery = Type.Object(
  {
    agentId: Uuid,
    name: Type.Optional(Type.String({ maxLength: 200, description: "Who the agent believes it talks to: fills the prompt's {{name}}." })),
    phoneNumber: Type.Optional(Type.String({ maxLength: 40 })),
    email: Type.Optional(Type.String({ maxLength: 320 })),
  },
  { additionalProperties: false },
);
export type BrowserCallQuery = Static<typeof BrowserCallQuery>;

/** Browser → service, as JSON text. */
export const BrowserCallCommand = Type.Union([
  Type.Object(
    { type: Type.Literal('mark'), name: Type.String({ minLength: 1, maxLength: 64 }) },
    { additionalProperties: false, description: 'Everything sent before the mark of this name was played.' },
  ),
  Type.Object({ type: Type.Literal('hangup') }, { additionalProperties: false, description: 'The tester hangs up.' }),
]);
export type BrowserCallCommand = Static<typeof BrowserCallCommand>;

/** Service → browser, as JSON text (the agent's audio itself comes as binary messages). */
export type BrowserCallEvent =
  /** The call is on: the test chat it is recorded as, and the audio format both ways. */
  | { type: 'started'; chatId: string; format: BrowserAudio }
  /** Echo this name once the audio before it was played (the transcript keeps what the caller heard). */
  | { type: 'mark'; name: string }
  /** The caller spoke over the agent: drop the audio queued and not yet played (and echo its marks). */
  | { type: 'clear' }
  /** An utterance of the caller as the recogniser settled it, before the agent answers it. */
  | { type: 'heard'; text: string }
  /** The chat as recorded after each exchange: transcript, usage and test cost so far. */
  | { type: 'chat'; chat: TestChat }
  /** The call is over (the socket then closes with 1000). */
  | { type: 'ended'; reason: EndReason }
  /** Why the call could not start or went on no longer (the socket then closes with 1008, or 1011 for a fault of ours). */
  | ({ type: 'error' } & ErrorBody);
