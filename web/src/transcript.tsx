import './transcript.css';
import type { Call, TranscriptTurn } from '../../src/api-types.ts';

/** The lines no model wrote, in words, with what each is. */
const UNWRITTEN_LINES: Record<string, [label: string, meaning: string]> = {
  'retrieval-agent': ['retrieval agent', 'The built-in agent that answers from the knowledge bases, with no model.'],
  'first-message': ['first message', "The agent's configured opening."],
  fallback: ['fallback', 'The line said when the model failed.'],
  pipeline: ['voice pipeline', 'A line of the voice pipeline itself: asking whether the contact is still there, or a goodbye.'],
  voicemail: ['voicemail message', "The campaign's message, left on an answering machine after the beep."],
};

/**
 * Who wrote an agent turn, in words: a model's name, or one of the lines no model wrote (the
 * retrieval agent's, the configured first message, the fallback, the voice pipeline's own lines,
 * the voicemail message), so nothing looks generated that was not.
 */
export function authorOf(by: string | undefined): string | undefined {
  if (!by) return undefined;
  if (by.startsWith('model:')) return by.slice('model:'.length);
  return UNWRITTEN_LINES[by]?.[0] ?? by;
}

const END_REASONS = {
  agent_ended: 'agent ended the call',
  contact_hung_up: 'contact hung up',
  opted_out: 'contact opted out',
  transferred: 'transferred',
  llm_error: 'the language model failed',
  hung_up_by_user: 'hung up by user',
  silence: 'contact stayed silent',
  max_duration: 'time limit reached',
  provider_error: 'a speech provider failed',
  voicemail_left: 'voicemail left',
  answering_machine: 'an answering machine answered',
} satisfies Record<NonNullable<Call['endReason']>, string>;

/** Why a call ended, in words. */
export const endReasonInWords = (reason: NonNullable<Call['endReason']>) => END_REASONS[reason] ?? reason.replaceAll('_', ' ');

const ANSWERED_BY = {
  human: 'a person',
  machine: 'an answering machine',
  fax: 'a fax machine',
  unknown: 'not clear (talked to as a person)',
} satisfies Record<NonNullable<Call['answeredBy']>, string>;

/** Who answered a call, as answering-machine detection told, in words. */
export const answeredByInWords = (answeredBy: NonNullable<Call['answeredBy']>) => ANSWERED_BY[answeredBy] ?? answeredBy;

/** A brain (`model:<name>` or `retrieval-agent`) in words. */
export const brainOf = (brain: string) =>
  brain.startsWith('model:') ? `Model ${brain.slice('model:'.length)}` : brain === 'retrieval-agent' ? 'Retrieval agent (no model)' : brain;

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

const json = (value: unknown) => {
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
};

/**
 * What the reply took: on a call's audio line, how long the contact waited for it at their ear
 * (with each step in the title); the model's first token (when a model ran) and the whole reply.
 */
function Latency({ latency }: { latency: NonNullable<TranscriptTurn['latency']> }) {
  const { voice } = latency;
  const steps =
    voice &&
    [
      `turn over ${voice.endOfTurnMs} ms`,
      ...(voice.sttFinalMs === null ? [] : [`last words recognised ${voice.sttFinalMs} ms`]),
      `first words ${voice.firstTokenMs} ms`,
      `first audio sent ${voice.heardMs} ms`,
    ].join(', ');
  return (
    <span class="turn-latency">
      {voice && (
        <>
          <span title={`After the contact's last sound: ${steps}.`}>heard {voice.heardMs} ms after the contact stopped</span> ·{' '}
        </>
      )}
      {latency.firstTokenMs !== null && <>first token {latency.firstTokenMs} ms · </>}
      reply {latency.totalMs} ms
    </span>
  );
}

function Sources({ sources }: { sources: NonNullable<TranscriptTurn['sources']> }) {
  const names = [...new Set(sources.map((source) => source.sourceName))];
  return <span class="turn-sources">Sources: {names.join(', ')}</span>;
}

function ToolTurn({ turn }: { turn: TranscriptTurn }) {
  const tool = turn.tool;
  return (
    <details class="turn-tool">
      <summary>
        Tool <code>{tool?.name ?? 'unknown'}</code> {tool ? (tool.ok ? '— ok' : '— failed') : ''}
        {turn.startMs !== undefined && <span class="turn-time"> at {seconds(turn.startMs)}</span>}
      </summary>
      <dl>
        {tool && (
          <>
            <dt>Arguments</dt>
            <dd>
              <pre>{json(tool.arguments)}</pre>
            </dd>
          </>
        )}
        <dt>Result</dt>
        <dd>
          <pre>{turn.text}</pre>
        </dd>
        {turn.sources && turn.sources.length > 0 && (
          <>
            <dt>Sources</dt>
            <dd>{[...new Set(turn.sources.map((source) => source.sourceName))].join(', ')}</dd>
          </>
        )}
      </dl>
    </details>
  );
}

/**
 * A conversation as chat bubbles: the contact on the right, the agent on the left with who wrote
 * each turn, its sources and latency; tool turns as small lines that open onto their arguments and
 * result. `live` announces new turns to screen readers as they are appended.
 */
export function Transcript({
  turns,
  contactLabel = 'Contact',
  label = 'Transcript',
  live = false,
}: {
  turns: readonly TranscriptTurn[];
  contactLabel?: string;
  label?: string;
  live?: boolean;
}) {
  return (
    <ol class="turns" aria-label={label} aria-live={live ? 'polite' : undefined} aria-relevant={live ? 'additions' : undefined}>
      {turns.map((turn, index) =>
        turn.role === 'tool' ? (
          <li key={index} class="turn turn-tool-line">
            <ToolTurn turn={turn} />
          </li>
        ) : (
          <li key={index} class={`turn turn-${turn.role}${turn.interrupted ? ' turn-interrupted' : ''}`}>
            <div class="turn-head">
              <strong>{turn.role === 'agent' ? 'Agent' : contactLabel}</strong>
              {turn.role === 'agent' && authorOf(turn.by) && (
                <span class="turn-by" title={turn.by ? UNWRITTEN_LINES[turn.by]?.[1] : undefined}>
                  {authorOf(turn.by)}
                </span>
              )}
              {turn.interrupted && (
                <span class="turn-cut" title="The caller spoke over the agent: the text is what they heard before it stopped.">
                  cut off by the caller
                </span>
              )}
              {turn.startMs !== undefined && <span class="turn-time">{seconds(turn.startMs)}</span>}
            </div>
            <p class="turn-text">{turn.text}</p>
            {(turn.sources?.length || turn.latency) && (
              <div class="turn-meta">
                {turn.sources && turn.sources.length > 0 && <Sources sources={turn.sources} />}
                {turn.latency && <Latency latency={turn.latency} />}
              </div>
            )}
          </li>
        ),
      )}
    </ol>
  );
}
