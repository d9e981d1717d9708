import type { CallScorecard, PutScorecardBody, Scorecard } from '../../../src/api-types.ts';
import { useState } from 'preact/hooks';
import { api, query, type Page } from '../api.ts';
import {
  DataTable,
  Empty,
  ErrorMessage,
  Form,
  formatDate,
  formatMoney,
  PageTitle,
  Pagination,
  JsonField,
  Select,
  Status,
  useAction,
  useFilter,
  useJsonText,
  useLoad,
} from '../ui.tsx';
import { useProfile } from '../profile.ts';
import { AssertionVerdicts } from './agent-suites.tsx';

type Check = Scorecard['checks'][number];
const PAGE_SIZE = 25;

/** The checks a new scorecard starts from: the agent says it is automated and promises nothing. */
const EXAMPLE: Check[] = [
  { name: 'AI disclosed', assertion: { type: 'said', phrase: 'automated assistant' } },
  { name: 'No forbidden promise', assertion: { type: 'never_said', phrase: 'guaranteed' } },
];

/** A call's scorecard verdict in words, as a badge. */
export const ScorecardVerdict = ({ scorecard }: { scorecard: CallScorecard }) => (
  <Status value={scorecard.passed ? 'passed' : 'failed'} label={scorecard.passed ? 'Passed' : 'Failed'} />
);

/**
 * The tenant's scorecard: the checks every ended call is held to, edited as JSON (the API names the
 * check at fault), and the calls' scorecards, newest first, the failed ones alone on demand.
 */
export function ScorecardPage(_props: { params: Record<string, string> }) {
  const scorecard = useLoad(() => api<Scorecard>('GET', '/scorecard'), []);
  return (
    <>
      <PageTitle>Scorecard</PageTitle>
      <p class="hint">
        Every call that ends with the contact's words in its transcript is held to these checks, as a test suite judges a scenario: phrases,
        tools and the end reason from the transcript; fields and rubrics by the agent's model (billed like a test chat), skipped when it has
        none. A campaign call's scorecard is sealed into the compliance records; a failed one is sent as the call.scorecard_failed webhook.
      </p>
      <ErrorMessage error={scorecard.error} />
      {scorecard.data && <ChecksEditor key={scorecard.data.updatedAt ?? 'none'} scorecard={scorecard.data} onSaved={scorecard.reload} />}
      <CallScorecards />
    </>
  );
}

function ChecksEditor({ scorecard, onSaved }: { scorecard: Scorecard; onSaved: () => Promise<void> }) {
  const checks = useJsonText(scorecard.updatedAt ? scorecard.checks : EXAMPLE);
  const [saved, setSaved] = useState(false);
  const save = useAction(async () => {
    setSaved(false);
    const parsed = checks.parsed();
    if (!parsed) return;
    // The API checks each check's shape and answers each problem with its path.
    await api<Scorecard>('PUT', '/scorecard', { checks: parsed.value as Check[] } satisfies PutScorecardBody);
    setSaved(true);
    await onSaved();
  });
  return (
    <section aria-labelledby="checks-title">
      <h2 id="checks-title">Checks</h2>
      <p>
        {scorecard.updatedAt
          ? `${scorecard.checks.length} checks, set ${formatDate(scorecard.updatedAt)}; calls that end from then on are scored.`
          : 'No checks set: calls are not scored. An example to start from is below.'}
      </p>
      <Form class="grid-form suite-editor" onSubmit={save.run}>
        <JsonField
          label="Checks (JSON)"
          json={checks}
          hint="Up to 20 checks, each a name and one assertion of a test suite: said, never_said, tool_called, tool_not_called, end_reason, field, rubric. An empty list stops scoring. See docs/testing-agents.md."
          error={save.error}
          path="/checks"
        />
        <ErrorMessage error={save.error} />
        <div class="wide actions">
          <button type="submit" class="primary" disabled={save.busy}>
            Save checks
          </button>
          {saved && <span role="status">Saved.</span>}
        </div>
      </Form>
    </section>
  );
}

/** The calls' scorecards, newest first, with each check's verdict and a link to the call. */
function CallScorecards() {
  const { profile } = useProfile();
  const filter = useFilter('');
  const scorecards = useLoad(
    () =>
      api<Page<CallScorecard>>(
        'GET',
        `/call-scorecards${query({ passed: filter.value === 'failed' ? false : undefined, page: filter.page, limit: PAGE_SIZE })}`,
      ),
    [filter.value, filter.page],
  );
  return (
    <section aria-labelledby="call-scorecards-title">
      <h2 id="call-scorecards-title">Calls' scorecards</h2>
      <Form class="filters" aria-label="Filter the scorecards">
        <Select
          label="Show"
          value={filter.value}
          onValue={filter.set}
          options={[
            ['', 'Every scored call'],
            ['failed', 'Failed only'],
          ]}
        />
      </Form>
      <ErrorMessage error={scorecards.error} />
      {scorecards.data && scorecards.data.total === 0 && (
        <Empty>{filter.value === 'failed' ? 'No call failed a check.' : 'No call has been scored yet.'}</Empty>
      )}
      {scorecards.data && scorecards.data.total > 0 && (
        <>
          <DataTable
            tableClass="call-scorecards"
            rows={scorecards.data.data}
            rowKey={(row) => row.callId}
            columns={[
              { header: 'Scored', rowHeader: true, cell: (row) => <a href={`#/calls/${row.callId}`}>{formatDate(row.scoredAt)}</a> },
              { header: 'Verdict', cell: (row) => <ScorecardVerdict scorecard={row} /> },
              { header: 'Checks', cell: (row) => <AssertionVerdicts verdicts={row.checks} /> },
              { header: 'Cost', cell: (row) => (profile ? formatMoney(row.cost, profile.wallet.currency, { exact: true }) : row.cost) },
            ]}
          />
          <Pagination page={scorecards.data.page} limit={scorecards.data.limit} total={scorecards.data.total} onPage={filter.setPage} />
        </>
      )}
    </section>
  );
}
