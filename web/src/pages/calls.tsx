import './calls.css';
import { Fragment } from 'preact';
import { useState } from 'preact/hooks';
import type { Agent, Call, Campaign } from '../../../src/api-types.ts';
import { api, query, type Page } from '../api.ts';
import { useProfile } from '../profile.ts';
import { RecordingPlayer } from '../recording.tsx';
import { Transcript } from '../transcript.tsx';
import {
  Empty,
  ErrorMessage,
  Field,
  Form,
  formatDate,
  formatMoney,
  namedOptions,
  PageTitle,
  Pagination,
  Select,
  Status,
  useAction,
  useLoad,
  valueOptions,
} from '../ui.tsx';

const PAGE_SIZE = 25;
const LIVE_REFRESH_MS = 3000;
const OUTCOMES = ['ANSWERED', 'UNANSWERED', 'BUSY', 'FAILED'] satisfies NonNullable<Call['outcome']>[];

/** Any call that has not ended can still be hung up (the API accepts QUEUED ones too). */
export const isLive = (call: Call) => call.status !== 'ENDED';

export const formatDuration = (seconds: number | null) =>
  seconds === null ? '—' : `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, '0')}`;

const otherParty = (call: Call) => (call.direction === 'INCOMING' ? call.fromNumber : call.toNumber);

/** Ends one live call; the wallet is refreshed because the call's cost is charged when it ends. */
export function HangUpButton({ call, onDone }: { call: Call; onDone: () => void }) {
  const { refresh } = useProfile();
  const hangUp = useAction(async () => {
    await api('POST', `/call-logs/${call.id}/hangup`);
    refresh();
    onDone();
  });
  return (
    <>
      <button
        type="button"
        class="danger"
        disabled={hangUp.busy}
        onClick={() => void hangUp.run()}
        aria-label={`Hang up the call with ${otherParty(call)}`}
      >
        Hang up
      </button>
      <ErrorMessage error={hangUp.error} />
    </>
  );
}

interface Filters {
  agentId: string;
  campaignId: string;
  outcome: string;
  direction: string;
  from: string;
  to: string;
}

/** Filters given in the link (`#/calls?campaignId=…`), so other pages can open a filtered log. */
function filtersFromLink(): Filters {
  const linked = new URLSearchParams(location.hash.split('?')[1] ?? '');
  const get = (name: string) => linked.get(name) ?? '';
  return {
    agentId: get('agentId'),
    campaignId: get('campaignId'),
    outcome: get('outcome'),
    direction: get('direction'),
    from: get('from'),
    to: get('to'),
  };
}

/** Date inputs are local days; `to` is inclusive for people, while the API's `to` is exclusive. */
const startOfDay = (day: string, plusDays = 0) => {
  const [year, month, date] = day.split('-').map(Number);
  return new Date(year!, month! - 1, date! + plusDays).toISOString();
};

