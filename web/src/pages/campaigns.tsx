import './campaigns.css';
import { useState } from 'preact/hooks';
import type {
  Agent,
  Call,
  Campaign,
  CampaignContact,
  CampaignStats,
  CampaignStatus,
  ContactList,
  CreateCampaignBody,
  VoiceNumber,
} from '../../../src/api-types.ts';
import { api, query, type Page } from '../api.ts';
import { navigate } from '../router.ts';
import {
  ActionsHeader,
  Confirm,
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
  Select,
  Status,
  TimeZoneField,
  browserTimeZone,
  plural,
  useAction,
  useFilter,
  useLoad,
} from '../ui.tsx';
import { CampaignPolicies, initialPolicies, policyFields, type PolicyValues } from './campaign-policies.tsx';
import {
  CampaignVersions,
  campaignVersionInWords,
  ExperimentSection,
  initialVersions,
  versionFields,
  type VersionValues,
} from './campaign-versions.tsx';
import { RehearsalsSection } from './campaign-rehearsals.tsx';
import { HangUpButton, isLive } from './calls.tsx';
import { OnboardingChecklist } from '../onboarding.tsx';
import {
  callStateInWords,
  CAMPAIGN_STATUS_WORDS as STATUS_WORDS,
  contactStateInWords,
  formatInZone,
  formatWait,
  nextAttemptInWords,
  versionInWords,
  waitingOf,
} from '../words.ts';

const STATUSES = ['DRAFT', 'SCHEDULED', 'RUNNING', 'PAUSED', 'COMPLETED', 'CANCELLED'] as const satisfies readonly CampaignStatus[];
const UNFINISHED: CampaignStatus[] = ['DRAFT', 'SCHEDULED', 'RUNNING', 'PAUSED'];

const DAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
const LIVE_REFRESH_MS = 2000;
const NOT_CHOSEN: [string, string] = ['', 'Not chosen yet'];
const PAGE_SIZE = 25;

const finished = (stats: CampaignStats) => stats.answered + stats.unanswered + stats.busy + stats.failed;
const agentsLoad = () => api<Page<Agent>>('GET', '/agents?limit=200');
const numbersLoad = () => api<Page<VoiceNumber>>('GET', '/voice-numbers?limit=200');
const listsLoad = () => api<Page<ContactList>>('GET', '/contact-lists?limit=200');
const numberText = (number: VoiceNumber) => `${number.phoneNumber} (${number.label ?? number.provider})`;
const nameOf = (items: { id: string; name: string }[] | undefined, id: string | null) =>
  id ? (items?.find((item) => item.id === id)?.name ?? '…') : 'None';

/** Campaigns, filtered by status, each with its progress (the list carries every campaign's stats). */
export function CampaignsPage(_props: { params: Record<string, string> }) {
  const { value: status, set: setStatus, page, setPage } = useFilter();
  const agents = useLoad(agentsLoad, []);
  const campaigns = useLoad(() => api<Page<Campaign>>('GET', `/campaigns${query({ status, page, limit: PAGE_SIZE })}`), [status, page]);
  const now = new Date();

  return (
    <>
      <PageTitle
        actions={
          <button type="button" class="primary" onClick={() => navigate('/campaigns/new')}>
            New campaign
          </button>
        }
      >
        Campaigns
      </PageTitle>
      <OnboardingChecklist />
      <Form class="filters" role="search" aria-label="Filter campaigns">
        <Select
          label="Status"
          value={status}
          onValue={setStatus}
          options={[['', 'All statuses'], ...STATUSES.map((value): [CampaignStatus, string] => [value, STATUS_WORDS[value]])]}
        />
      </Form>
      <ErrorMessage error={campaigns.error ?? agents.error} />
      {campaigns.loading && !campaigns.data && <p>Loading campaigns…</p>}
      {campaigns.data && campaigns.data.data.length === 0 && (
        <Empty>
          {status
            ? `No ${STATUS_WORDS[status as CampaignStatus].toLowerCase()} campaigns.`
            : 'No campaigns yet: create one to start calling a contact list.'}
        </Empty>
      )}
      {campaigns.data && campaigns.data.data.length > 0 && (
        <>
          <DataTable
            rows={campaigns.data.data}
            rowKey={(campaign) => campaign.id}
            columns={[
              { header: 'Name', cell: (campaign) => <a href={`#/campaigns/${campaign.id}`}>{campaign.name}</a> },
              {
                header: 'Status',
                cell: (campaign) => (
                  <>
                    <Status value={campaign.status} label={STATUS_WORDS[campaign.status]} />
                    {campaign.statusReason && <div class="hint">{campaign.statusReason}</div>}
                    {waitingOf(campaign, undefined, now) && <div class="hint">{waitingOf(campaign, undefined, now)!.message}</div>}
                  </>
                ),
              },
              { header: 'Agent', cell: (campaign) => nameOf(agents.data?.data, campaign.agentId) },
              { header: 'Progress', cell: (campaign) => campaign.stats && <Progress name={campaign.name} stats={campaign.stats} /> },
              { header: 'Created', cell: (campaign) => formatDate(campaign.createdAt) },
            ]}
          />
          <Pagination page={campaigns.data.page} limit={campaigns.data.limit} total={campaigns.data.total} onPage={setPage} />
        </>
      )}
    </>
  );
}

