/**
 * The channels callforge reaches the outside through, one interface each. A provider (one folder
 * under src/providers) implements the channels it serves and is listed once in registry.ts; the
 * modules find providers only through the registry, so adding one touches nothing else.
 *
 * Every provider reports failure with `ProviderError` (errors.ts), whose `retryable` is the one
 * normalised answer to "may the same request succeed later?".
 */
import type { TObject, TSchema } from '@sinclair/typebox';
import type { AudioFormat } from '../platform/audio.ts';
import type { ProviderError } from './errors.ts';

// ---------------------------------------------------------------------------------------------
// What a provider is

/** The credentials a provider needs from a tenant, stored by the integrations module. */
export interface IntegrationDefinition {
  /** The integration's name in `/api/v1/integrations/{kind}`. */
  kind: string;
  /** The fields a tenant sends when connecting it. */
  body: TObject;
  /** Which of the fields are secrets: sealed at rest, never returned. */
  secrets: readonly string[];
  /** One line for the API docs. */
  summary: string;
}

/** What a tenant's connection to a provider is built from. */
export interface Connection {
  /** The tenant's credentials (settings and opened secrets); empty for providers that need none. */
  credentials: Record<string, string>;
  /** The service's settings by environment variable name, the provider's own among them (`TWILIO_API_URL`). */
  settings: Readonly<Record<string, string>>;
  /** Our public origin, for the callback URLs a provider is given. */
  publicUrl: string;
  /** Per-request timeout for the provider's API. */
  timeoutMs: number;
}

/** An HTTP request a provider sent us (a status callback), as received, for it to verify and read. */
export interface ProviderWebhook {
  /** The full URL the provider requested, as it signed it. */
  url: string;
  headers: Record<string, string | string[] | undefined>;
  rawBody: string;
  /** When we received it (the service's clock), for providers that bound a signature's age. */
  receivedAt: Date;
}

export interface Provider {
  /** Upper-case name, as stored on numbers, calls and messages and accepted by the API (`TWILIO`). */
  name: string;
  /** How people write its name (`Twilio`). */
  title: string;
  /** Absent for providers that need no credentials (the simulator). */
  integration?: IntegrationDefinition;
  /**
   * The environment variables the provider reads (where its API lives, a version), each a schema with
   * its default and description, validated with the rest of the configuration when a process starts.
   */
  settings?: Record<string, TSchema>;
  telephony?: TelephonyChannel;
  sms?: SmsChannel;
  whatsapp?: WhatsAppChannel;
  llm?: LlmChannel;
  /** Speech-to-speech over the same connection as `llm` (its server's realtime API). */
  realtime?: RealtimeChannel;
  stt?: SttChannel;
  tts?: TtsChannel;
}

// ---------------------------------------------------------------------------------------------
// Voice telephony

/** The final result of one call attempt (the API's `outcome`). */
export type CallOutcome = 'ANSWERED' | 'UNANSWERED' | 'BUSY' | 'FAILED';
export type LiveCallStatus = 'QUEUED' | 'RINGING' | 'IN_PROGRESS';
/**
 * Who answered a call, as answering-machine detection reported it, normalised; the call's own
 * classification adds a call-screening assistant and a phone menu (never a provider's verdict).
 */
export type AnsweredBy = 'human' | 'machine' | 'fax' | 'unknown' | 'call_screening' | 'phone_menu';

export interface DialRequest {
  /** Our call id; the provider echoes it back or we find the call by the provider's id. */
  callId: string;
  from: string;
  to: string;
  /** Seconds the phone rings before the provider gives up (the campaign's `dialTimeout`). */
  dialTimeoutSec: number;
  /** Where the provider posts the call's status changes. */
  statusCallbackUrl: string;
  /** Where the answered call's audio is streamed (`wss://`). */
  mediaStreamUrl: string;
  /** Binds the media stream to this call: the provider hands it back in the stream's parameters; we signed it. */
  mediaStreamToken: string;
  /**
   * Present when the provider itself listens and speaks for the agent (Twilio's ConversationRelay):
   * the call then carries text to `url` instead of streaming audio, bound by the same token.
   */
  conversationRelay?: ConversationRelaySpeech;
  /**
   * Present when the campaign asks who answers (answering-machine detection, reported once the
   * greeting ended, so a voicemail left then comes after the beep): where the provider posts its verdict.
   */
  answeringMachineDetection?: { callbackUrl: string };
}

