import type {
  Agent,
  AgentVersion,
  CreateTestSuiteBody,
  PassRates,
  TestSuite,
  TestSuiteRun,
  TestSuiteRunDetail,
  UpdateTestSuiteBody,
} from '../../../src/api-types.ts';
import { useState } from 'preact/hooks';
import { api, query, type Page } from '../api.ts';
import { useProfile } from '../profile.ts';
import {
  DataTable,
  Empty,
  ErrorMessage,
  Field,
  fieldErrorOf,
  Form,
  formatDate,
  formatMoney,
  JsonField,
  OpenButton,
  Select,
  Status,
  useAction,
  useJsonText,
  useLoad,
} from '../ui.tsx';
import { percent, SUITE_RUN_STATUS_WORDS, VERDICT_WORDS, versionInWords } from '../words.ts';

type Scenario = TestSuite['scenarios'][number];
type Assertion = Scenario['assertions'][number];
const RUN_REFRESH_MS = 1000;
const finished = (run: TestSuiteRun) => run.status === 'PASSED' || run.status === 'FAILED';

/** A first scenario to start a suite from: the caller's lines and what the agent must say. */
const EXAMPLE: Scenario[] = [
  {
    name: 'greets the caller',
    script: ['Hello?'],
    assertions: [
      { type: 'said', phrase: 'hello' },
      { type: 'never_said', phrase: 'I cannot help' },
    ],
  },
];

type AssertionVerdict = TestSuiteRunDetail['results'][number]['assertions'][number];

/** An assertion in a few words: "said “hello”", "called check_balance". */
function assertionInWords(assertion: Assertion): string {
  switch (assertion.type) {
    case 'tool_called':
      return `called ${assertion.tool}${assertion.arguments ? ` with ${JSON.stringify(assertion.arguments)}` : ''}`;
    case 'tool_not_called':
      return `never called ${assertion.tool}`;
    case 'said':
      return `said “${assertion.phrase}”`;
    case 'never_said':
      return `never said “${assertion.phrase}”`;
    case 'end_reason':
      return `ended: ${assertion.equals ?? 'never'}`;
    case 'field':
      return `field ${assertion.field} is ${JSON.stringify(assertion.equals)}`;
    case 'rubric':
      return `met the rubric “${assertion.rubric}”`;
  }
}

/**
 * The agent's test suites: each suite's scenarios edited as JSON (the API checks them and names
 * the scenario at fault), run against the live agent or a published version, the run's verdicts
 * scenario by scenario, and the pass rates of every version run, side by side.
 */
export function SuitesSection({ agent, versions }: { agent: Agent; versions: AgentVersion[] | undefined }) {
  const suites = useLoad(() => api<Page<TestSuite>>('GET', `/test-suites${query({ agentId: agent.id, limit: 100 })}`), [agent.id]);
  const [open, setOpen] = useState<string | undefined>(undefined);
  const suite = suites.data?.data.find((found) => found.id === open);

  return (
    <section class="agent-suites" aria-labelledby="suites-title">
      <h2 id="suites-title">Test suites</h2>
      <p class="hint">
        Scenarios the agent is tested against, through the engine that runs its calls: what the caller says, what its tools answer and what
        must be true of the conversation. Without a model, the retrieval agent answers and the assertions that need a model are skipped.
      </p>
      <ErrorMessage error={suites.error} />
      {suites.data && suites.data.total === 0 && <Empty>No test suite yet.</Empty>}
      {suites.data && suites.data.total > 0 && (
        <DataTable
          rows={suites.data.data}
          rowKey={(row) => row.id}
          columns={[
            {
              header: 'Suite',
              rowHeader: true,
              cell: (row) => (
                <OpenButton id={row.id} open={open} setOpen={setOpen}>
                  {row.name}
                </OpenButton>
              ),
            },
            { header: 'Scenarios', cell: (row) => row.scenarios.length },
            { header: 'On publish', cell: (row) => (row.runOnPublish ? 'Runs against each new version' : 'Only when asked') },
            { header: 'Changed', cell: (row) => formatDate(row.updatedAt) },
          ]}
        />
      )}
      <p class="actions">
        <button type="button" aria-expanded={open === 'new'} onClick={() => setOpen(open === 'new' ? undefined : 'new')}>
          New test suite
        </button>
      </p>
      {open === 'new' && (
        <SuiteEditor
          key="new"
          agentId={agent.id}
          onSaved={async (saved) => {
            await suites.reload();
            setOpen(saved.id);
          }}
        />
      )}
      {suite && (
        <div class="card suite" key={suite.id}>
          <h3>{suite.name}</h3>
          <SuiteRuns suite={suite} versions={versions} />
          <details class="suite-edit">
            <summary>Edit “{suite.name}”</summary>
            <SuiteEditor key={suite.updatedAt} agentId={agent.id} suite={suite} onSaved={() => suites.reload()} />
          </details>
        </div>
      )}
    </section>
  );
}