function Progress({ name, stats }: { name: string; stats: CampaignStats }) {
  if (stats.total === 0) return <span class="hint">Not started</span>;
  return (
    <div class="progress">
      <progress value={finished(stats)} max={stats.total} aria-label={`Progress of ${name}`} />
      <span>
        {finished(stats)} of {stats.total} done
      </span>
    </div>
  );
}

/** A campaign page while its campaign loads, or failed to. */
function NotLoaded({ title, load }: { title: string; load: { error: Error | undefined; loading: boolean } }) {
  return (
    <>
      <PageTitle>{title}</PageTitle>
      <ErrorMessage error={load.error} />
      {load.loading && <p>Loading the campaign…</p>}
    </>
  );
}

/**
 * New campaign, or edit one that is still DRAFT. The API fixes a campaign's settings once it leaves
 * DRAFT (a PATCH answers 409), paused or not: for any other campaign the page says so and offers a
 * new draft that starts from its settings.
 */
export function CampaignEditPage({ params }: { params: Record<string, string> }) {
  const existing = useLoad(() => (params.id ? api<Campaign>('GET', `/campaigns/${params.id}`) : Promise.resolve(undefined)), [params.id]);
  const campaign = existing.data;
  if (params.id && !campaign) return <NotLoaded title="Edit campaign" load={existing} />;
  if (campaign && campaign.status !== 'DRAFT') {
    return (
      <>
        <PageTitle>Settings of “{campaign.name}”</PageTitle>
        <p class="warning" data-testid="settings-fixed">
          This campaign is {STATUS_WORDS[campaign.status].toLowerCase()}. Its settings were fixed when it left the draft stage, so they
          cannot be changed here.{' '}
          {campaign.status === 'PAUSED' || campaign.status === 'RUNNING' || campaign.status === 'SCHEDULED'
            ? 'To call with other settings, save them below as a new draft, then cancel this campaign and start the new one. The new campaign dials its list from the start: contacts this one has already reached are called again.'
            : 'To call again with other settings, save them below as a new draft.'}
        </p>
        <p>
          <a href={`#/campaigns/${campaign.id}`}>Back to the campaign</a>
        </p>
        <h2>New draft from these settings</h2>
        <CampaignForm key={`copy-${campaign.id}`} campaign={campaign} asCopy />
      </>
    );
  }
  return (
    <>
      <PageTitle>{campaign ? `Edit “${campaign.name}”` : 'New campaign'}</PageTitle>
      <CampaignForm key={campaign?.id ?? 'new'} campaign={campaign} />
    </>
  );
}

interface FormValues {
  name: string;
  description: string;
  agentId: string;
  voiceNumberId: string;
  contactListId: string;
  timezone: string;
  callWindowStart: string;
  callWindowEnd: string;
  callDays: number[];
  maxAttempts: string;
  redialDelayMin: string;
  dialTimeout: string;
  maxConcurrentCalls: string;
  scheduledAt: string;
}