export interface DialResult {
  providerCallId: string;
}

/** A call's move as a provider reports it, normalised. */
export type CallUpdate =
  | { status: LiveCallStatus }
  | {
      status: 'ENDED';
      outcome: CallOutcome;
      /** Seconds talked, when the provider said. */
      durationSec: number | null;
      /** Why it failed, in the provider's words, when it did. */
      failureReason?: string;
    };

/** One tenant's line to a telephony provider. */
export interface TelephonyConnection {
  /**
   * Asks the provider to place the call. Throws `ProviderError`; one with `retryable: false` and
   * `permanent: true` means the number can never be called (not retried by the campaign).
   */
  dial(request: DialRequest): Promise<DialResult>;
  /** Hangs up a live call; a call already over is not an error. */
  hangup(providerCallId: string): Promise<void>;
  /**
   * Replaces what a live call is doing: `text` is spoken in `language` (BCP-47), then the call hangs
   * up (a voicemail left after the beep). A call already over is not an error. Absent for providers
   * that drive their own calls.
   */
  speakAndHangUp?(providerCallId: string, speech: { text: string; language: string }): Promise<void>;
  /**
   * Connects the live call's caller to `to` (the agent's leg ends). With `whisperUrl` the transfer is
   * warm: once `to` answers, the provider fetches what that person hears before being connected
   * (`callbacks.whisper`'s answer); without, it is cold. A call already over is not an error. Absent
   * for providers that cannot.
   */
  transfer?(providerCallId: string, to: string, whisperUrl?: string): Promise<void>;
  /**
   * Presses keys on the live call, as tones the far end hears (a phone menu): digits, `*`, `#`, and
   * `w` for half a second's pause. A call already over is not an error. Absent for providers that
   * cannot while the call's media stream runs.
   */
  sendDigits?(providerCallId: string, digits: string): Promise<void>;
}

/** A live call as a self-driven provider (the simulator) sees it. */
export interface SelfDrivenCall {
  status: LiveCallStatus;
  direction: 'OUTGOING' | 'INCOMING';
  attempt: number;
  dialTimeout: number;
  /** When its current step ends. */
  deadlineAt: Date;
  answeredAt: Date | null;
  /** The contact at the time of the attempt (the simulator reads its plan in the metadata). */
  contactName: string | null;
  contactMetadata: Record<string, unknown> | null;
  /** Whether the campaign asked who answers: the step that answers then says it (`answeredBy`). */
  detectsAnsweringMachine: boolean;
}

export type SelfDrivenStep =
  | {
      live: true;
      status: 'RINGING' | 'IN_PROGRESS';
      answeredAt: Date | null;
      deadlineAt: Date;
      /** On the step that answers a call whose campaign asked who answers. */
      answeredBy?: AnsweredBy;
    }
  | {
      live: false;
      outcome: CallOutcome;
      endedAt: Date;
      answeredAt: Date | null;
      permanent: boolean;
      failureReason: string | null;
    };

