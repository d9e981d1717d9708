/**
 * Every provider callforge can use, one line each. The modules find providers here by the name
 * stored on numbers, calls and messages; integrations, settings and the API's provider enums are
 * derived from this list, so adding a provider is its folder and one line below.
 */
import type { TSchema } from '@sinclair/typebox';
import { deepgram } from './deepgram/index.ts';
import { elevenlabs } from './elevenlabs/index.ts';
import { espeak } from './espeak/index.ts';
import { msg91 } from './msg91/index.ts';
import { openaiCompatible } from './openai-compatible/index.ts';
import { simulator } from './simulator/index.ts';
import { telnyx } from './telnyx/index.ts';
import { twilio } from './twilio/index.ts';
import type { IntegrationDefinition, Provider } from './types.ts';
import { whatsappCloud } from './whatsapp-cloud/index.ts';

export const PROVIDERS: readonly Provider[] = [
  simulator,
  twilio,
  whatsappCloud,
  msg91,
  telnyx,
  openaiCompatible,
  espeak,
  deepgram,
  elevenlabs,
];

/** The channels a provider is looked up by. */
type Channel = 'telephony' | 'sms' | 'whatsapp' | 'llm' | 'realtime' | 'stt' | 'tts';

const byName = new Map(PROVIDERS.map((provider) => [provider.name, provider]));

export const providerNamed = (name: string): Provider | undefined => byName.get(name);

const namesWith = (channel: Channel) =>
  PROVIDERS.filter((provider) => provider[channel]).map((provider) => provider.name) as [string, ...string[]];

/** Providers that carry phone numbers and calls (a voice number's `provider`). */
export const VOICE_PROVIDER_NAMES = namesWith('telephony');
/** Providers that send SMS (an SMS campaign's `senderProvider`). */
export const SMS_PROVIDER_NAMES = namesWith('sms');
/** Providers that serve language models (an agent's `llm.provider`). */
export const LLM_PROVIDER_NAMES = namesWith('llm');
/** Providers that turn speech into text (an agent's `stt.provider`). */
export const STT_PROVIDER_NAMES = namesWith('stt');
/** Providers that speak (an agent's `tts.provider`, `GET /voices?provider=`). */
export const TTS_PROVIDER_NAMES = namesWith('tts');

export type ProviderWith<K extends Channel> = Provider & Required<Pick<Provider, K>>;

/** The provider stored on a number, call or message, with the channel asked for; any other name is a bug, not input. */
function providerWith<K extends Channel>(name: string, channel: K): ProviderWith<K> {
  const provider = byName.get(name);
  if (!provider?.[channel]) throw new Error(`No ${channel} provider is named ${JSON.stringify(name)}.`);
  return provider as ProviderWith<K>;
}

export const telephonyProvider = (name: string) => providerWith(name, 'telephony');
export const smsProvider = (name: string) => providerWith(name, 'sms');
export const llmProvider = (name: string) => providerWith(name, 'llm');
export const realtimeProvider = (name: string) => providerWith(name, 'realtime');
export const sttProvider = (name: string) => providerWith(name, 'stt');
export const ttsProvider = (name: string) => providerWith(name, 'tts');

/** The WhatsApp provider (there is one: Meta's Cloud API). */
export const whatsappProvider: ProviderWith<'whatsapp'> = providerWith(whatsappCloud.name, 'whatsapp');

/** The integrations tenants connect, one per provider that needs credentials. */
export const INTEGRATIONS: readonly IntegrationDefinition[] = PROVIDERS.flatMap((provider) =>
  provider.integration ? [provider.integration] : [],
);

/** Every provider's own settings (environment variables), validated with the service's configuration. */
export const PROVIDER_SETTINGS: Record<string, TSchema> = Object.assign({}, ...PROVIDERS.map((provider) => provider.settings ?? {}));
