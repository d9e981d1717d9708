/**
 * An agent's speech on a phone line: who listens (speech-to-text), who speaks (text-to-speech) and
 * in which voice; checked when an agent is saved, resolved for the media pipeline when a call starts.
 */
import type { Deps, TenantCtx } from '../../platform/context.ts';
import { appError } from '../../platform/errors.ts';
import { publicOnlyFetch } from '../../platform/safe-fetch.ts';
import { ProviderError } from '../../providers/errors.ts';
import { FLUX_DEFAULT_MODEL } from '../../providers/deepgram/live-recognition.ts';
import { sttProvider, ttsProvider } from '../../providers/registry.ts';
import type { ConversationRelaySpeech, Provider, SpeechEndpoint, SpeechToText, TextToSpeech, Voice } from '../../providers/types.ts';
import * as integrations from '../integrations/service.ts';
import type { Agent, AgentBackup, AgentStt, AgentTts, StoredBackup, VoicePipeline } from './schemas.ts';

type Scope = Pick<TenantCtx, 'db' | 'tenantId' | 'serverKeys' | 'config'>;

/** An agent speaks through eSpeak NG unless it names another provider: it needs no account and no network. */
export const DEFAULT_TTS: AgentTts = { provider: 'ESPEAK' };

/**
 * An agent listens through the service's speech server when the operator configured one for speech
 * (SPEECH_API_URL); LLM_API_URL alone does not count, as many model servers serve no audio.
 */
export const defaultStt = (config: TenantCtx['config']): AgentStt | null =>
  config.speech.dedicated ? { provider: 'OPENAI_COMPATIBLE' } : null;

/** A model or speech server: its address (absent: the vendor's own), its key, and whether it must be a public address. */
export interface Server {
  baseUrl?: string;
  apiKey?: string;
  publicOnly: boolean;
}

/**
 * Where this tenant reaches `provider`: its own integration first (`apiUrl`, `apiKey`), reached only
 * at public addresses unless ALLOW_PRIVATE_URLS; else the service's server from the environment,
 * which the operator configured and is trusted as it is. Undefined when there is neither.
 */
export async function serverFor(
  ctx: Scope,
  provider: Provider,
  environment: { apiUrl?: string; apiKey?: string } | undefined,
): Promise<Server | undefined> {
  const own = provider.integration ? await integrations.connectionTo(ctx, provider) : undefined;
  if (own) return { baseUrl: own.credentials.apiUrl, apiKey: own.credentials.apiKey, publicOnly: !ctx.config.allowPrivateUrls };
  if (environment?.apiUrl) return { baseUrl: environment.apiUrl, apiKey: environment.apiKey, publicOnly: false };
  return undefined;
}

/**
 * The service's own speech server (SPEECH_API_URL, else LLM_API_URL) serves the providers tenants
 * connect through the OpenAI-compatible `llm` integration; others come with their tenant's credentials.
 */
const environmentServer = (ctx: Scope, provider: Provider) => (provider.integration?.kind === 'llm' ? ctx.config.speech : undefined);

/** How a speech provider is reached; undefined when it needs a server and has none. A provider that needs nothing (eSpeak) always is. */
async function speechEndpoint(ctx: Scope, provider: Provider): Promise<SpeechEndpoint | undefined> {
  const timeoutMs = ctx.config.speech.timeoutMs;
  if (!provider.integration) return { timeoutMs };
  const vendor = (provider.stt?.vendorEndpoint ?? provider.tts?.vendorEndpoint)?.(ctx.config.providerSettings);
  if (vendor) {
    // A vendor's service at the origin the operator set; the tenant's key, else the service's.
    const own = await integrations.connectionTo(ctx, provider);
    const apiKey = own?.credentials.apiKey ?? vendor.apiKey;
    return apiKey ? { timeoutMs, baseUrl: vendor.baseUrl, apiKey } : undefined;
  }
  const server = await serverFor(ctx, provider, environmentServer(ctx, provider));
  if (!server) return undefined;
  return {
    timeoutMs,
    ...(server.baseUrl ? { baseUrl: server.baseUrl } : {}),
    ...(server.apiKey ? { apiKey: server.apiKey } : {}),
    ...(server.publicOnly ? { fetch: publicOnlyFetch({ allowPrivate: false }) } : {}),
  };
}

/**
 * What the operator sets to give every tenant `provider`: a vendor's key (its provider's own
 * `…_API_KEY` setting: DEEPGRAM_API_KEY, ELEVENLABS_API_KEY), else the service's speech server.
 */
const serviceSettingOf = (provider: Provider) =>
  Object.keys(provider.settings ?? {}).find((name) => name.endsWith('_API_KEY')) ?? 'SPEECH_API_URL (or LLM_API_URL)';