export interface TelephonyChannel {
  connect(connection: Connection): TelephonyConnection;
  /**
   * True when a dial request may ask who answers: the verdict comes through `callbacks.readAnsweredBy`
   * or, for a provider that drives its own calls, on the step that answers.
   */
  answeringMachineDetection?: boolean;
  /**
   * A provider that answers without the network places a call while its attempt is written:
   * `placeAtOnce` gives the call's first state, so no second write follows.
   */
  placeAtOnce?(
    request: DialRequest,
    now: Date,
    settings: Readonly<Record<string, string>>,
  ): { providerCallId: string; status: LiveCallStatus; deadlineAt: Date };
  /** A provider that drives its own calls (no callbacks) moves a live call on when its deadline comes. */
  advance?(call: SelfDrivenCall, now: Date, settings: Readonly<Record<string, string>>): SelfDrivenStep;
  /** Status callbacks (absent for self-driven providers). */
  callbacks?: {
    /** The header that carries the provider's signature, named when a callback is refused. */
    signatureHeader: string;
    /** The provider's call id a callback is about, read before it is verified (to find the tenant); undefined when absent. */
    callIdOf(webhook: ProviderWebhook): string | undefined;
    /** Checks the provider's signature with the tenant's credentials. */
    verify(webhook: ProviderWebhook, credentials: Record<string, string>): boolean;
    /**
     * The callback's update, or `null` for an event that moves nothing; throws `ProviderError`
     * for one that cannot be read, with a sentence saying why. `answeredBefore` tells providers whose final status alone does
     * not say whether anyone answered.
     */
    read(webhook: ProviderWebhook, answeredBefore: boolean): CallUpdate | null;
    /**
     * An answering-machine detection callback's verdict, normalised, and how long detection took
     * (milliseconds, null when not said); throws `ProviderError` for one that cannot be read. Absent
     * for providers without detection callbacks.
     */
    readAnsweredBy?(webhook: ProviderWebhook): { answeredBy: AnsweredBy; detectionMs: number | null };
    /**
     * Calls ringing one of the tenant's numbers: the provider asks what to do with each (its
     * webhook verified with `verify`, as status callbacks are). Absent for providers whose inbound
     * calls are not answered through the media stream.
     */
    incoming?: IncomingCalls;
    /**
     * What the person a call is transferred to hears before being connected (a warm transfer's
     * summary), answering the provider's fetch of the `whisperUrl` it was given (verified with
     * `verify`, as status callbacks are). Absent for providers that cannot say anything there.
     */
    whisper?(text: string, language: string): CallInstructions;
  };
  /** The provider's media stream: a call's audio both ways over a WebSocket it opens to us. */
  mediaStream?: MediaStreamWire;
  /** The provider's conversation relay: it listens and speaks itself, and a call's text travels both ways over a WebSocket. */
  conversationRelay?: ConversationRelayWire;
}

/** A call ringing one of our numbers, as its provider's webhook describes it; a field it lacks is undefined. */
export interface IncomingCallRequest {
  providerCallId: string | undefined;
  /** The caller's number. */
  from: string | undefined;
  /** The number dialled: it says which tenant and agent answer. */
  to: string | undefined;
  /** The provider account the call arrived on (Twilio's `AccountSid`). */
  accountId: string | undefined;
}

/** What a ringing call is told to do, in the provider's own terms (Twilio: TwiML). */
export interface CallInstructions {
  contentType: string;
  body: string;
}

/**
 * The ringing call as recorded, for providers whose answer is a request of their own (Telnyx Call
 * Control) rather than the webhook's reply (TwiML).
 */
export interface RingingCall {
  providerCallId: string;
  /** Our call id. */
  callId: string;
  /** The tenant's connection to the provider. */
  connection: Connection;
  /** Where the provider posts the call's events once answered. */
  statusCallbackUrl: string;
}

export interface IncomingCalls {
  /** Reads the webhook (not yet verified: the dialled number says whose credentials verify it). */
  read(webhook: ProviderWebhook): IncomingCallRequest;
  /**
   * True for a webhook about a call already past ringing, handled as a status callback: a provider
   * that posts all of a call's events to one URL (Telnyx) sends them here too. Absent: none are.
   */
  isStatusEvent?(webhook: ProviderWebhook): boolean;
  /** The provider account the tenant's credentials belong to, compared with the webhook's. */
  accountIdOf(credentials: Record<string, string>): string | undefined;
  /**
   * Answers the call and streams its audio to us, with our call id and the stream's signed token.
   * Asked again for the same call (a retried webhook), it answers the same way and changes nothing.
   */
  stream(mediaStreamUrl: string, callId: string, token: string, call: RingingCall): CallInstructions | Promise<CallInstructions>;
  /**
   * Turns away a call no agent can take. Where the reply can say something (Twilio) the caller hears
   * `text` in `language` (BCP-47), then the call hangs up; elsewhere it is rejected unanswered (Telnyx: busy).
   */
  turnAway(text: string, language: string, call: RingingCall): CallInstructions | Promise<CallInstructions>;
  /** Answers the call with the provider's own speech (its conversation relay), carrying our call id and token. */
  conversationRelay?(speech: ConversationRelaySpeech, callId: string, token: string): CallInstructions;
}