/** The API's defaults (contract §5), except the time zone: the browser's is a better guess than UTC. */
const initialValues = (campaign: Campaign | undefined, asCopy: boolean): FormValues => ({
  name: campaign ? (asCopy ? `${campaign.name} (copy)` : campaign.name) : '',
  description: campaign?.description ?? '',
  agentId: campaign?.agentId ?? '',
  voiceNumberId: campaign?.voiceNumberId ?? '',
  contactListId: campaign?.contactListId ?? '',
  timezone: campaign?.timezone ?? browserTimeZone(),
  callWindowStart: campaign?.callWindowStart ?? '09:00',
  callWindowEnd: campaign?.callWindowEnd ?? '18:00',
  callDays: campaign?.callDays ?? [1, 2, 3, 4, 5],
  maxAttempts: String(campaign?.maxAttempts ?? 3),
  redialDelayMin: String(campaign?.redialDelayMin ?? 60),
  dialTimeout: String(campaign?.dialTimeout ?? 30),
  maxConcurrentCalls: String(campaign?.maxConcurrentCalls ?? 5),
  scheduledAt: '',
});

/** The form of a new campaign, of a DRAFT one, or (`asCopy`) of a new draft made from another campaign's settings. */
function CampaignForm({ campaign, asCopy = false }: { campaign: Campaign | undefined; asCopy?: boolean }) {
  const [values, setValues] = useState<FormValues>(() => initialValues(campaign, asCopy));
  const [policies, setPolicies] = useState<PolicyValues>(() => initialPolicies(campaign));
  const [versions, setVersions] = useState<VersionValues>(() => initialVersions(campaign));
  const agents = useLoad(agentsLoad, []);
  const numbers = useLoad(numbersLoad, []);
  const lists = useLoad(listsLoad, []);
  const set = (field: keyof FormValues) => (value: string) => setValues({ ...values, [field]: value });
  const toggleDay = (day: number) =>
    setValues({
      ...values,
      callDays: values.callDays.includes(day) ? values.callDays.filter((d) => d !== day) : [...values.callDays, day].sort((a, b) => a - b),
    });

  const save = useAction(async () => {
    const body = {
      name: values.name,
      description: values.description || null,
      agentId: values.agentId || null,
      voiceNumberId: values.voiceNumberId || null,
      contactListId: values.contactListId || null,
      timezone: values.timezone,
      callWindowStart: values.callWindowStart,
      callWindowEnd: values.callWindowEnd,
      callDays: values.callDays,
      maxAttempts: Number(values.maxAttempts),
      redialDelayMin: Number(values.redialDelayMin),
      dialTimeout: Number(values.dialTimeout),
      maxConcurrentCalls: Number(values.maxConcurrentCalls),
      ...policyFields(policies, values.voiceNumberId),
      ...versionFields(versions),
      ...(values.scheduledAt ? { scheduledAt: new Date(values.scheduledAt).toISOString() } : {}),
    } satisfies CreateCampaignBody; // also a valid PATCH body, whose fields are all optional
    const saved =
      campaign && !asCopy
        ? await api<Campaign>('PATCH', `/campaigns/${campaign.id}`, body)
        : await api<Campaign>('POST', '/campaigns', body);
    navigate(`/campaigns/${saved.id}`);
  });
  const problem = (path: string) => fieldErrorOf(save.error, path);

  return (
    <Form class="grid-form" onSubmit={save.run}>
      <Field
        label="Campaign name"
        value={values.name}
        onValue={set('name')}
        required
        maxLength={200}
        hint="Unique among your campaigns."
        problem={problem('/name')}
      />
      <Field
        label="Description (optional)"
        value={values.description}
        onValue={set('description')}
        maxLength={2000}
        problem={problem('/description')}
      />
      <ErrorMessage error={agents.error ?? numbers.error ?? lists.error} />
      <Select
        label="Agent"
        value={values.agentId}
        onValue={set('agentId')}
        options={namedOptions(agents.data?.data, NOT_CHOSEN)}
        hint={agents.data?.total === 0 ? 'No agents yet: create one under Agents & numbers.' : 'The voice agent that speaks on each call.'}
        problem={problem('/agentId')}
      />
      <CampaignVersions values={versions} onValues={setVersions} agentId={values.agentId} problem={problem} />
      <Select
        label="Voice number"
        value={values.voiceNumberId}
        onValue={set('voiceNumberId')}
        options={namedOptions(numbers.data?.data, NOT_CHOSEN, numberText)}
        hint={numbers.data?.total === 0 ? 'No numbers yet: add one under Agents & numbers.' : 'The number the calls come from.'}
        problem={problem('/voiceNumberId')}
      />
      <Select
        label="Contact list"
        value={values.contactListId}
        onValue={set('contactListId')}
        options={namedOptions(lists.data?.data, NOT_CHOSEN, (list) => `${list.name} (${plural(list.contactCount, 'contact')})`)}
        hint="At least 2 contacts; the list's contacts are copied when the campaign starts."
        problem={problem('/contactListId')}
      />
      <Field
        label="Call window start"
        type="time"
        value={values.callWindowStart}
        onValue={set('callWindowStart')}
        required
        hint="Earliest dial time, local to the time zone."
        problem={problem('/callWindowStart')}
      />
      <Field
        label="Call window end"
        type="time"
        value={values.callWindowEnd}
        onValue={set('callWindowEnd')}
        required
        hint="No call starts at or after this time; must be after the start."
        problem={problem('/callWindowEnd')}
      />
      <TimeZoneField value={values.timezone} onValue={set('timezone')} problem={problem('/timezone')} />
      <fieldset class="wide call-days" aria-describedby={problem('/callDays') ? 'call-days-problem' : undefined}>
        <legend>Call days</legend>
        {DAYS.map((day, index) => (
          <label key={day}>
            <input type="checkbox" checked={values.callDays.includes(index + 1)} onChange={() => toggleDay(index + 1)} /> {day}
          </label>
        ))}
        {problem('/callDays') && (
          <small id="call-days-problem" class="problem">
            {problem('/callDays')}
          </small>
        )}
      </fieldset>
      <p class="wide hint">
        The statutory calling rules also apply, unless your compliance settings relax them: each contact is called only in the hours, days
        and call limits the law sets where they are, in their own local time, and German numbers only with their consent.
      </p>
      <Field
        label="Attempts per contact"
        type="number"
        inputMode="numeric"
        min={1}
        max={10}
        step={1}
        required
        value={values.maxAttempts}
        onValue={set('maxAttempts')}
        hint="1 to 10."
        problem={problem('/maxAttempts')}
      />
      <Field
        label="Minutes between attempts"
        type="number"
        inputMode="numeric"
        min={1}
        max={10080}
        step={1}
        required
        value={values.redialDelayMin}
        onValue={set('redialDelayMin')}
        hint="1 to 10080 (one week)."
        problem={problem('/redialDelayMin')}
      />
      <Field
        label="Ring time (seconds)"
        type="number"
        inputMode="numeric"
        min={10}
        max={300}
        step={1}
        required
        value={values.dialTimeout}
        onValue={set('dialTimeout')}
        hint="10 to 300 seconds before a call counts as unanswered."
        problem={problem('/dialTimeout')}
      />
      <Field
        label="Calls at once"
        type="number"
        inputMode="numeric"
        min={1}
        max={50}
        step={1}
        required
        value={values.maxConcurrentCalls}
        onValue={set('maxConcurrentCalls')}
        hint="1 to 50 live calls of this campaign at a time."
        problem={problem('/maxConcurrentCalls')}
      />
      <CampaignPolicies
        values={policies}
        onValues={setPolicies}
        numbers={numbers.data?.data}
        voiceNumberId={values.voiceNumberId}
        problem={problem}
      />
      <Field
        label="Scheduled start (optional)"
        type="datetime-local"
        value={values.scheduledAt}
        onValue={set('scheduledAt')}
        hint="Leave empty to start it yourself. With a date it becomes SCHEDULED, starts by itself and can no longer be edited."
        problem={problem('/scheduledAt')}
      />
      <ErrorMessage error={save.error} />
      <div class="wide actions">
        <button type="submit" class="primary" disabled={save.busy}>
          {asCopy ? 'Save as a new draft' : 'Save campaign'}
        </button>
        <a href={campaign ? `#/campaigns/${campaign.id}` : '#/campaigns'}>Back without saving</a>
      </div>
    </Form>
  );
}

