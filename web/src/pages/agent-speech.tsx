import type { Agent, Voice } from '../../../src/api-types.ts';
import { useState } from 'preact/hooks';
import { api, ApiError, query } from '../api.ts';
import { Field, fieldErrorOf, Select, useLoad } from '../ui.tsx';

/** The agent form's language pattern (BCP-47 as the API takes it), for the input and for asking for voices. */
export const LANGUAGE_PATTERN = '[A-Za-z]{2,3}(-[A-Za-z]{4})?(-([A-Za-z]{2}|[0-9]{3}))?';
const isLanguage = (tag: string) => new RegExp(`^(?:${LANGUAGE_PATTERN})$`).test(tag);

// The providers of src/providers/registry.ts that listen and speak; the API refuses any other with its own message.
const STT_PROVIDERS: [string, string][] = [
  ['', 'None'],
  ['DEEPGRAM', 'Deepgram (live)'],
  ['OPENAI_COMPATIBLE', 'OpenAI-compatible (utterance)'],
];
const TTS_PROVIDERS: [string, string][] = [
  ['ESPEAK', 'eSpeak NG (offline)'],
  ['ELEVENLABS', 'ElevenLabs'],
  ['OPENAI_COMPATIBLE', 'OpenAI-compatible'],
];
// How the agent's Twilio calls are voiced (its voicePipeline).
const VOICE_PIPELINES: [Agent['voicePipeline'], string][] = [
  ['MEDIA_STREAM', 'callforge listens and speaks (Media Streams)'],
  ['CONVERSATION_RELAY', 'Twilio listens and speaks (ConversationRelay)'],
];
// How the agent knows the caller has finished (stt.endOfTurn; docs/voice.md, "Turn-taking").
type EndOfTurn = NonNullable<NonNullable<Agent['stt']>['endOfTurn']>;
const END_OF_TURN: [EndOfTurn, string][] = [
  ['WORDS', 'Their words (a finished sentence at once, an unfinished one waits)'],
  ['SILENCE', 'Silence alone'],
  ['SMART_TURN', 'Smart Turn v3 (the service must have its model)'],
  ['FLUX', 'Deepgram Flux (Deepgram only)'],
];
const PROVIDER_TITLES: Record<string, string> = {
  ESPEAK: 'eSpeak NG',
  ELEVENLABS: 'ElevenLabs',
  OPENAI_COMPATIBLE: 'The OpenAI-compatible server',
};

/** The API's refusals about speech: their own sentence names the provider and what to do, so it is shown whole at its field. */
const SPEECH_REFUSALS = [
  'SPEECH_NOT_CONFIGURED',
  'UNKNOWN_VOICE',
  'NO_VOICE_FOR_LANGUAGE',
  'CONVERSATION_RELAY_SPEECH',
  'SMART_TURN_NOT_CONFIGURED',
  'END_OF_TURN_CONFLICT',
];

/**
 * The API's problem with a speech field after a save: a speech refusal's sentence at the field its
 * details name; a provider's failure to list its voices (502, no details) at the voice; else the
 * schema's problem with that field.
 */
export function speechProblem(error: Error | undefined, path: string): string | undefined {
  if (!(error instanceof ApiError)) return undefined;
  if (SPEECH_REFUSALS.includes(error.code) && error.details.some((detail) => detail.path === path)) return error.message;
  if (error.code === 'PROVIDER_ERROR' && path === '/voice') return error.message;
  return fieldErrorOf(error, path);
}

/** A speech draft: the form's own state, what the agent has or the defaults. */
export interface SpeechDraft {
  voicePipeline: Agent['voicePipeline'];
  sttProvider: string;
  sttModel: string;
  endOfTurn: EndOfTurn;
  ttsProvider: string;
  ttsModel: string;
  voice: string;
}