/** A media stream message from the provider, normalised; audio already decoded from its envelope. */
export type MediaStreamEvent =
  | {
      type: 'start';
      /** The provider's id for the stream, echoed in every message we send. */
      streamId: string;
      providerCallId: string;
      /** The custom parameters we gave when the call was placed (our call id and token). */
      parameters: Record<string, string>;
      format: AudioFormat;
    }
  | { type: 'audio'; audio: Buffer }
  | { type: 'mark'; name: string }
  | { type: 'dtmf'; digit: string }
  | { type: 'stop' }
  /** The provider reports a problem with the stream (Telnyx's `error` frame), in its words; the stream goes on. */
  | { type: 'error'; message: string }
  /** A message that needs no action (Twilio's `connected`). */
  | { type: 'other' };

export interface MediaStreamWire {
  /**
   * The header every upgrade must carry (refused before the socket opens without it): the provider's
   * signature (Twilio), or our own token where the provider signs nothing (Telnyx).
   */
  signatureHeader: string;
  /**
   * Checks the upgrade's signature over the stream URL we gave, with the tenant's credentials; true
   * for a provider that signs nothing (the stream then rests on our token alone, in `upgradeParameters`).
   */
  verifyUpgrade(url: string, headers: Record<string, string | string[] | undefined>, credentials: Record<string, string>): boolean;
  /** Our parameters the provider carries on the upgrade rather than in `start` (Telnyx: the stream's token). */
  upgradeParameters?(headers: Record<string, string | string[] | undefined>): Record<string, string>;
  /** One text message, normalised; throws `ProviderError` for one that is not the provider's format. */
  read(message: string): MediaStreamEvent;
  /** How much audio one message may carry, in bytes, for providers with bounds (Telnyx: 20 ms to 30 s). */
  frameBytes?: { min: number; max: number };
  /** The messages we send: agent audio, a mark reported back once played, and a clear of what is queued. */
  audio(streamId: string, audio: Buffer): string;
  mark(streamId: string, name: string): string;
  clear(streamId: string): string;
}

/**
 * How a provider that listens and speaks itself (Twilio's ConversationRelay) voices an agent, in
 * our providers' names (DEEPGRAM, ELEVENLABS); the provider maps them to its own.
 */
export interface ConversationRelaySpeech {
  /** Where the provider sends the conversation's text (`wss://`). */
  url: string;
  /** BCP-47, for listening and speaking. */
  language: string;
  /** Who speaks, in which of its voices (null: the provider's default for the language). */
  tts: { provider: string; voice: string | null };
  /** Who listens, with which of its models (absent: the provider's default). */
  stt: { provider: string; model?: string };
}

/** A conversation relay message from the provider, normalised. */
export type ConversationRelayEvent =
  /** The session starts: the call, and the parameters we gave (our call id and token). */
  | { type: 'setup'; providerCallId: string; parameters: Record<string, string> }
  /** The caller's words; `last` once the utterance is complete (earlier ones only say they are talking). */
  | { type: 'prompt'; text: string; last: boolean }
  /** The caller spoke over the agent: the provider stopped speaking, after `heard` of the reply. */
  | { type: 'interrupt'; heard: string }
  | { type: 'dtmf'; digit: string }
  /** The provider reports a problem (a message of ours it could not take, a failure of its own). */
  | { type: 'error'; description: string }
  | { type: 'other' };

export interface ConversationRelayWire {
  /** The header that carries the provider's signature of the WebSocket upgrade. */
  signatureHeader: string;
  /** Checks the upgrade's signature over the relay URL we gave, with the tenant's credentials. */
  verifyUpgrade(url: string, headers: Record<string, string | string[] | undefined>, credentials: Record<string, string>): boolean;
  /** One text message, normalised; throws `ProviderError` for one that is not the provider's format. */
  read(message: string): ConversationRelayEvent;
  /** Text for the provider to speak, in order; `last` closes the reply. */
  text(token: string, last: boolean): string;
  /** Ends the session (the provider then leaves the call to whatever follows); `handoff` travels with it. */
  end(handoff: string): string;
}

// ---------------------------------------------------------------------------------------------
// SMS

export interface SmsSend {
  /** Our sending number (E.164) or alphanumeric sender id. */
  from: string;
  /** E.164 with '+'. */
  to: string;
  body: string;
  /** India DLT header (sender id) registered for this message; providers that do not do DLT ignore it. */
  dltSenderId?: string | null;
  /** India DLT content-template id; providers that do not do DLT ignore it. */
  dltTemplateId?: string | null;
  /** Where the provider should post this message's delivery statuses, for providers that take one per message. */
  statusCallbackUrl?: string;
}