/** The 400 for a provider that needs a server and has none, naming the field at `path` and the setting that would give it one. */
const notConfigured = (provider: Provider, path: string) =>
  appError(
    'SPEECH_NOT_CONFIGURED',
    { provider: provider.name, integration: provider.integration?.kind ?? '', setting: serviceSettingOf(provider) },
    [{ path, message: 'no server is configured for this provider' }],
  );

/** A provider the agent names needs a server to reach; refused at save, not discovered on a live call. */
async function checkReachable(ctx: Scope, provider: Provider, field: 'stt' | 'tts' | 'backup/stt' | 'backup/tts'): Promise<void> {
  if (!(await speechEndpoint(ctx, provider))) throw notConfigured(provider, `/${field}/provider`);
}

/**
 * The voices of a text-to-speech provider, for this tenant (some list theirs without a server); one
 * that needs a server to ask and has none is a 400, one that cannot list them a 502.
 */
async function voicesOf(ctx: Scope, providerName: string): Promise<Voice[]> {
  const provider = ttsProvider(providerName);
  const endpoint = await speechEndpoint(ctx, provider);
  const tts = provider.tts.connect(endpoint ?? { timeoutMs: ctx.config.speech.timeoutMs });
  try {
    return await tts.voices();
  } catch (error) {
    if (!(error instanceof ProviderError)) throw error;
    if (!endpoint) throw notConfigured(provider, '/provider');
    throw appError('PROVIDER_ERROR.voices', { provider: provider.title, reason: error.message });
  }
}

const subtags = (tag: string) => tag.toLowerCase().split('-');
/** One tag names the other or a variety of it: en and en-US match, en-US and en-GB do not. */
function tagsMatch(a: string, b: string): boolean {
  const [shorter, longer] = [subtags(a), subtags(b)].sort((x, y) => x.length - y.length) as [string[], string[]];
  return shorter.every((subtag, i) => subtag === longer[i]);
}

/** Voices that speak `language`; a voice that names no language speaks any. */
export const voicesSpeaking = (voices: Voice[], language: string) =>
  voices.filter((voice) => voice.languages.length === 0 || voice.languages.some((tag) => tagsMatch(tag, language)));

/**
 * The voice an agent gets when it names none: the provider's first voice (providers list their
 * best first) for the exact language, else for the language or a variety of it, else for another
 * variety of the same language, else one that names no language (it speaks any).
 */
export function defaultVoice(voices: Voice[], language: string): Voice | undefined {
  const lower = language.toLowerCase();
  const primary = subtags(language)[0];
  return (
    voices.find((voice) => voice.languages.some((tag) => tag.toLowerCase() === lower)) ??
    voices.find((voice) => voice.languages.some((tag) => tagsMatch(tag, language))) ??
    voices.find((voice) => voice.languages.some((tag) => subtags(tag)[0] === primary)) ??
    voices.find((voice) => voice.languages.length === 0)
  );
}

/** `GET /voices`: a provider's voices, those that speak `language` when given. */
export async function listVoices(ctx: Scope, providerName: string, language: string | undefined): Promise<Voice[]> {
  const voices = await voicesOf(ctx, providerName);
  return language ? voicesSpeaking(voices, language) : voices;
}

/** The voice to store: the one asked for, when the provider has it, or the provider's default for the language. */
async function chosenVoice(ctx: Scope, tts: AgentTts, voice: string | null, language: string, path = '/voice'): Promise<string> {
  const voices = await voicesOf(ctx, tts.provider);
  const title = ttsProvider(tts.provider).title;
  if (voice !== null) {
    if (voices.some((offered) => offered.id === voice)) return voice;
    throw appError('UNKNOWN_VOICE', { voice, provider: title, name: tts.provider }, [
      { path, message: `is not a voice of ${tts.provider}` },
    ]);
  }
  const fallback = defaultVoice(voices, language);
  if (!fallback)
    throw appError('NO_VOICE_FOR_LANGUAGE', { language, provider: title, name: tts.provider }, [
      { path, message: `${tts.provider} has no voice for ${language}` },
    ]);
  return fallback.id;
}

export interface SpeechInput {
  stt?: AgentStt | null;
  tts?: AgentTts;
  voice?: string | null;
  language?: string;
  voicePipeline?: VoicePipeline;
}

type CurrentSpeech = Pick<Agent, 'stt' | 'tts' | 'voice' | 'language' | 'voicePipeline'>;

/**
 * The speech fields to store. On create everything is settled (defaults filled). On update a field
 * not given stays; the voice is chosen again when it is given (null: the default for the agent's
 * language), or when the provider changes and no longer offers it. A new language alone keeps the voice.
 * An agent leaving ConversationRelay has its speech checked as if given again: callforge runs it now.
 */