export const speechDraft = (agent: Agent | undefined): SpeechDraft => ({
  voicePipeline: agent?.voicePipeline ?? 'MEDIA_STREAM',
  sttProvider: agent?.stt?.provider ?? '',
  sttModel: agent?.stt?.model ?? '',
  endOfTurn: agent?.stt?.endOfTurn ?? 'WORDS',
  ttsProvider: agent?.tts.provider ?? 'ESPEAK',
  ttsModel: agent?.tts.model ?? '',
  voice: agent?.voice ?? '',
});

/** The draft as the API takes it; an empty voice asks for the provider's default for the agent's language. */
export function speechBody(draft: SpeechDraft): Pick<Agent, 'stt' | 'tts' | 'voice' | 'voicePipeline'> {
  const model = (value: string) => (value.trim() ? { model: value.trim() } : {});
  return {
    voicePipeline: draft.voicePipeline,
    stt: draft.sttProvider ? { provider: draft.sttProvider, ...model(draft.sttModel), endOfTurn: draft.endOfTurn } : null,
    tts: { provider: draft.ttsProvider, ...(draft.ttsProvider === 'ESPEAK' ? {} : model(draft.ttsModel)) },
    voice: draft.voice || null,
  };
}

const voiceText = (voice: Voice) =>
  [voice.name, voice.languages.slice(0, 3).join(', ') || 'any language', voice.gender].filter(Boolean).join(' · ');

const matches = (voice: Voice, search: string) =>
  `${voice.name} ${voice.id} ${voice.languages.join(' ')} ${voice.gender ?? ''}`.toLowerCase().includes(search.trim().toLowerCase());

/** The voice select's options: the default first, the voices the search matches, and the chosen one even when not listed. */
function voiceOptions(voices: Voice[] | undefined, search: string, chosen: string, language: string): [string, string][] {
  const shown = (voices ?? []).filter((voice) => voice.id === chosen || matches(voice, search));
  const unlisted: [string, string][] =
    chosen && voices && !voices.some((voice) => voice.id === chosen) ? [[chosen, `${chosen} (not listed for ${language})`]] : [];
  const pending: [string, string][] = chosen && !voices ? [[chosen, chosen]] : [];
  return [
    ['', `Default for ${language || 'the language'}`],
    ...unlisted,
    ...pending,
    ...shown.map((voice): [string, string] => [voice.id, voiceText(voice)]),
  ];
}

function voicesHint(provider: string, language: string, count: number | undefined, shown: number, loading: boolean) {
  if (!isLanguage(language)) return 'Voices are listed once the language is a tag such as en-US.';
  if (loading || count === undefined) return 'Loading the voices…';
  const title = PROVIDER_TITLES[provider] ?? provider;
  const found = `${title} has ${count} voice${count === 1 ? '' : 's'} for ${language}`;
  return shown < count ? `${found}; ${shown} match the search.` : `${found}.`;
}

/** A speech provider's model, by name; empty for its default. */
function ModelField(props: { label: string; value: string; onValue: (value: string) => void; disabled?: boolean; problem?: string }) {
  return <Field {...props} maxLength={200} autoComplete="off" hint="The provider's default when empty." />;
}

/**
 * The agent's voice on a phone line: who listens (speech-to-text), who speaks (text-to-speech) and
 * with which of its voices, listed by `GET /voices` for the provider and the agent's language and
 * asked again when either changes.
 */