/** A delivery status as the provider reports it, normalised. */
export interface SmsDeliveryUpdate {
  providerMessageId: string;
  status: 'SENT' | 'DELIVERED' | 'READ' | 'FAILED';
  /** Set when FAILED. */
  failureReason: string | null;
}

export interface SmsConnection {
  /** Resolves once the provider accepted the message (`status` is the provider's own word for that). */
  send(message: SmsSend): Promise<{ providerMessageId: string; status: string }>;
}

export interface SmsChannel {
  connect(connection: Connection): SmsConnection;
  /** The provider sends only registered templates (MSG91: DLT), so an agent cannot send it free text. */
  templatesOnly?: boolean;
  /** Delivery status callbacks (absent for providers that send none). */
  callbacks?: {
    /** The header that carries the provider's signature, named when a callback is refused. */
    signatureHeader: string;
    /** What the signature is made with, as the account holder knows it (`Auth Token`). */
    signedWith: string;
    verify(webhook: ProviderWebhook, credentials: Record<string, string>): boolean;
    /** The update, or null for a status that records nothing (queued, sending); absent for a provider that posts no statuses. */
    read?(webhook: ProviderWebhook): SmsDeliveryUpdate | null;
    /** Messages people send to the tenant's numbers, posted to `/messages/{provider}-incoming?tenant=` (absent when not received). */
    incoming?: {
      /** The message, or null when the post carries none. */
      read(webhook: ProviderWebhook): SmsIncomingMessage | null;
      /** The provider account the credentials belong to, which the message must name; absent when the verification already binds the account (a key of its own). */
      accountIdOf?(credentials: Record<string, string>): string;
      /** What the provider expects back when nothing is to be replied. */
      noReply: { contentType: string; body: string };
      /** The provider answers an opt-out word with its own confirmation (so callforge sends none). */
      confirmsOptOuts?: boolean;
    };
  };
}

/** An SMS a person sent to one of the tenant's numbers. */
export interface SmsIncomingMessage {
  providerMessageId: string;
  accountId: string;
  /** E.164. */
  from: string;
  to: string;
  text: string;
}

// ---------------------------------------------------------------------------------------------
// WhatsApp

export interface WhatsAppTemplateSend {
  /** The sending number's Graph id (not the number itself). */
  phoneNumberId: string;
  /** E.164 with '+'. */
  to: string;
  templateName: string;
  /** The template's language, e.g. `en_US`. */
  languageCode: string;
  /** Values for the body's `{{1}}`, `{{2}}`, … in order. */
  bodyParameters: string[];
  /** Echoed back in this message's status webhooks (at most 512 characters). */
  callbackData?: string;
}

export interface WhatsAppSenderNumber {
  /** The phone number's id (what `sendTemplate` takes as `phoneNumberId`). */
  id: string;
  displayPhoneNumber: string;
  verifiedName: string;
  /** `GREEN`, `YELLOW`, `RED` or `UNKNOWN`. */
  qualityRating: string;
}

export interface WhatsAppConnection {
  sendTemplate(send: WhatsAppTemplateSend): Promise<{ providerMessageId: string }>;
  /** Free text: WhatsApp delivers it only inside the 24 hours after the contact last wrote. */
  sendText(send: { phoneNumberId: string; to: string; body: string; callbackData?: string }): Promise<{ providerMessageId: string }>;
  listPhoneNumbers(businessAccountId: string): Promise<WhatsAppSenderNumber[]>;
}

/** A message's delivery status from a WhatsApp webhook, normalised. */
export interface WhatsAppDeliveryUpdate {
  providerMessageId: string;
  /** What we asked the provider to echo back with the message (`callbackData`), when it did. */
  callbackData: string | null;
  status: 'SENT' | 'DELIVERED' | 'READ' | 'FAILED';
  at: Date;
  /** Set when FAILED, in the provider's words. */
  failureReason: string | null;
}

/** A message a person sent to the business on WhatsApp (its text, or the label of the button they tapped). */
export interface WhatsAppIncomingMessage {
  providerMessageId: string;
  /** The sender's number, E.164. */
  from: string;
  text: string;
  at: Date;
}

