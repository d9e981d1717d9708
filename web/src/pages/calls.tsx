import './calls.css';
import { useState } from 'preact/hooks';
import type { Agent, Call, Campaign, CampaignContact } from '../../../src/api-types.ts';
import { api, query, type Page } from '../api.ts';
import { useProfile } from '../profile.ts';
import { callStateInWords, outcomeInWords } from '../words.ts';
import {
  ActionsHeader,
  DataTable,
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

/** The call log: filters, pagination, each call's contact, campaign, agent and state in words; a row opens the call's page. */
export function CallsPage(_props: { params: Record<string, string> }) {
  const { profile } = useProfile();
  const [filters, setFilters] = useState<Filters>(filtersFromLink);
  const [page, setPage] = useState(1);
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
      return { ...found, contacts: await campaignContactsOf(found.data) };
    },
    [filters, page],
    anyLive ? LIVE_REFRESH_MS : undefined,
  );

  const filterBy = (name: keyof Filters) => (value: string) => {
    setFilters({ ...filters, [name]: value });
    setPage(1);
  };
  const money = (amount: string) => (profile ? formatMoney(amount, profile.wallet.currency) : amount);
  const campaignName = (id: string | null) =>
    id ? (campaigns.data?.data.find((campaign) => campaign.id === id)?.name ?? '…') : 'Incoming';
  const agentName = (id: string | null) => (id ? (agents.data?.data.find((agent) => agent.id === id)?.name ?? '…') : '—');

  return (
    <>
      <PageTitle
        actions={
          <a class="button" href="#/calls/simulate">
            Place a test call
          </a>
        }
      >
        Calls
      </PageTitle>
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
          options={[['', 'Any outcome'], ...OUTCOMES.map((outcome): [string, string] => [outcome, outcomeInWords(outcome)])]}
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
          <DataTable
            tableClass="calls"
            rows={calls.data.data}
            rowKey={(call) => call.id}
            columns={[
              { header: 'When', cell: (call) => formatDate(call.startedAt), className: 'when' },
              {
                header: 'Contact',
                rowHeader: true,
                cell: (call) => {
                  const contact = call.contactId ? calls.data!.contacts.get(call.contactId) : undefined;
                  return (
                    <a href={`#/calls/${call.id}`} aria-label={`Details of the call with ${contact?.name ?? otherParty(call)}`}>
                      {contact?.name ?? otherParty(call)}
                      {contact?.name && <small class="number">{otherParty(call)}</small>}
                    </a>
                  );
                },
              },
              {
                header: 'Campaign',
                cell: (call) =>
                  call.campaignId ? <a href={`#/campaigns/${call.campaignId}`}>{campaignName(call.campaignId)}</a> : 'Incoming call',
              },
              { header: 'Agent', cell: (call) => agentName(call.agentId) },
              {
                header: 'State',
                cell: (call) => {
                  const contact = call.contactId ? calls.data!.contacts.get(call.contactId) : undefined;
                  const retrying = contact?.lastCallId === call.id && contact.status === 'PENDING';
                  return <Status value={call.outcome ?? call.status} label={callStateInWords(call, retrying)} />;
                },
              },
              { header: 'Length', cell: (call) => formatDuration(call.durationSec), className: 'number-cell' },
              { header: 'Cost', cell: (call) => (call.cost ? money(call.cost.total) : '—'), className: 'number-cell' },
              {
                header: <ActionsHeader />,
                cell: (call) => isLive(call) && <HangUpButton call={call} onDone={() => void calls.reload()} />,
              },
            ]}
          />
          <Pagination page={calls.data.page} limit={calls.data.limit} total={calls.data.total} onPage={setPage} />
        </>
      )}
    </>
  );
}

/**
 * The campaign contacts behind a page of calls (their names, and whether each waits for another
 * attempt), read from the campaigns the calls belong to: a call carries only the contact's id.
 */
async function campaignContactsOf(calls: Call[]): Promise<Map<string, CampaignContact>> {
  const campaignIds = [...new Set(calls.flatMap((call) => (call.campaignId && call.contactId ? [call.campaignId] : [])))];
  const pages = await Promise.all(
    campaignIds.map((id) =>
      api<Page<CampaignContact>>('GET', `/campaigns/${id}/contacts?limit=200`).catch(() => undefined /* deleted since */),
    ),
  );
  return new Map(pages.flatMap((found) => found?.data ?? []).map((contact) => [contact.contactId, contact]));
}
