import { useState } from 'preact/hooks';
import type {
  AddConsentBody,
  AddDncBody,
  Campaign,
  ChainVerification,
  ComplianceRecord,
  Consent,
  ConsentChannel,
  DncEntry,
} from '../../../src/api-types.ts';
import { api, query, type Page } from '../api.ts';
import {
  ActionsHeader,
  DataTable,
  Empty,
  ErrorMessage,
  Field,
  fieldErrorOf,
  Form,
  formatDate,
  namedOptions,
  PageTitle,
  Pagination,
  PhoneField,
  Select,
  Status,
  useAction,
  useFilter,
  useLoad,
} from '../ui.tsx';

const PAGE_SIZE = 25;

const DNC_SOURCE_WORDS: Record<DncEntry['source'], string> = {
  api: 'Added here or by the API',
  import: 'Imported from a file',
  call: 'Asked on a call',
  sms: 'Replied to an SMS',
  whatsapp: 'Replied on WhatsApp',
};

/** The tenant's do-not-call list: no campaign dials a number on it, and no message is sent to it. */
export function DoNotCallPage(_props: { params: Record<string, string> }) {
  const { value: search, set: setSearch, page, setPage } = useFilter();
  const entries = useLoad(() => api<Page<DncEntry>>('GET', `/dnc${query({ search, page, limit: PAGE_SIZE })}`), [search, page]);
  const [phoneNumber, setPhoneNumber] = useState('');
  const [reason, setReason] = useState('');
  const add = useAction(async () => {
    await api<DncEntry>('POST', '/dnc', { phoneNumber, ...(reason ? { reason } : {}) } satisfies AddDncBody);
    setPhoneNumber('');
    setReason('');
    await entries.reload();
  });
  const remove = useAction(async (entry: DncEntry) => {
    await api('DELETE', `/dnc/${encodeURIComponent(entry.phoneNumber)}`);
    await entries.reload();
  });
  return (
    <>
      <PageTitle actions={<a href="/api/v1/dnc/export">Download as CSV</a>}>Do not call</PageTitle>
      <p class="hint">
        No campaign dials a number on this list and no message is sent to it. People land here when they ask on a call or reply STOP to a
        message; add a number yourself when someone asks you another way.
      </p>
      <section aria-labelledby="add-dnc-title">
        <h2 id="add-dnc-title">Add a number</h2>
        <Form class="grid-form" onSubmit={add.run}>
          <PhoneField
            value={phoneNumber}
            onValue={setPhoneNumber}
            placeholder="+14155550100"
            problem={fieldErrorOf(add.error, '/phoneNumber')}
          />
          <Field
            label="Reason (optional)"
            value={reason}
            onValue={setReason}
            maxLength={500}
            problem={fieldErrorOf(add.error, '/reason')}
          />
          <ErrorMessage error={add.error} />
          <div class="wide actions">
            <button type="submit" class="primary" disabled={add.busy}>
              Add to the list
            </button>
          </div>
        </Form>
      </section>
      <section aria-labelledby="dnc-title">
        <h2 id="dnc-title">Numbers on the list</h2>
        <Form class="filters" role="search" aria-label="Search the do-not-call list">
          <Field label="Number contains" type="search" value={search} onValue={setSearch} maxLength={32} />
        </Form>
        <ErrorMessage error={entries.error ?? remove.error} />
        {entries.data && entries.data.total === 0 && <Empty>{search ? 'No number on the list matches.' : 'The list is empty.'}</Empty>}
        {entries.data && entries.data.total > 0 && (
          <>
            <DataTable
              rows={entries.data.data}
              rowKey={(entry) => entry.phoneNumber}
              columns={[
                { header: 'Number', cell: (entry) => <span id={`dnc-${entry.phoneNumber}`}>{entry.phoneNumber}</span> },
                { header: 'How', cell: (entry) => DNC_SOURCE_WORDS[entry.source] },
                { header: 'Reason', cell: (entry) => entry.reason ?? '—' },
                { header: 'Added', cell: (entry) => formatDate(entry.createdAt) },
                {
                  header: <ActionsHeader />,
                  cell: (entry) => (
                    <button
                      type="button"
                      class="danger"
                      disabled={remove.busy}
                      aria-describedby={`dnc-${entry.phoneNumber}`}
                      onClick={() => void remove.run(entry)}
                    >
                      Take off the list
                    </button>
                  ),
                },
              ]}
            />
            <Pagination page={entries.data.page} limit={entries.data.limit} total={entries.data.total} onPage={setPage} />
          </>
        )}
      </section>
    </>
  );
}