export async function speechPatch(
  ctx: Scope,
  input: SpeechInput,
  current: CurrentSpeech | undefined,
): Promise<{ stt?: AgentStt | null; tts?: AgentTts; voice?: string | null }> {
  if ((input.voicePipeline ?? current?.voicePipeline) === 'CONVERSATION_RELAY') return relaySpeechPatch(ctx, input, current);
  if (current?.voicePipeline === 'CONVERSATION_RELAY')
    input = {
      ...input,
      stt: input.stt === undefined ? current.stt : input.stt,
      tts: input.tts ?? current.tts,
      voice: input.voice === undefined ? current.voice : input.voice,
    };
  const stt = current ? input.stt : input.stt === undefined ? defaultStt(ctx.config) : input.stt;
  const tts = current ? input.tts : (input.tts ?? DEFAULT_TTS);
  if (stt) await checkReachable(ctx, sttProvider(stt.provider), 'stt');
  if (tts) await checkReachable(ctx, ttsProvider(tts.provider), 'tts');
  const speaking = tts ?? current!.tts;
  const language = input.language ?? current?.language ?? 'en-US';
  let voice: string | undefined;
  if (!current || input.voice !== undefined) voice = await chosenVoice(ctx, speaking, input.voice ?? null, language);
  else if (tts) {
    const kept = current.voice && (await voicesOf(ctx, tts.provider)).some((offered) => offered.id === current.voice);
    voice = kept ? current.voice! : await chosenVoice(ctx, tts, null, language);
  }
  return { ...(stt === undefined ? {} : { stt }), ...(tts ? { tts } : {}), ...(voice === undefined ? {} : { voice }) };
}

/** The 400 for a backup `part` (llm, stt, tts) that cannot take over, and why. */
export const backupConflict = (part: string, problem: string) =>
  appError('BACKUP_CONFLICT', { part, problem }, [{ path: `/backup/${part}`, message: problem }]);

/**
 * The backup's speech as stored: each provider reachable and not the agent's own (a provider that
 * failed would fail again), the backup voice one of its provider's, in the agent's language by default.
 */
export async function backupSpeechPatch(
  ctx: Scope,
  backup: Pick<AgentBackup, 'stt' | 'tts'>,
  agent: { stt: AgentStt | null; tts: AgentTts; language: string },
): Promise<Pick<StoredBackup, 'stt' | 'tts'>> {
  const refuse = backupConflict;
  const { stt, tts } = backup;
  if (stt) {
    if (stt.provider === agent.stt?.provider) throw refuse('stt', "is the agent's own speech-to-text provider: name another");
    await checkReachable(ctx, sttProvider(stt.provider), 'backup/stt');
  }
  if (!tts) return { stt: stt ?? null, tts: null };
  if (tts.provider === agent.tts.provider) throw refuse('tts', "is the agent's own text-to-speech provider: name another");
  await checkReachable(ctx, ttsProvider(tts.provider), 'backup/tts');
  const { voice: given, ...speaking } = tts;
  return {
    stt: stt ?? null,
    tts: { ...speaking, voice: await chosenVoice(ctx, speaking, given ?? null, agent.language, '/backup/tts/voice') },
  };
}

/** What Twilio's ConversationRelay runs: its own Deepgram and ElevenLabs, the only vendors it and callforge share. */
const RELAY_STT: AgentStt = { provider: 'DEEPGRAM' };
const RELAY_TTS: AgentTts = { provider: 'ELEVENLABS' };

const relayRefusal = (path: string, problem: string, fix: string) =>
  appError('CONVERSATION_RELAY_SPEECH', { problem, fix }, [{ path, message: problem }]);

/**
 * Speech for an agent voiced by ConversationRelay: Twilio listens with Deepgram and speaks with
 * ElevenLabs, under Twilio's account, so no server or key of ours is needed and none is checked;
 * a voice given is checked against ElevenLabs' voices (that needs a key to list them), and null
 * leaves the voice to Twilio's default for the language. Defaults on create: Deepgram, ElevenLabs.
 */
