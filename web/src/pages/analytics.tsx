import type { Agent, AnalyticsResult } from '../../../src/api-types.ts';
import { api, query, type Page } from '../api.ts';
import {
  DataTable,
  Empty,
  ErrorMessage,
  Form,
  formatDate,
  namedOptions,
  PageTitle,
  Pagination,
  Select,
  useFilter,
  useLoad,
} from '../ui.tsx';

const PAGE_SIZE = 25;

const fieldText = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));

/** What was learnt from each conversation: its outcome, the model's summary and the fields an agent extracts (set on the agent's page). */
export function AnalyticsPage(_props: { params: Record<string, string> }) {
  const { value: agentId, set: setAgentId, page, setPage } = useFilter();
  const agents = useLoad(() => api<Page<Agent>>('GET', '/agents?limit=200'), []);
  const results = useLoad(
    () => api<Page<AnalyticsResult>>('GET', `/analytics/results${query({ agent_id: agentId, page, limit: PAGE_SIZE })}`),
    [agentId, page],
  );
  const agentName = (id: string | null) => (id ? (agents.data?.data.find((agent) => agent.id === id)?.name ?? '…') : '—');
  return (
    <>
      <PageTitle>Call results</PageTitle>
      <p class="hint">
        One record per call: what it came to, a summary, and the fields its agent extracts (choose them on the agent's page).
      </p>
      <Form class="filters" role="search" aria-label="Filter results">
        <Select label="Agent" value={agentId} onValue={setAgentId} options={namedOptions(agents.data?.data, ['', 'All agents'])} />
      </Form>
      <ErrorMessage error={results.error ?? agents.error} />
      {results.data && results.data.total === 0 && <Empty>No results yet: each call adds one when it ends.</Empty>}
      {results.data && results.data.total > 0 && (
        <>
          <DataTable
            rows={results.data.data}
            rowKey={(result) => result.id}
            columns={[
              {
                header: 'Call',
                rowHeader: true,
                cell: (result) => <a href={`#/calls/${result.sessionId}`}>{formatDate(result.extractedAt)}</a>,
              },
              { header: 'Agent', cell: (result) => agentName(result.agentId) },
              { header: 'Outcome', cell: (result) => result.outcome.replaceAll('_', ' ') },
              {
                header: 'Summary and fields',
                cell: (result) => (
                  <>
                    {result.summary ?? <span class="hint">{result.status}</span>}
                    {Object.keys(result.fields).length > 0 && (
                      <dl class="result-fields">
                        {Object.entries(result.fields).map(([name, value]) => (
                          <div key={name}>
                            <dt>{name}</dt>
                            <dd>{fieldText(value)}</dd>
                          </div>
                        ))}
                      </dl>
                    )}
                  </>
                ),
              },
            ]}
          />
          <Pagination page={results.data.page} limit={results.data.limit} total={results.data.total} onPage={setPage} />
        </>
      )}
    </>
  );
}
