import './call.css';
import type { AnalyticsResult, Call, CallScorecard, Message, Scorecard, TranscriptTurn } from '../../../src/api-types.ts';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, follow, query, type Page } from '../api.ts';
import { useProfile } from '../profile.ts';
import { RecordingPlayer } from '../recording.tsx';
import { answeredByInWords, endReasonInWords, Transcript } from '../transcript.tsx';
import { DataTable, Empty, ErrorMessage, formatDate, formatMoney, PageTitle, Status, useLoad } from '../ui.tsx';
import { AssertionVerdicts } from './agent-suites.tsx';
import { formatDuration, HangUpButton, isLive } from './calls.tsx';
import { ScorecardVerdict } from './scorecard.tsx';

/** How long after a call ends its analytics record is waited for (it is written by a job). */
const RESULT_WAIT_MS = 120_000;
const RESULT_REFRESH_MS = 4000;

/** A call's cost components (its total apart), as the API names them and in words. */
export const COST_PARTS: [Exclude<keyof NonNullable<Call['cost']>, 'total'>, string][] = [
  ['telephony', 'Telephony'],
  ['stt', 'Speech to text'],
  ['tts', 'Text to speech'],
  ['llm', 'Language model'],
  ['platformFee', 'Platform fee'],
];

/** What the call used, component by component, in words. */
const usageRows = (usage: NonNullable<Call['usage']>): [string, string][] => [
  ['Telephony', `${usage.telephonySeconds} s${by(usage.telephonyProvider)}`],
  ['Speech to text', `${usage.sttSeconds} s${by(usage.sttProvider)}`],
  ['Text to speech', `${usage.ttsCharacters} characters${by(usage.ttsProvider)}`],
  [
    'Language model',
    usage.llmModel
      ? `${usage.llmTokens} tokens (${usage.llmInputTokens} in, ${usage.llmOutputTokens} out), ${usage.llmModel}${by(usage.llmProvider)}`
      : 'No model ran',
  ],
];
/** The provider that ran a component, which its price is per (usage of calls recorded before providers were, has none). */
const by = (provider: string | null | undefined) => (provider ? ` (${provider})` : '');

const words = (value: string) => value.replaceAll('_', ' ');
const otherParty = (call: Call) => (call.direction === 'INCOMING' ? call.fromNumber : call.toNumber);
const json = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));

/**
 * One call: its transcript (who wrote each agent turn, tools, sources, latencies), why it ended and
 * what came of it, its usage and cost, the messages sent after it and its analytics record. A live
 * call is followed as it happens (`/call-logs/{id}/live`), its new turns announced.
 */
/**
 * A record a job writes shortly after the call ends (its analytics, its scorecard): asked for again
 * for a while until it is there, when one is `expected`; `waiting` while it is.
 */
function useWrittenAfterEnd<T>(load: () => Promise<Page<T>>, endedAt: number | undefined, deps: unknown[], expected = true) {
  const [refreshMs, setRefreshMs] = useState<number | undefined>(undefined);
  const loaded = useLoad(
    async () => {
      const found = await load();
      const waiting = expected && found.data.length === 0 && endedAt !== undefined && new Date().getTime() - endedAt < RESULT_WAIT_MS;
      setRefreshMs(waiting ? RESULT_REFRESH_MS : undefined);
      return found;
    },
    [...deps, endedAt, expected],
    refreshMs,
  );
  return { ...loaded, waiting: refreshMs !== undefined };
}