/** A suite's name, whether publishing runs it, and its scenarios as JSON; the API validates them. */
function SuiteEditor({
  agentId,
  suite,
  onSaved,
}: {
  agentId: string;
  suite?: TestSuite;
  onSaved: (saved: TestSuite) => void | Promise<void>;
}) {
  const [name, setName] = useState(suite?.name ?? '');
  const [runOnPublish, setRunOnPublish] = useState(suite?.runOnPublish ?? true);
  const scenarios = useJsonText(suite?.scenarios ?? EXAMPLE);
  const [saved, setSaved] = useState(false);

  const save = useAction(async () => {
    setSaved(false);
    const parsed = scenarios.parsed();
    if (!parsed) return;
    // The API checks the scenarios' shape and answers each problem with its path.
    const fields = { name, runOnPublish, scenarios: parsed.value as Scenario[] };
    const answer = suite
      ? await api<TestSuite>('PATCH', `/test-suites/${suite.id}`, fields satisfies UpdateTestSuiteBody)
      : await api<TestSuite>('POST', '/test-suites', { agentId, ...fields } satisfies CreateTestSuiteBody);
    setSaved(true);
    await onSaved(answer);
  });

  return (
    <Form class="grid-form suite-editor" onSubmit={save.run}>
      <Field label="Suite name" value={name} onValue={setName} required maxLength={200} problem={fieldErrorOf(save.error, '/name')} />
      <label class="agent-check">
        <input type="checkbox" checked={runOnPublish} onChange={(event) => setRunOnPublish(event.currentTarget.checked)} />
        <span>Run against each version published</span>
      </label>
      <JsonField
        label="Scenarios (JSON)"
        json={scenarios}
        hint="A list of 1 to 200 scenarios: name, script (the caller's lines) or persona, contact, mocks and assertions (said, never_said, tool_called, tool_not_called, end_reason, field, rubric). See docs/testing-agents.md."
        error={save.error}
        path="/scenarios"
      />
      <ErrorMessage error={save.error} />
      <div class="wide actions">
        <button type="submit" class="primary" disabled={save.busy}>
          {suite ? 'Save suite' : 'Create suite'}
        </button>
        {saved && <span role="status">Saved.</span>}
      </div>
    </Form>
  );
}