/** One campaign, live: status and progress, its actions, calls in progress and each contact's dial state. */
export function CampaignPage({ params }: { params: Record<string, string> }) {
  const id = params.id!;
  const [contactsPage, setContactsPage] = useState(1);
  const [cancelling, setCancelling] = useState(false);
  const [deleting, setDeleting] = useState(false);
  // Nothing changes any more once the campaign is over and its last calls have ended.
  const [over, setOver] = useState(false);
  const [anyLive, setAnyLive] = useState(false);
  const refreshMs = over && !anyLive ? undefined : LIVE_REFRESH_MS;
  const agents = useLoad(agentsLoad, []);
  const numbers = useLoad(numbersLoad, []);
  const lists = useLoad(listsLoad, []);
  const campaign = useLoad(
    async () => {
      const found = await api<Campaign>('GET', `/campaigns/${id}`);
      setOver(!UNFINISHED.includes(found.status));
      return found;
    },
    [id],
    refreshMs,
  );
  const contacts = useLoad(
    () => api<Page<CampaignContact>>('GET', `/campaigns/${id}/contacts${query({ page: contactsPage, limit: PAGE_SIZE })}`),
    [id, contactsPage],
    refreshMs,
  );
  // Newest first: the live calls are among the latest, as at most 50 of a campaign are live at once.
  const calls = useLoad(
    async () => {
      const found = await api<Page<Call>>('GET', `/call-logs${query({ campaignId: id, limit: 100 })}`);
      setAnyLive(found.data.some(isLive));
      return found;
    },
    [id],
    refreshMs,
  );

  const act = useAction(async (action: 'start' | 'pause' | 'resume' | 'cancel') => {
    // 202, with the campaign in the body or none: the page reads it again either way.
    await api('POST', `/campaigns/${id}/${action}`);
    await Promise.all([campaign.reload(), contacts.reload(), calls.reload()]);
  });
  const remove = useAction(async () => {
    await api('DELETE', `/campaigns/${id}`);
    navigate('/campaigns');
  });

  const data = campaign.data;
  if (!data) return <NotLoaded title="Campaign" load={campaign} />;
  const liveCalls = calls.data?.data.filter(isLive) ?? [];
  const button = (action: 'start' | 'pause' | 'resume', label: string) => (
    <button type="button" class={action === 'pause' ? undefined : 'primary'} disabled={act.busy} onClick={() => void act.run(action)}>
      {label}
    </button>
  );
  const status = data.status;
  // The page is drawn again on every refresh (every 2 s while the campaign runs), so the time is fresh enough.
  const now = new Date();
  const waiting = waitingOf(data, contacts.data?.data, now);

  return (
    <>
      <PageTitle
        actions={
          <>
            {status === 'DRAFT' && (
              <a class="button" href={`#/campaigns/${id}/edit`}>
                Edit
              </a>
            )}
            {status === 'DRAFT' && button('start', 'Start')}
            {status === 'SCHEDULED' && button('start', 'Start now')}
            {status === 'RUNNING' && button('pause', 'Pause')}
            {status === 'PAUSED' && button('resume', 'Resume')}
            {status !== 'DRAFT' && (
              <a class="button" href={`#/campaigns/${id}/edit`}>
                {UNFINISHED.includes(status) ? 'Change settings' : 'Run again with new settings'}
              </a>
            )}
            {status !== 'DRAFT' && UNFINISHED.includes(status) && (
              <button type="button" class="danger" disabled={act.busy} onClick={() => setCancelling(true)}>
                Cancel campaign
              </button>
            )}
            {/* The API deletes only a campaign that never started or is over. */}
            {(status === 'DRAFT' || !UNFINISHED.includes(status)) && (
              <button type="button" class="danger" disabled={remove.busy} onClick={() => setDeleting(true)}>
                Delete
              </button>
            )}
          </>
        }
      >
        {data.name}
      </PageTitle>
      <p>
        <a href="#/campaigns">All campaigns</a>
      </p>
      <ErrorMessage error={act.error ?? remove.error} />
      {data.statusReason && <p class="warning">{data.statusReason}</p>}
      {status === 'PAUSED' && !data.statusReason && (
        <p class="warning">Paused: calls in progress finish, no new call starts until you resume it.</p>
      )}
      {waiting && (
        <p class="warning" role="status" data-testid="campaign-waiting">
          {waiting.resumesAt
            ? `${waiting.message.replace(/\.$/, '')} (${formatWait(waiting.resumesAt.getTime() - now.getTime())}${
                data.timezone === browserTimeZone() ? '' : `; ${formatInZone(waiting.resumesAt, browserTimeZone(), now)} your time`
              }).`
            : waiting.message}
        </p>
      )}
      <section class="card live-progress" aria-labelledby="progress-title">
        <h2 id="progress-title">Progress</h2>
        <div aria-live="polite" aria-atomic="true" class="summary">
          <Status value={data.status} label={STATUS_WORDS[data.status]} /> {summary(data)}
        </div>
        {data.stats && data.stats.total > 0 && (
          <>
            <progress value={finished(data.stats)} max={data.stats.total} aria-label="Contacts with a final result" />
            <Counts stats={data.stats} over={!UNFINISHED.includes(data.status)} />
          </>
        )}
      </section>
      <Settings campaign={data} agents={agents.data?.data} numbers={numbers.data?.data} lists={lists.data?.data} />
      {data.contactListId && <RehearsalsSection campaignId={id} />}
      {data.experiment && <ExperimentSection campaignId={id} refreshMs={refreshMs} />}
      <section aria-labelledby="live-calls-title">
        <h2 id="live-calls-title">Calls in progress</h2>
        <ErrorMessage error={calls.error} />
        {calls.data && liveCalls.length === 0 && <Empty>No call is live right now.</Empty>}
        {liveCalls.length > 0 && (
          <DataTable
            tableClass="live-calls"
            rows={liveCalls}
            rowKey={(call) => call.id}
            columns={[
              { header: 'Started', cell: (call) => formatDate(call.startedAt) },
              { header: 'To', cell: (call) => call.toNumber },
              { header: 'Attempt', cell: (call) => call.attempt },
              { header: 'State', cell: (call) => <Status value={call.status} label={callStateInWords(call)} /> },
              { header: <ActionsHeader />, cell: (call) => <HangUpButton call={call} onDone={() => void calls.reload()} /> },
            ]}
          />
        )}
        {calls.data && calls.data.total > 0 && (
          <p>
            <a href={`#/calls?campaignId=${id}`}>All {calls.data.total} calls of this campaign, with transcripts</a>
          </p>
        )}
      </section>
      <section aria-labelledby="contacts-title">
        <h2 id="contacts-title">Contacts</h2>
        <ErrorMessage error={contacts.error} />
        {contacts.data && contacts.data.total === 0 && <Empty>The list's contacts are copied here when the campaign starts.</Empty>}
        {contacts.data && contacts.data.total > 0 && (
          <>
            <DataTable
              rows={contacts.data.data}
              rowKey={(contact) => contact.contactId}
              columns={[
                { header: 'Name', cell: (contact) => contact.name ?? '—' },
                { header: 'Phone', cell: (contact) => contact.phoneNumber },
                { header: 'State', cell: (contact) => <Status value={contact.status} label={contactStateInWords(contact, data)} /> },
                { header: 'Attempts', cell: (contact) => `${contact.attempts} of ${data.maxAttempts}` },
                // Each contact's arm of the experiment (or the pinned version), drawn when the campaign started.
                ...(data.experiment || data.agentVersion
                  ? [
                      {
                        header: 'Agent version',
                        cell: (contact: CampaignContact) => (contact.agentVersion ? versionInWords(contact.agentVersion) : '—'),
                      },
                    ]
                  : []),
                {
                  header: `Next attempt (${data.timezone})`,
                  // A contact due while the campaign waits for its window is called when the window opens;
                  // a paused campaign calls no one until it is resumed.
                  cell: (contact) => {
                    if (!UNFINISHED.includes(data.status) || !contact.nextAttemptAt) return '—';
                    const due = new Date(contact.nextAttemptAt);
                    if (status === 'PAUSED')
                      return due <= now ? 'when resumed' : `${nextAttemptInWords(due, data.timezone, now)}, if resumed`;
                    const at = waiting?.resumesAt && due < waiting.resumesAt ? waiting.resumesAt : due;
                    return nextAttemptInWords(at, data.timezone, now);
                  },
                },
              ]}
            />
            <Pagination page={contacts.data.page} limit={contacts.data.limit} total={contacts.data.total} onPage={setContactsPage} />
          </>
        )}
      </section>
      <Confirm
        open={cancelling}
        title="Cancel this campaign?"
        confirmLabel="Yes, cancel campaign"
        onCancel={() => setCancelling(false)}
        onConfirm={() => {
          // Closed first, so that a refusal shows on the page rather than behind the modal.
          setCancelling(false);
          void act.run('cancel');
        }}
      >
        <p>“{data.name}” stops dialling for good: calls in progress finish, no new call starts, and it cannot be resumed.</p>
      </Confirm>
      <Confirm
        open={deleting}
        title="Delete this campaign?"
        confirmLabel="Yes, delete campaign"
        onCancel={() => setDeleting(false)}
        onConfirm={() => {
          setDeleting(false);
          void remove.run();
        }}
      >
        <p>“{data.name}” and its dial states are deleted. Its calls stay in the call log.</p>
      </Confirm>
    </>
  );
}

/** One sentence for the live region, so a screen reader hears each change of status or progress. */
function summary(campaign: Campaign): string {
  const stats = campaign.stats;
  if (!stats || stats.total === 0) {
    if (campaign.status === 'SCHEDULED') return `Starts by itself at ${formatDate(campaign.scheduledAt)}.`;
    return campaign.status === 'DRAFT' ? 'Not started yet.' : 'No contacts were dialled.';
  }
  const waiting = UNFINISHED.includes(campaign.status)
    ? `${stats.retrying} to call again, ${stats.pending - stats.retrying} not called yet`
    : `${stats.pending} never finished`;
  return `${finished(stats)} of ${plural(stats.total, 'contact')} done: ${stats.answered} answered, ${stats.unanswered} unanswered, ${stats.busy} busy, ${stats.failed} failed; ${stats.inProgress} in a call, ${waiting}.`;
}

/**
 * Final results, then the contacts still to come. A contact unanswered or busy that will be called
 * again is not yet a final result: it is counted under "To call again", as its row says "will retry".
 */
function Counts({ stats, over }: { stats: CampaignStats; over: boolean }) {
  const counts: [string, number][] = [
    ['Answered', stats.answered],
    ['Unanswered, final', stats.unanswered],
    ['Busy, final', stats.busy],
    ['Failed, final', stats.failed],
    ['In a call', stats.inProgress],
    ...(over
      ? [['Never finished', stats.pending] as [string, number]]
      : ([
          ['To call again', stats.retrying],
          ['Not called yet', stats.pending - stats.retrying],
        ] as [string, number][])),
  ];
  return (
    <dl class="cards counts">
      {counts.map(([label, count]) => (
        <div key={label} class="card">
          <dt>{label}</dt>
          <dd class="metric">{count}</dd>
        </div>
      ))}
    </dl>
  );
}

function Settings({
  campaign,
  agents,
  numbers,
  lists,
}: {
  campaign: Campaign;
  agents: Agent[] | undefined;
  numbers: VoiceNumber[] | undefined;
  lists: ContactList[] | undefined;
}) {
  const days = campaign.callDays.map((day) => DAYS[day - 1]!.slice(0, 3)).join(', ');
  const number = numbers?.find((candidate) => candidate.id === campaign.voiceNumberId);
  const rows: [string, string][] = [
    ['Agent', nameOf(agents, campaign.agentId)],
    ['Agent version', campaignVersionInWords(campaign)],
    ['Voice number', number ? numberText(number) : nameOf(undefined, campaign.voiceNumberId)],
    ['Contact list', nameOf(lists, campaign.contactListId)],
    ['Call window', `${campaign.callWindowStart}–${campaign.callWindowEnd} ${campaign.timezone}, ${days}`],
    [
      'Calling rules',
      campaign.callingRules === false
        ? 'Statutory rules relaxed: declared as no solicitation'
        : "Statutory rules on: the law's hours, holidays, call limits and consent, in each contact's local time",
    ],
    ['Attempts', `up to ${campaign.maxAttempts}, ${campaign.redialDelayMin} min apart`],
    ['Ring time', `${campaign.dialTimeout} s`],
    ['Calls at once', String(campaign.maxConcurrentCalls)],
    ['Started', formatDate(campaign.startedAt)],
    ['Finished', formatDate(campaign.completedAt)],
  ];
  return (
    <section aria-labelledby="settings-title">
      <h2 id="settings-title">Settings</h2>
      {campaign.description && <p>{campaign.description}</p>}
      <dl class="settings">
        {rows.map(([label, value]) => (
          <div key={label}>
            <dt>{label}</dt>
            <dd>{value}</dd>
          </div>
        ))}
      </dl>
    </section>
  );
}