export function CallPage({ params }: { params: Record<string, string> }) {
  const id = params.id!;
  const { profile, refresh } = useProfile();
  const loaded = useLoad(() => api<Call>('GET', `/call-logs/${id}`), [id]);
  const [call, setCall] = useState<Call | undefined>(undefined);
  const [following, setFollowing] = useState(false);
  const [followError, setFollowError] = useState<Error | undefined>(undefined);
  const received = useRef(0);
  const endedAt = call?.endedAt ? Date.parse(call.endedAt) : undefined;
  const messages = useLoad(() => api<Page<Message>>('GET', `/messages?callId=${id}&limit=100`), [id, call?.status]);
  const results = useWrittenAfterEnd(() => api<Page<AnalyticsResult>>('GET', `/analytics/results?session_id=${id}&limit=1`), endedAt, [id]);
  // A call is scored only while the tenant has checks: without any, no scorecard is waited for.
  const checks = useLoad(() => api<Scorecard>('GET', '/scorecard'), []);
  const scorecards = useWrittenAfterEnd(
    () => api<Page<CallScorecard>>('GET', `/call-scorecards${query({ callId: id, limit: 1 })}`),
    endedAt,
    [id],
    (checks.data?.checks.length ?? 0) > 0,
  );

  useEffect(() => setCall(loaded.data), [loaded.data]);

  const live = loaded.data ? isLive(loaded.data) : false;
  useEffect(() => {
    if (!live) return;
    const viewer = new AbortController();
    received.current = 0;
    setFollowing(true);
    setFollowError(undefined);
    follow(
      `/call-logs/${id}/live`,
      ({ event, data }) => {
        if (event === 'turn') {
          // The stream starts from the first turn: those already shown are skipped.
          received.current += 1;
          const count = received.current;
          setCall((current) =>
            current && count > current.transcript.length
              ? { ...current, transcript: [...current.transcript, data as TranscriptTurn] }
              : current,
          );
        } else if (event === 'status') {
          const { status, endReason } = data as Pick<Call, 'status' | 'endReason'>;
          setCall((current) => current && { ...current, status, endReason });
        } else if (event === 'ended') {
          setCall(data as Call);
          refresh();
        } else if (event === 'error') {
          setFollowError(new Error((data as { message: string }).message));
        }
      },
      viewer.signal,
    ).then(
      () => setFollowing(false),
      (caught: Error) => {
        setFollowing(false);
        setFollowError(caught);
      },
    );
    return () => viewer.abort();
  }, [id, live]);

  const money = (amount: string) => (profile ? formatMoney(amount, profile.wallet.currency, { exact: true }) : amount);
  const result = results.data?.data[0];
  const scorecard = scorecards.data?.data[0];

  return (
    <>
      <PageTitle
        actions={
          call &&
          isLive(call) && (
            <HangUpButton
              call={call}
              // Followed live, the stream tells of the end; otherwise the call is asked for again.
              onDone={() => {
                if (!following) void loaded.reload();
              }}
            />
          )
        }
      >
        {call ? `Call with ${otherParty(call)}` : 'Call'}
      </PageTitle>
      <p>
        <a href="#/calls">All calls</a>
      </p>
      <ErrorMessage error={loaded.error} />
      {!call && loaded.loading && <p>Loading the call…</p>}
      {call && (
        <div class="call-page">
          <section class="card" aria-labelledby="call-summary-title">
            <h2 id="call-summary-title">Summary</h2>
            <div class="call-status" aria-live="polite" aria-atomic="true">
              <Status value={call.status} />
              {call.outcome && <Status value={call.outcome} />}
              {call.endReason && <span>Ended: {endReasonInWords(call.endReason)}</span>}
              {following && <span class="hint">Following live…</span>}
            </div>
            <dl class="call-facts">
              <div>
                <dt>Direction</dt>
                <dd>{call.direction === 'OUTGOING' ? 'Outgoing' : 'Incoming'}</dd>
              </div>
              <div>
                <dt>From</dt>
                <dd>{call.fromNumber}</dd>
              </div>
              <div>
                <dt>To</dt>
                <dd>{call.toNumber}</dd>
              </div>
              <div>
                <dt>Started</dt>
                <dd>{formatDate(call.startedAt)}</dd>
              </div>
              <div>
                <dt>Answered</dt>
                <dd>{formatDate(call.answeredAt)}</dd>
              </div>
              {call.answeredBy && (
                <div>
                  <dt>Answered by</dt>
                  <dd>{answeredByInWords(call.answeredBy)}</dd>
                </div>
              )}
              <div>
                <dt>Ended</dt>
                <dd>{formatDate(call.endedAt)}</dd>
              </div>
              <div>
                <dt>Duration</dt>
                <dd>{formatDuration(call.durationSec)}</dd>
              </div>
              <div>
                <dt>Attempt</dt>
                <dd>{call.attempt}</dd>
              </div>
            </dl>
            {call.failureReason && <p class="warning">{call.failureReason}</p>}
            {call.campaignId && (
              <p>
                <a href={`#/campaigns/${call.campaignId}`}>Its campaign</a>
              </p>
            )}
            {call.recordingUrl && <RecordingPlayer url={call.recordingUrl} callId={call.id} />}
          </section>

          <section aria-labelledby="call-transcript-title">
            <h2 id="call-transcript-title">Transcript</h2>
            <ErrorMessage error={followError} />
            <div class="call-transcript">
              {call.transcript.length === 0 ? (
                <Empty>{isLive(call) ? 'Nothing has been said yet.' : 'Nothing was said on this call.'}</Empty>
              ) : null}
              {/* Always in the page while live, so the turns appended to it are announced. */}
              {(call.transcript.length > 0 || isLive(call)) && <Transcript turns={call.transcript} live={isLive(call)} />}
            </div>
          </section>

          <section aria-labelledby="call-outcomes-title">
            <h2 id="call-outcomes-title">Outcomes</h2>
            {call.outcomes.length === 0 ? (
              <Empty>No tool recorded an outcome on this call.</Empty>
            ) : (
              <DataTable
                rows={call.outcomes}
                rowKey={(outcome) => `${outcome.type} ${outcome.at} ${outcome.toolCallId ?? ''}`}
                columns={[
                  { header: 'Outcome', cell: (outcome) => words(outcome.type), rowHeader: true },
                  { header: 'At', cell: (outcome) => formatDate(outcome.at) },
                  {
                    header: 'Details',
                    cell: (outcome) =>
                      Object.keys(outcome.data).length === 0 ? (
                        '—'
                      ) : (
                        <dl class="call-data">
                          {Object.entries(outcome.data).map(([key, value]) => (
                            <div key={key}>
                              <dt>{key}</dt>
                              <dd>{json(value)}</dd>
                            </div>
                          ))}
                        </dl>
                      ),
                  },
                ]}
              />
            )}
          </section>

          <section aria-labelledby="call-cost-title">
            <h2 id="call-cost-title">Cost and usage</h2>
            {!call.cost || !call.usage ? (
              <Empty>{isLive(call) ? 'Priced when the call ends.' : 'This call was not charged.'}</Empty>
            ) : (
              <div class="call-cost">
                <DataTable
                  caption="Cost by component"
                  rows={COST_PARTS}
                  rowKey={([part]) => part}
                  columns={[
                    { header: 'Component', cell: ([, label]) => label, rowHeader: true },
                    { header: 'Cost', cell: ([part]) => money(call.cost![part]), className: 'number', headerClass: 'number' },
                  ]}
                  foot={
                    <tr>
                      <th scope="row">Total</th>
                      <td class="number">
                        <strong>{money(call.cost.total)}</strong>
                      </td>
                    </tr>
                  }
                />
                <DataTable
                  caption="Usage"
                  rows={usageRows(call.usage)}
                  rowKey={([label]) => label}
                  columns={[
                    { header: 'Component', cell: ([label]) => label, rowHeader: true },
                    { header: 'Used', cell: ([, used]) => used },
                  ]}
                />
              </div>
            )}
          </section>

          <section aria-labelledby="call-messages-title">
            <h2 id="call-messages-title">Messages after the call</h2>
            <ErrorMessage error={messages.error} />
            {messages.data && messages.data.data.length === 0 && <Empty>No message was sent after this call.</Empty>}
            {messages.data && messages.data.data.length > 0 && (
              <DataTable
                rows={messages.data.data}
                rowKey={(message) => message.id}
                columns={[
                  { header: 'Channel', cell: (message) => message.channel },
                  { header: 'To', cell: (message) => message.toNumber },
                  { header: 'Message', cell: (message) => message.body ?? `Template ${message.templateName ?? '—'}` },
                  {
                    header: 'Status',
                    cell: (message) => (
                      <>
                        <Status value={message.status} />
                        {message.failureReason && <div class="hint">{message.failureReason}</div>}
                      </>
                    ),
                  },
                  { header: 'Sent', cell: (message) => formatDate(message.sentAt ?? message.createdAt) },
                ]}
              />
            )}
          </section>

          <section aria-labelledby="call-scorecard-title">
            <h2 id="call-scorecard-title">Scorecard</h2>
            <ErrorMessage error={checks.error ?? scorecards.error} />
            {scorecards.data && !scorecard && (
              <Empty>
                {checks.data?.checks.length === 0 ? (
                  <>
                    Not scored: the <a href="#/scorecard">scorecard</a> has no checks.
                  </>
                ) : isLive(call) ? (
                  'Scored when the call ends.'
                ) : scorecards.waiting ? (
                  'Being scored…'
                ) : (
                  'Not scored: it ended before the checks were set, or the contact said nothing.'
                )}
              </Empty>
            )}
            {scorecard && (
              <div class="card" data-testid="call-scorecard">
                <p>
                  <ScorecardVerdict scorecard={scorecard} /> Scored {formatDate(scorecard.scoredAt)} against{' '}
                  <a href="#/scorecard">the scorecard</a>; cost {money(scorecard.cost)}.
                </p>
                <AssertionVerdicts verdicts={scorecard.checks} />
              </div>
            )}
          </section>

          <section aria-labelledby="call-analytics-title">
            <h2 id="call-analytics-title">Analytics record</h2>
            <ErrorMessage error={results.error} />
            {results.data && !result && (
              <Empty>
                {isLive(call) ? 'Written when the call ends.' : results.waiting ? 'Being written…' : 'No analytics record for this call.'}
              </Empty>
            )}
            {result && (
              <div class="card">
                <dl class="call-facts">
                  <div>
                    <dt>Status</dt>
                    <dd>{result.status}</dd>
                  </div>
                  <div>
                    <dt>Outcome</dt>
                    <dd>{words(result.outcome)}</dd>
                  </div>
                  <div>
                    <dt>Extracted</dt>
                    <dd>{formatDate(result.extractedAt)}</dd>
                  </div>
                </dl>
                <h3>Summary</h3>
                <p>{result.summary ?? <span class="empty">No summary: no model read this call.</span>}</p>
                <h3>Fields</h3>
                {Object.keys(result.fields).length === 0 ? (
                  <Empty>No fields were extracted.</Empty>
                ) : (
                  <DataTable
                    rows={Object.entries(result.fields)}
                    rowKey={([name]) => name}
                    columns={[
                      { header: 'Field', cell: ([name]) => name, rowHeader: true },
                      { header: 'Value', cell: ([, value]) => (value === null || value === undefined ? '—' : json(value)) },
                    ]}
                  />
                )}
              </div>
            )}
          </section>
        </div>
      )}
    </>
  );
}