export function SpeechSettings({
  draft,
  onDraft,
  language,
  error,
}: {
  draft: SpeechDraft;
  onDraft: (draft: SpeechDraft) => void;
  language: string;
  /** The save's error, whose speech problems show on their fields. */
  error: Error | undefined;
}) {
  const [search, setSearch] = useState('');
  const listed = isLanguage(language) ? language : '';
  const voices = useLoad(
    async () => (listed ? api<{ data: Voice[] }>('GET', `/voices${query({ provider: draft.ttsProvider, language: listed })}`) : undefined),
    [draft.ttsProvider, listed],
  );
  const set = (patch: Partial<SpeechDraft>) => onDraft({ ...draft, ...patch });
  // While another provider's list loads, or when it failed, the previous list is not this provider's.
  const offered = voices.loading || voices.error ? undefined : voices.data?.data;
  const options = voiceOptions(offered, search, draft.voice, listed);
  const shownCount = options.filter(([id]) => offered?.some((voice) => voice.id === id)).length;
  const relayed = draft.voicePipeline === 'CONVERSATION_RELAY';

  return (
    <fieldset class="agent-rows wide">
      <legend>Voice</legend>
      <p class="hint">
        How the agent hears and speaks on a phone line. Deepgram and ElevenLabs use your keys under{' '}
        <a href="#/integrations">Integrations</a> (or the service's), unless Twilio listens and speaks.
      </p>
      <div class="agent-row-fields">
        <Select
          label="Twilio calls"
          value={draft.voicePipeline}
          // Twilio's ConversationRelay runs its own Deepgram and ElevenLabs: those are what it takes.
          onValue={(voicePipeline) =>
            set(
              voicePipeline === 'CONVERSATION_RELAY'
                ? {
                    voicePipeline,
                    sttProvider: 'DEEPGRAM',
                    ttsProvider: 'ELEVENLABS',
                    ttsModel: '',
                    voice: draft.ttsProvider === 'ELEVENLABS' ? draft.voice : '',
                  }
                : { voicePipeline },
            )
          }
          options={VOICE_PIPELINES}
          hint={
            relayed
              ? "Twilio's Deepgram listens and its ElevenLabs speaks, billed by Twilio to your Twilio account; only text travels. No keys of yours are needed; the default voice is Twilio's."
              : "callforge's recogniser and voice below run on the call's audio, billed here."
          }
          problem={speechProblem(error, '/voicePipeline')}
        />
        <Select
          label="Speech-to-text provider"
          value={draft.sttProvider}
          onValue={(sttProvider) => set({ sttProvider })}
          options={STT_PROVIDERS}
          hint="Deepgram hears the caller live and finds the end of each turn itself; an OpenAI-compatible recogniser is sent each utterance once the service's voice-activity detection hears the caller stop (phone lines only: a call from the browser needs Deepgram). With none the agent cannot listen."
          problem={speechProblem(error, '/stt/provider') ?? speechProblem(error, '/stt')}
        />
        <ModelField
          label="Speech-to-text model (optional)"
          value={draft.sttModel}
          onValue={(sttModel) => set({ sttModel })}
          disabled={!draft.sttProvider}
          problem={speechProblem(error, '/stt/model')}
        />
        <Select
          label="End of the caller's turn"
          value={draft.endOfTurn}
          onValue={(endOfTurn) => set({ endOfTurn: endOfTurn as EndOfTurn })}
          options={END_OF_TURN}
          hint="When the agent answers: by default when the caller's words are finished, waiting longer for an unfinished phrase."
          problem={speechProblem(error, '/stt/endOfTurn')}
        />
        <Select
          label="Text-to-speech provider"
          value={draft.ttsProvider}
          // Another provider has other voices: its default until one of them is chosen.
          onValue={(ttsProvider) => set({ ttsProvider, voice: '' })}
          options={TTS_PROVIDERS}
          hint="eSpeak NG speaks offline, with no account."
          problem={speechProblem(error, '/tts/provider') ?? speechProblem(error, '/tts')}
        />
        {draft.ttsProvider !== 'ESPEAK' && !relayed && (
          <ModelField
            label="Text-to-speech model (optional)"
            value={draft.ttsModel}
            onValue={(ttsModel) => set({ ttsModel })}
            problem={speechProblem(error, '/tts/model')}
          />
        )}
        <Field
          label="Search voices"
          type="search"
          value={search}
          onValue={setSearch}
          autoComplete="off"
          hint="By name, id, language or gender."
        />
        <Select
          label="Voice"
          value={draft.voice}
          onValue={(voice) => set({ voice })}
          options={options}
          hint={voicesHint(draft.ttsProvider, language, offered?.length, shownCount, voices.loading)}
          problem={voices.error?.message ?? speechProblem(error, '/voice')}
        />
      </div>
    </fieldset>
  );
}