export type WhatsAppWebhook =
  | { kind: 'notification'; accountIds: string[]; statuses: WhatsAppDeliveryUpdate[]; messages: WhatsAppIncomingMessage[] }
  | { kind: 'not-json' }
  | { kind: 'not-a-notification' };

export interface WhatsAppChannel {
  connect(connection: Connection): WhatsAppConnection;
  /** Checks a webhook delivery's signature with one tenant's credentials. */
  verify(rawBody: Buffer, signatureHeader: string | undefined, credentials: Record<string, string>): boolean;
  /** Reads a webhook delivery (before it is verified: it names the account whose credentials verify it). */
  read(rawBody: Buffer, receivedAt: Date): WhatsAppWebhook;
}

// ---------------------------------------------------------------------------------------------
// Embeddings and language models (chosen by the service's environment, not per tenant)

/** Turns texts into vectors; every vector is unit length, so cosine similarity is a dot product. */
export interface Embedder {
  /** Names the model, so vectors of different models are never compared. */
  readonly model: string;
  readonly dimensions: number;
  /** `query`: a question being asked now (an embedder may serve it ahead of documents being indexed). */
  embed(texts: string[], use?: 'documents' | 'query'): Promise<Float32Array[]>;
}

export function unitVector(values: ArrayLike<number>): Float32Array {
  const vector = Float32Array.from(values);
  let norm = 0;
  for (const value of vector) norm += value * value;
  norm = Math.sqrt(norm);
  if (norm > 0) for (let i = 0; i < vector.length; i++) vector[i]! /= norm;
  return vector;
}

/** A language model asked for one JSON object that follows a JSON schema. */
export interface StructuredRequest {
  model: string;
  system: string;
  user: string;
  schemaName: string;
  schema: object;
}

export interface StructuredAnswer {
  answer: Record<string, unknown>;
  /** Tokens as the server reported them; null when it did not. */
  usage: { inputTokens: number; outputTokens: number } | null;
}

// ---------------------------------------------------------------------------------------------
// Conversational language model (the conversation engine's turns)

/** A tool the model may ask us to run; `parameters` is a JSON schema of its arguments. */
export interface ChatTool {
  name: string;
  /** What the model reads to decide when to call it. */
  description: string;
  parameters: object;
}

/** A tool call as the model made it, kept so the next request can replay the turn. */
export interface ChatToolCall {
  /** The model's id for the call, echoed by the tool's result. */
  id: string;
  name: string;
  /** Raw JSON text: the model may write invalid JSON, and the caller decides what to do about it. */
  arguments: string;
}

export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string | null; toolCalls?: ChatToolCall[] }
  | { role: 'tool'; toolCallId: string; content: string };

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  tools?: ChatTool[];
  temperature?: number;
  /** A cap on the reply's length, so a runaway answer cannot hold a caller on the line (or the bill). */
  maxTokens?: number;
}

/** Why a reply ended; `other` for a reason a server names that we do not know. */
export type ChatFinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'other';

export type ChatEvent =
  /** Text as it is generated, so speech can start before the reply is complete. */
  | { type: 'text'; delta: string }
  /** Emitted once the call's arguments are complete (the wire sends them in pieces). */
  | ({ type: 'tool_call' } & ChatToolCall)
  | {
      type: 'done';
      finishReason: ChatFinishReason;
      /** The server's own count (what we are billed), or null when it sent none: never an estimate. */
      usage: { inputTokens: number; outputTokens: number } | null;
      /** Milliseconds from the request to the first text or tool call: the latency a caller hears. */
      firstTokenMs?: number;
    };

/**
 * A streaming chat model with tool calls. The stream ends with one `done` event; any failure
 * (including a stream that breaks off before `done`, a timeout or the caller's abort) is thrown as
 * `ProviderError`, so a partial reply is never mistaken for a whole one.
 */
export interface ChatModel {
  stream(request: ChatRequest, options?: { signal?: AbortSignal }): AsyncIterable<ChatEvent>;
  /** One JSON object that follows a JSON schema (analytics reads a transcript with it); a failure is thrown as `ProviderError`. */
  extract(request: StructuredRequest): Promise<StructuredAnswer>;
}