/** The call log: filters, pagination, live calls hung up one by one, transcripts on demand. */
export function CallsPage(_props: { params: Record<string, string> }) {
  const { profile } = useProfile();
  const [filters, setFilters] = useState<Filters>(filtersFromLink);
  const [page, setPage] = useState(1);
  const [expanded, setExpanded] = useState<Set<string>>(new Set());
  const agents = useLoad(() => api<Page<Agent>>('GET', '/agents?limit=200'), []);
  const campaigns = useLoad(() => api<Page<Campaign>>('GET', '/campaigns?limit=200'), []);
  const [anyLive, setAnyLive] = useState(false);
  const calls = useLoad(
    async () => {
      const found = await api<Page<Call>>(
        'GET',
        `/call-logs${query({
          ...filters,
          from: filters.from && startOfDay(filters.from),
          to: filters.to && startOfDay(filters.to, 1),
          page,
          limit: PAGE_SIZE,
        })}`,
      );
      setAnyLive(found.data.some(isLive));
      return found;
    },
    [filters, page],
    anyLive ? LIVE_REFRESH_MS : undefined,
  );

  const filterBy = (name: keyof Filters) => (value: string) => {
    setFilters({ ...filters, [name]: value });
    setPage(1);
  };
  const toggle = (id: string) => {
    const next = new Set(expanded);
    if (!next.delete(id)) next.add(id);
    setExpanded(next);
  };
  const money = (amount: string) => (profile ? formatMoney(amount, profile.wallet.currency) : amount);

  return (
    <>
      <PageTitle>Calls</PageTitle>
      <Form class="grid-form call-filters" role="search" aria-label="Filter calls">
        <Select
          label="Agent"
          value={filters.agentId}
          onValue={filterBy('agentId')}
          options={namedOptions(agents.data?.data, ['', 'All agents'])}
        />
        <Select
          label="Campaign"
          value={filters.campaignId}
          onValue={filterBy('campaignId')}
          options={namedOptions(campaigns.data?.data, ['', 'All campaigns'])}
        />
        <Select
          label="Outcome"
          value={filters.outcome}
          onValue={filterBy('outcome')}
          options={[['', 'Any outcome'], ...valueOptions(OUTCOMES)]}
        />
        <Select
          label="Direction"
          value={filters.direction}
          onValue={filterBy('direction')}
          options={[
            ['', 'Both directions'],
            ['OUTGOING', 'Outgoing'],
            ['INCOMING', 'Incoming'],
          ]}
        />
        <Field label="From (day)" type="date" value={filters.from} onValue={filterBy('from')} max={filters.to || undefined} />
        <Field label="To (day, included)" type="date" value={filters.to} onValue={filterBy('to')} min={filters.from || undefined} />
      </Form>
      <ErrorMessage error={agents.error ?? campaigns.error ?? calls.error} />
      {calls.data && calls.data.data.length === 0 && <Empty>No calls match these filters.</Empty>}
      {calls.data && calls.data.data.length > 0 && (
        <>
          <div class="table-wrap">
            <table class="calls">
              <thead>
                <tr>
                  <th scope="col">Time</th>
                  <th scope="col">Direction</th>
                  <th scope="col">From</th>
                  <th scope="col">To</th>
                  <th scope="col">Status</th>
                  <th scope="col">Outcome</th>
                  <th scope="col">Duration</th>
                  <th scope="col">Cost</th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {calls.data.data.map((call) => (
                  <Fragment key={call.id}>
                    <tr>
                      <td>{formatDate(call.startedAt)}</td>
                      <td>{call.direction === 'OUTGOING' ? 'Outgoing' : 'Incoming'}</td>
                      <td>{call.fromNumber}</td>
                      <td>{call.toNumber}</td>
                      <td>
                        <Status value={call.status} />
                      </td>
                      <td>{call.outcome ? <Status value={call.outcome} /> : '—'}</td>
                      <td>{formatDuration(call.durationSec)}</td>
                      <td>{call.cost ? money(call.cost.total) : '—'}</td>
                      <td>
                        <div class="actions">
                          {isLive(call) && <HangUpButton call={call} onDone={() => void calls.reload()} />}
                          <a class="button" href={`#/calls/${call.id}`} aria-label={`Details of the call with ${otherParty(call)}`}>
                            Details
                          </a>
                          <button
                            type="button"
                            aria-expanded={expanded.has(call.id)}
                            aria-controls={`call-${call.id}-details`}
                            onClick={() => toggle(call.id)}
                            aria-label={`Transcript of the call with ${otherParty(call)}`}
                          >
                            Transcript
                          </button>
                        </div>
                      </td>
                    </tr>
                    <tr id={`call-${call.id}-details`} class="call-details" hidden={!expanded.has(call.id)}>
                      <td colSpan={9}>
                        <div class="call-details-body">
                          <CallDetails call={call} />
                        </div>
                      </td>
                    </tr>
                  </Fragment>
                ))}
              </tbody>
            </table>
          </div>
          <Pagination page={calls.data.page} limit={calls.data.limit} total={calls.data.total} onPage={setPage} />
        </>
      )}
    </>
  );
}

function CallDetails({ call }: { call: Call }) {
  return (
    <>
      {call.failureReason && <p>{call.failureReason}</p>}
      {call.transcript.length === 0 ? (
        <Empty>No transcript: {isLive(call) ? 'the call is not over yet.' : 'nothing was said on this call.'}</Empty>
      ) : (
        <Transcript turns={call.transcript} />
      )}
      {call.recordingUrl && <RecordingPlayer url={call.recordingUrl} callId={call.id} />}
    </>
  );
}