async function relaySpeechPatch(
  ctx: Scope,
  input: SpeechInput,
  current: CurrentSpeech | undefined,
): Promise<{ stt: AgentStt | null; tts: AgentTts; voice: string | null }> {
  const stt = input.stt === undefined ? (current ? current.stt : RELAY_STT) : input.stt;
  const tts = input.tts ?? current?.tts ?? RELAY_TTS;
  const orMediaStream = 'or voicePipeline MEDIA_STREAM';
  if (stt?.provider !== 'DEEPGRAM')
    throw relayRefusal('/stt', 'Twilio listens with its own Deepgram', `set stt to {"provider": "DEEPGRAM"}, ${orMediaStream}`);
  if (tts.provider !== 'ELEVENLABS')
    throw relayRefusal('/tts/provider', 'Twilio speaks with its own ElevenLabs', `set tts to {"provider": "ELEVENLABS"}, ${orMediaStream}`);
  if (tts.model) throw relayRefusal('/tts/model', 'Twilio chooses the ElevenLabs model itself', 'remove tts.model');
  const kept = current?.tts.provider === 'ELEVENLABS' ? current.voice : null;
  const voice = input.voice === undefined ? kept : input.voice;
  if (voice === null || voice === kept) return { stt, tts, voice };
  if (!(await speechEndpoint(ctx, ttsProvider(tts.provider))))
    throw relayRefusal(
      '/voice',
      "a voice is checked against ElevenLabs' voices, which needs an ElevenLabs key to list them",
      "connect the elevenlabs integration, or set voice to null for Twilio's default voice",
    );
  return { stt, tts, voice: await chosenVoice(ctx, tts, voice, input.language ?? current?.language ?? 'en-US') };
}

/**
 * How Twilio's ConversationRelay voices the agent's calls (its language, voice and recogniser, in
 * our providers' names), or null when its calls stream to callforge's media pipeline.
 */
export function relaySpeechOf(
  agent: Pick<Agent, 'voicePipeline' | 'language' | 'stt' | 'tts' | 'voice'>,
): Omit<ConversationRelaySpeech, 'url'> | null {
  if (agent.voicePipeline !== 'CONVERSATION_RELAY' || !agent.stt) return null;
  return {
    language: agent.language,
    tts: { provider: agent.tts.provider, voice: agent.voice },
    stt: { provider: agent.stt.provider, ...(agent.stt.model ? { model: agent.stt.model } : {}) },
  };
}

/** What the media pipeline speaks and listens with on one of the agent's calls. */
export interface AgentSpeech {
  /** Null: the agent cannot listen on a phone line. */
  stt: SpeechToText | null;
  tts: TextToSpeech;
  voice: string;
  sttProvider: string | null;
  ttsProvider: string;
  sttModel?: string;
  ttsModel?: string;
  /** The agent's backup recogniser and voice, ready to take over mid-call (absent: none). */
  backup?: {
    stt?: { stt: SpeechToText; provider: string; model?: string };
    tts?: { tts: TextToSpeech; provider: string; voice: string; model?: string };
  };
}

/**
 * The agent's speech for a call, reached with the tenant's credentials or the service's
 * environment (as its model is). An agent saved before voices were checked (voice null) gets the
 * provider's default for its language. A server unconfigured since the agent was saved fails on
 * first use with the provider's ProviderError.
 */
export async function speechOf(
  deps: Pick<Deps, 'config'>,
  ctx: TenantCtx,
  agent: Pick<Agent, 'stt' | 'tts' | 'voice' | 'language'> & Partial<Pick<Agent, 'backup'>>,
): Promise<AgentSpeech> {
  const scope = { ...ctx, config: deps.config };
  const fallback = { timeoutMs: deps.config.speech.timeoutMs };
  const speakerOf = async (name: string) => {
    const tts = ttsProvider(name);
    return tts.tts.connect((await speechEndpoint(scope, tts)) ?? fallback);
  };
  const listenerOf = async (name: string) => {
    const stt = sttProvider(name);
    return stt.stt.connect((await speechEndpoint(scope, stt)) ?? fallback);
  };
  const speaker = await speakerOf(agent.tts.provider);
  const listener = agent.stt ? await listenerOf(agent.stt.provider) : null;
  const { stt: backupStt, tts: backupTts } = agent.backup ?? {};
  const backup = {
    ...(backupStt && {
      stt: {
        stt: await listenerOf(backupStt.provider),
        provider: backupStt.provider,
        ...(backupStt.model ? { model: backupStt.model } : {}),
      },
    }),
    ...(backupTts && {
      tts: {
        tts: await speakerOf(backupTts.provider),
        provider: backupTts.provider,
        voice: backupTts.voice,
        ...(backupTts.model ? { model: backupTts.model } : {}),
      },
    }),
  };
  const voice = agent.voice ?? defaultVoice(await speaker.voices(), agent.language)?.id;
  if (!voice) throw new ProviderError(`${ttsProvider(agent.tts.provider).title} has no voice for ${agent.language}.`, { retryable: false });
  return {
    stt: listener,
    tts: speaker,
    voice,
    sttProvider: agent.stt?.provider ?? null,
    ttsProvider: agent.tts.provider,
    // Flux is Deepgram's model that ends the turns itself.
    ...(agent.stt?.model ? { sttModel: agent.stt.model } : agent.stt?.endOfTurn === 'FLUX' ? { sttModel: FLUX_DEFAULT_MODEL } : {}),
    ...(agent.tts.model ? { ttsModel: agent.tts.model } : {}),
    ...((backup.stt || backup.tts) && { backup }),
  };
}