/** Language models: where the model is served and with which key, from the environment or a tenant's integration. */
export interface LlmChannel {
  connect(endpoint: { baseUrl: string; apiKey?: string; timeoutMs: number; fetch?: typeof globalThis.fetch }): ChatModel;
}

// ---------------------------------------------------------------------------------------------
// Speech-to-speech: a realtime model that hears the caller's audio and answers in audio

/** How a speech-to-speech conversation is set up for one call. */
export interface RealtimeSetup {
  model: string;
  voice: string;
  /** The system prompt, its variables filled. */
  instructions: string;
  tools: ChatTool[];
  /** The line's audio, both ways: the channel converts what its server does not take. */
  format: AudioFormat;
  /** `server`: the server detects the caller's turns and answers them; `client`: the caller commits each turn (`commit`). */
  turnDetection: 'server' | 'client';
  /** BCP-47: what the caller's speech is transcribed as (with server turn detection). */
  language: string;
}

/** Tokens one response used, as the server reported them. */
export interface RealtimeUsage {
  inputTextTokens: number;
  inputAudioTokens: number;
  outputTextTokens: number;
  outputAudioTokens: number;
}

/** What a speech-to-speech server reports, normalised. */
export type RealtimeEvent =
  /** The server heard the caller start talking (server turn detection). */
  | { type: 'speech_started' }
  /** The server's transcription of a turn of the caller's (server turn detection); `seconds` of audio it transcribed, when it says. */
  | { type: 'caller_transcript'; text: string; seconds?: number }
  /** Audio of the agent's item `itemId`, in the line's format, never empty. */
  | { type: 'agent_audio'; itemId: string; audio: Buffer }
  /** The whole transcript of the agent's item `itemId`, once its audio is all sent. */
  | { type: 'agent_transcript'; itemId: string; text: string }
  /** The model calls a tool; its result goes back with `toolResult`. */
  | { type: 'tool_call'; id: string; name: string; arguments: string }
  /** A response is over (`status` completed, cancelled, incomplete or failed), with what it used. */
  | { type: 'response_done'; status: string; usage: RealtimeUsage | null }
  /** The server refused an event or failed; `fatal`: the connection is gone. */
  | { type: 'error'; error: ProviderError; fatal: boolean };

/** One call's conversation with a speech-to-speech server. */
export interface RealtimeConversation {
  /** The caller's audio, in the line's format. */
  appendAudio(audio: Buffer): void;
  /** The caller's turn is over (client turn detection): the audio appended since the last is one turn. */
  commit(): void;
  /** Asks for a response; `instructions` for this one only (say the first message). */
  respond(instructions?: string): void;
  /** Stops the response being generated. */
  cancel(): void;
  /** The caller heard only `audioEndMs` of the agent's item: the server forgets the rest. */
  truncate(itemId: string, audioEndMs: number): void;
  /** A tool's result, for the model's next response. */
  toolResult(callId: string, output: string): void;
  close(): void;
}

export interface RealtimeChannel {
  /** Opens the conversation; settles once the server accepted the setup, or fails with ProviderError. */
  connect(
    endpoint: { baseUrl: string; apiKey?: string; timeoutMs: number; publicOnly: boolean },
    setup: RealtimeSetup,
    listener: (event: RealtimeEvent) => void,
  ): Promise<RealtimeConversation>;
}

// ---------------------------------------------------------------------------------------------
// Speech: the media pipeline's ears (speech-to-text) and voice (text-to-speech)

// Raw mono audio is platform/audio.ts's, which converts it; the channels name it from here too.
export type { AudioFormat };