/** Runs the suite (the live agent or a version), follows the run to its end and shows its verdicts, then the pass rates per version. */
function SuiteRuns({ suite, versions }: { suite: TestSuite; versions: AgentVersion[] | undefined }) {
  const [version, setVersion] = useState('');
  const [voice, setVoice] = useState(false);
  const [runId, setRunId] = useState<string | undefined>(undefined);
  const [over, setOver] = useState(true);
  const rates = useLoad(() => api<PassRates>('GET', `/test-suites/${suite.id}/pass-rates`), [suite.id]);
  const run = useLoad(
    async () => {
      if (!runId) return undefined;
      const found = await api<TestSuiteRunDetail>('GET', `/test-suite-runs/${runId}`);
      if (finished(found)) {
        setOver(true);
        void rates.reload();
      }
      return found;
    },
    [runId],
    over ? undefined : RUN_REFRESH_MS,
  );
  const start = useAction(async () => {
    const queued = await api<TestSuiteRun>(
      'POST',
      `/test-suites/${suite.id}/runs${query({ version: version || undefined, voice: voice || undefined })}`,
    );
    setOver(false);
    setRunId(queued.id);
  });

  return (
    <>
      <Form class="inline-form" onSubmit={start.run}>
        <Select
          label="Run against"
          value={version}
          onValue={setVersion}
          options={[
            ['', 'The agent as it is now'],
            ...(versions ?? []).map((found): [string, string] => [String(found.version), versionInWords(found.version)]),
          ]}
        />
        <label class="agent-check">
          <input type="checkbox" checked={voice} onChange={(event) => setVoice(event.currentTarget.checked)} />
          <span>Through the voice pipeline (the caller spoken by eSpeak NG, heard by the agent's speech-to-text)</span>
        </label>
        <button type="submit" class="primary" disabled={start.busy || !over}>
          Run suite
        </button>
      </Form>
      <ErrorMessage error={start.error ?? run.error} />
      {run.data && <RunResults run={run.data} />}
      <PassRatesTable rates={rates} />
    </>
  );
}

/** Each assertion's verdict (a scorecard's check named before it), what it asserts and the sentence of what was found. */
export function AssertionVerdicts({ verdicts }: { verdicts: readonly (AssertionVerdict & { name?: string })[] }) {
  return (
    <ul class="verdicts">
      {verdicts.map((verdict, index) => (
        <li key={index}>
          <Status value={verdict.verdict} label={VERDICT_WORDS[verdict.verdict]} /> {verdict.name && <strong>{verdict.name}: </strong>}
          {assertionInWords(verdict.assertion)}: <span class="why">{verdict.why}</span>
          {verdict.reasoning && <div class="hint">{verdict.reasoning}</div>}
        </li>
      ))}
    </ul>
  );
}

function RunResults({ run }: { run: TestSuiteRunDetail }) {
  const { profile } = useProfile();
  return (
    <div class="suite-run" data-testid="suite-run">
      <p aria-live="polite">
        <Status value={run.status} label={SUITE_RUN_STATUS_WORDS[run.status]} /> {versionInWords(run.agentVersion)}
        {run.voice ? ' through the voice pipeline' : ''}: {run.passed} passed, {run.failed} failed, {run.skipped} skipped of {run.scenarios}
        ; pass rate {percent(run.passRate)}; cost{' '}
        {profile ? formatMoney(run.costTotal, profile.wallet.currency, { exact: true }) : run.costTotal}.
      </p>
      <ol class="suite-results">
        {run.results.map((result) => (
          <li key={result.index}>
            <strong>{result.name}</strong> <Status value={result.status} label={VERDICT_WORDS[result.status]} />
            {result.reason && <span class="hint"> {result.reason}</span>}
            <AssertionVerdicts verdicts={result.assertions} />
          </li>
        ))}
      </ol>
    </div>
  );
}

/**
 * Every version run, side by side: its pass rate over all its finished runs, then, scenario by
 * scenario, the verdict of its latest run.
 */
function PassRatesTable({ rates }: { rates: ReturnType<typeof useLoad<PassRates>> }) {
  const versions = rates.data?.versions ?? [];
  const latest = useLoad(
    () => Promise.all(versions.map((row) => api<TestSuiteRunDetail>('GET', `/test-suite-runs/${row.latest.id}`))),
    [versions.map((row) => row.latest.id).join()],
  );
  if (rates.error) return <ErrorMessage error={rates.error} />;
  if (versions.length === 0) return <Empty>Not run yet.</Empty>;
  const names = [...new Set((latest.data ?? []).flatMap((run) => run.results.map((result) => result.name)))];
  const verdictOf = (column: number, name: string) => latest.data?.[column]?.results.find((result) => result.name === name);
  return (
    <div class="table-wrap">
      <table class="pass-rates">
        <caption>Pass rates per version</caption>
        <thead>
          <tr>
            <th scope="col">Scenario</th>
            {versions.map((row) => (
              <th scope="col" key={row.agentVersion ?? 'live'}>
                {versionInWords(row.agentVersion)}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          <tr>
            <th scope="row">Pass rate</th>
            {versions.map((row) => (
              <td key={row.agentVersion ?? 'live'} class="metric-cell">
                {percent(row.passRate)}
              </td>
            ))}
          </tr>
          <tr>
            <th scope="row">Finished runs</th>
            {versions.map((row) => (
              <td key={row.agentVersion ?? 'live'}>{row.runs}</td>
            ))}
          </tr>
          {names.map((name) => (
            <tr key={name}>
              <th scope="row">{name}</th>
              {versions.map((row, column) => {
                const result = verdictOf(column, name);
                return (
                  <td key={row.agentVersion ?? 'live'}>
                    {result ? <Status value={result.status} label={VERDICT_WORDS[result.status]} /> : '—'}
                  </td>
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