const CHANNELS: [ConsentChannel, string][] = [
  ['voice', 'Voice calls'],
  ['sms', 'SMS'],
  ['whatsapp', 'WhatsApp'],
];

const consentState = (consent: Consent) => (consent.valid ? 'Valid' : consent.revokedAt ? 'Revoked' : 'Expired');

/** Consents people gave to be called or messaged; a campaign that requires consent dials only numbers with a valid one. */
export function ConsentsPage(_props: { params: Record<string, string> }) {
  const { value: phoneFilter, set: setPhoneFilter, page, setPage } = useFilter();
  const consents = useLoad(
    () => api<Page<Consent>>('GET', `/consents${query({ phoneNumber: phoneFilter, page, limit: PAGE_SIZE })}`),
    [phoneFilter, page],
  );
  const [phoneNumber, setPhoneNumber] = useState('');
  const [channel, setChannel] = useState<ConsentChannel>('voice');
  const [source, setSource] = useState('');
  const [expiresAt, setExpiresAt] = useState('');
  const add = useAction(async () => {
    const body = {
      phoneNumber,
      channel,
      source,
      ...(expiresAt ? { expiresAt: new Date(expiresAt).toISOString() } : {}),
    } satisfies AddConsentBody;
    await api<Consent>('POST', '/consents', body);
    setPhoneNumber('');
    setSource('');
    setExpiresAt('');
    await consents.reload();
  });
  const revoke = useAction(async (consent: Consent) => {
    await api('POST', `/consents/${consent.id}/revoke`);
    await consents.reload();
  });
  const problem = (path: string) => fieldErrorOf(add.error, path);
  return (
    <>
      <PageTitle>Consents</PageTitle>
      <p class="hint">
        Who agreed to be called or messaged, where and until when. A campaign that requires consent (its own setting, or the account's under
        the API's compliance settings) dials only numbers with a valid consent for voice.
      </p>
      <section aria-labelledby="add-consent-title">
        <h2 id="add-consent-title">Record a consent</h2>
        <Form class="grid-form" onSubmit={add.run}>
          <PhoneField value={phoneNumber} onValue={setPhoneNumber} placeholder="+14155550100" problem={problem('/phoneNumber')} />
          <Select label="Channel" value={channel} onValue={setChannel} options={CHANNELS} problem={problem('/channel')} />
          <Field
            label="Where it was given"
            value={source}
            onValue={setSource}
            required
            maxLength={200}
            hint="Such as web-form, call or paper form."
            problem={problem('/source')}
          />
          <Field
            label="Expires (optional)"
            type="datetime-local"
            value={expiresAt}
            onValue={setExpiresAt}
            hint="Empty: until it is revoked."
            problem={problem('/expiresAt')}
          />
          <ErrorMessage error={add.error} />
          <div class="wide actions">
            <button type="submit" class="primary" disabled={add.busy}>
              Record consent
            </button>
          </div>
        </Form>
      </section>
      <section aria-labelledby="consents-title">
        <h2 id="consents-title">Consents</h2>
        <Form class="filters" role="search" aria-label="Filter consents">
          <Field
            label="Only the number"
            type="search"
            value={phoneFilter}
            onValue={setPhoneFilter}
            maxLength={32}
            placeholder="+14155550100"
          />
        </Form>
        <ErrorMessage error={consents.error ?? revoke.error} />
        {consents.data && consents.data.total === 0 && <Empty>No consent recorded{phoneFilter ? ' for this number' : ''}.</Empty>}
        {consents.data && consents.data.total > 0 && (
          <>
            <DataTable
              rows={consents.data.data}
              rowKey={(consent) => consent.id}
              columns={[
                { header: 'Number', cell: (consent) => <span id={`consent-${consent.id}`}>{consent.phoneNumber}</span> },
                { header: 'Channel', cell: (consent) => CHANNELS.find(([value]) => value === consent.channel)?.[1] ?? consent.channel },
                { header: 'Where', cell: (consent) => consent.source },
                { header: 'Given', cell: (consent) => formatDate(consent.grantedAt) },
                { header: 'Expires', cell: (consent) => (consent.expiresAt ? formatDate(consent.expiresAt) : 'Never') },
                {
                  header: 'State',
                  cell: (consent) => <Status value={consentState(consent).toUpperCase()} label={consentState(consent)} />,
                },
                {
                  header: <ActionsHeader />,
                  cell: (consent) =>
                    consent.revokedAt ? null : (
                      <button
                        type="button"
                        class="danger"
                        disabled={revoke.busy}
                        aria-describedby={`consent-${consent.id}`}
                        onClick={() => void revoke.run(consent)}
                      >
                        Revoke
                      </button>
                    ),
                },
              ]}
            />
            <Pagination page={consents.data.page} limit={consents.data.limit} total={consents.data.total} onPage={setPage} />
          </>
        )}
      </section>
    </>
  );
}

const VERDICT_WORDS: Record<ComplianceRecord['verdict'], string> = {
  dial: 'Dialled',
  skip: 'Skipped',
  wait: 'Put off',
  answered: 'Answered',
  scored: 'Scorecard',
};
const REASON_WORDS: Record<NonNullable<ComplianceRecord['reason']>, string> = {
  dnc: 'on the do-not-call list',
  no_consent: 'no valid consent',
  unknown_timezone: 'local time unknown',
  outside_window: 'outside the calling hours',
  frequency_cap: 'called often enough lately',
  in_call: 'already in a call',
  human: 'by a person',
  machine: 'by an answering machine',
  fax: 'by a fax machine',
  unknown: 'by someone not told apart',
  call_screening: 'by a call-screening assistant',
  phone_menu: 'by a phone menu',
  passed: 'every check passed',
  failed: 'a check failed',
};

/** A dial decision's facts (zones, do-not-call, consent); an answer's or a scorecard's record has none of them. */
const decisionFacts = (facts: ComplianceRecord['facts']) => ('localTimes' in facts ? facts : undefined);

/** The record of each dial decision of a campaign, and a check that the tenant's chain of records is whole. */
export function ComplianceRecordsPage(_props: { params: Record<string, string> }) {
  const campaigns = useLoad(() => api<Page<Campaign>>('GET', '/campaigns?limit=200'), []);
  const [campaignId, setCampaignId] = useState('');
  const records = useLoad(
    async () => (campaignId ? api<ComplianceRecord[]>('GET', `/campaigns/${campaignId}/compliance-records`) : undefined),
    [campaignId],
  );
  const [verification, setVerification] = useState<ChainVerification | undefined>(undefined);
  const verify = useAction(async () => setVerification(await api<ChainVerification>('GET', '/compliance/records/verify')));
  return (
    <>
      <PageTitle
        actions={
          <button type="button" disabled={verify.busy} onClick={() => void verify.run()}>
            Check the chain of records
          </button>
        }
      >
        Compliance records
      </PageTitle>
      <p class="hint">
        Before each dial the dialer records what it checked (local times, calling rules, do-not-call, consent, recent calls) and what it
        decided. Each record carries the hash of the one before, so a record changed or removed afterwards shows.
      </p>
      <ErrorMessage error={verify.error} />
      {verification && (
        <p class={verification.valid ? 'success' : 'warning'} role="status">
          {verification.valid
            ? `The chain is whole: ${verification.records} records checked.`
            : `The chain is broken at record ${verification.firstBroken?.sequence}: ${verification.firstBroken?.problem}`}
        </p>
      )}
      <Form class="filters" aria-label="Choose a campaign">
        <Select
          label="Campaign"
          value={campaignId}
          onValue={setCampaignId}
          options={namedOptions(campaigns.data?.data, ['', 'Choose a campaign'])}
        />
      </Form>
      <ErrorMessage error={campaigns.error ?? records.error} />
      {campaignId && (
        <p>
          <a href={`/api/v1/campaigns/${campaignId}/compliance-records?format=csv`}>Download this campaign's records as CSV</a>
        </p>
      )}
      {records.data && records.data.length === 0 && <Empty>No dial decision yet: the campaign has not dialled.</Empty>}
      {records.data && records.data.length > 0 && (
        <DataTable
          rows={records.data}
          rowKey={(record) => record.id}
          columns={[
            { header: '#', cell: (record) => record.sequence },
            { header: 'Decided', cell: (record) => formatDate(record.decidedAt) },
            { header: 'Number', cell: (record) => record.phoneNumber },
            {
              header: 'Decision',
              cell: (record) => (
                <Status
                  value={record.verdict.toUpperCase()}
                  label={`${VERDICT_WORDS[record.verdict]}${record.reason ? `: ${REASON_WORDS[record.reason]}` : ''}`}
                />
              ),
            },
            { header: 'Local time', cell: (record) => decisionFacts(record.facts)?.localTimes.join(', ') || '—' },
            {
              header: 'Do not call',
              cell: (record) => {
                const facts = decisionFacts(record.facts);
                return facts ? (facts.doNotCall ? 'Listed' : 'No') : '—';
              },
            },
            { header: 'Consent', cell: (record) => decisionFacts(record.facts)?.consent.replace('_', ' ') ?? '—' },
          ]}
        />
      )}
    </>
  );
}