/** What a live recogniser reports while the caller talks. */
export type RecognitionEvent =
  /**
   * The caller started making sound. `confirmed`: a trained voice-activity detector heard enough
   * voice that it is speech, not a cough or the line's noise, so the agent stops at once (barge-in);
   * otherwise the pipeline waits for words. `false`: the detector heard the first of a voice it
   * has not yet confirmed: it stops nothing, but a turn whose end is still being decided waits.
   */
  | { type: 'speech_started'; confirmed?: boolean }
  /** Words of the current utterance; `final` ones will not change, interim ones may. */
  | { type: 'transcript'; text: string; final: boolean }
  /**
   * The caller paused: the final words since the previous end are one utterance, and turn
   * detection decides whether their turn is over. `afterSilenceMs`: how long the caller had been
   * silent when the recogniser said so (its pause), when it knows.
   */
  | { type: 'utterance_end'; afterSilenceMs?: number }
  /**
   * The caller has now been silent `ms` since their last utterance, by the audio the recogniser has
   * heard: a recogniser that reports it (the voice-activity detection, window by window) times a
   * held turn by the caller's audio, not the wall clock, so a detector running behind still cuts
   * no one off.
   */
  | { type: 'silence'; ms: number }
  /**
   * A recogniser that detects turns itself (Deepgram Flux) says the caller's turn is over, with
   * its words. `eager`: it is probably over (a reply may be prepared, not yet spoken); a
   * `turn_resumed` may still follow, else a final `end_of_turn` with the same turn's words.
   */
  | { type: 'end_of_turn'; text: string; eager: boolean }
  /** After an eager end of turn, the caller went on: the turn is not over. */
  | { type: 'turn_resumed' };

/** One call's live recognition: audio in as it arrives, events out, until it is closed. */
export interface LiveRecognition {
  /** Audio in the format the recognition was opened with. */
  send(audio: Buffer): void;
  /** Ends with the stream; a provider failure is thrown from it as `ProviderError`. */
  events: AsyncIterable<RecognitionEvent>;
  /** Sends what is buffered, closes the connection and waits for the last events. */
  close(): Promise<void>;
  /**
   * Seconds of audio the provider was actually sent, when that is not all the audio given to
   * `send` (an utterance recogniser hears only the utterances the voice-activity detection cut).
   */
  sentSeconds?(): number;
}

export interface RecognitionOptions {
  /** BCP-47 tag of the language spoken (the agent's `language`). */
  language: string;
  /** The provider's model, when it has several; its default otherwise. */
  model?: string;
  signal?: AbortSignal;
}

/**
 * Speech-to-text, in one of two shapes. A live recogniser (Deepgram) takes the audio as it comes
 * and says itself where an utterance ends; an utterance recogniser (Whisper-style servers) is sent
 * each utterance once the pipeline's voice-activity detection has cut it.
 */
export type SpeechToText =
  | { kind: 'live'; listen(format: AudioFormat, options: RecognitionOptions): LiveRecognition }
  | { kind: 'utterance'; transcribe(audio: Buffer, format: AudioFormat, options: RecognitionOptions): Promise<string> };

/** A voice a text-to-speech provider offers (`GET /api/v1/voices`). */
export interface Voice {
  /** What an agent's `voice` holds. */
  id: string;
  name: string;
  /** BCP-47 tags it speaks well; empty when the provider does not say. */
  languages: string[];
  gender?: 'female' | 'male' | 'neutral';
}

export interface SynthesisRequest {
  text: string;
  /** A voice id from `voices()`. */
  voice: string;
  language: string;
  /** The format the transport plays; a provider that can produce it directly does (ElevenLabs' `ulaw_8000`). */
  format: AudioFormat;
  model?: string;
  signal?: AbortSignal;
}

/** Audio as it is synthesised, in the format the provider delivers (the one asked for, or its own, converted by the pipeline). */
export interface Synthesis {
  format: AudioFormat;
  /** Chunks in order; a provider failure is thrown from it as `ProviderError`. */
  audio: AsyncIterable<Buffer>;
}

export interface TextToSpeech {
  synthesize(request: SynthesisRequest): Synthesis;
  voices(): Promise<Voice[]>;
}

/** Where a speech provider is reached: a tenant's integration or the service's environment. */
export interface SpeechEndpoint {
  baseUrl?: string;
  apiKey?: string;
  timeoutMs: number;
  /** A tenant's own server is reached through one that refuses private addresses. */
  fetch?: typeof globalThis.fetch;
}

/**
 * A vendor's own speech service (Deepgram, ElevenLabs): its origin from the service's settings, and
 * the service's key for tenants that connected none (absent: such tenants cannot use it).
 */
export type VendorEndpoint = (settings: Readonly<Record<string, string>>) => { baseUrl: string; apiKey?: string };

export interface SttChannel {
  connect(endpoint: SpeechEndpoint): SpeechToText;
  vendorEndpoint?: VendorEndpoint;
}

export interface TtsChannel {
  connect(endpoint: SpeechEndpoint): TextToSpeech;
  vendorEndpoint?: VendorEndpoint;
}
