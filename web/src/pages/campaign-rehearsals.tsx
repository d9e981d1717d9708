import type { CreateRehearsalBody, ListedRehearsal, Rehearsal, RehearsedContact } from '../../../src/api-types.ts';
import { useState } from 'preact/hooks';
import { api, query, type Page } from '../api.ts';
import { useProfile } from '../profile.ts';
import { brainOf, endReasonInWords, Transcript } from '../transcript.tsx';
import {
  DataTable,
  Empty,
  ErrorMessage,
  Field,
  fieldErrorOf,
  Form,
  formatDate,
  formatMoney,
  OpenButton,
  Pagination,
  plural,
  Status,
  useAction,
  useLoad,
} from '../ui.tsx';
import { formatInZone } from '../words.ts';
import { COST_PARTS } from './call.tsx';

const REHEARSAL_REFRESH_MS = 1000;
const PAGE_SIZE = 10;
const finished = (rehearsal: Pick<Rehearsal, 'status'>) => rehearsal.status === 'DONE' || rehearsal.status === 'FAILED';

const STATUS_WORDS: Record<Rehearsal['status'], string> = { QUEUED: 'Queued', RUNNING: 'Rehearsing', DONE: 'Done', FAILED: 'Failed' };
/** The dialer's verdict on a contact, in words. */
const VERDICT_WORDS: Record<RehearsedContact['verdict'], string> = {
  dial: 'Would be called',
  wait: 'Would wait',
  skip: 'Skipped',
};

/**
 * The campaign's rehearsals: rehearse it over a sample of its list (nothing is dialled or sent),
 * follow the rehearsal to its report, and open any earlier one.
 */
export function RehearsalsSection({ campaignId }: { campaignId: string }) {
  const [sample, setSample] = useState('');
  const [open, setOpen] = useState<string | undefined>(undefined);
  const [page, setPage] = useState(1);
  const [busy, setBusy] = useState(false);
  const list = useLoad(
    async () => {
      const found = await api<Page<ListedRehearsal>>('GET', `/campaigns/${campaignId}/rehearsals${query({ page, limit: PAGE_SIZE })}`);
      setBusy(found.data.some((rehearsal) => !finished(rehearsal)));
      return found;
    },
    [campaignId, page],
    busy ? REHEARSAL_REFRESH_MS : undefined,
  );
  const rehearse = useAction(async () => {
    const body: CreateRehearsalBody = sample.trim() ? { sample: Number(sample) } : {};
    const queued = await api<Rehearsal>('POST', `/campaigns/${campaignId}/rehearsals`, body);
    setPage(1);
    setOpen(queued.id);
    await list.reload();
  });

  return (
    <section class="rehearsals" aria-labelledby="rehearsals-title">
      <h2 id="rehearsals-title">Rehearsals</h2>
      <p class="hint">
        A rehearsal asks the dialer about a sample of the contact list (the same contacts every time) and talks to each contact it would
        call through the agent, with the campaign's scripted contact. Nothing is dialled or sent, and the campaign does not change.
      </p>
      <Form class="inline-form" onSubmit={rehearse.run}>
        <Field
          label="Contacts to rehearse (optional)"
          type="number"
          inputMode="numeric"
          min={1}
          max={500}
          step={1}
          value={sample}
          onValue={setSample}
          hint="1 to 500; 50 when empty."
          problem={fieldErrorOf(rehearse.error, '/sample')}
        />
        <button type="submit" class="primary" disabled={rehearse.busy}>
          Rehearse
        </button>
      </Form>
      <ErrorMessage error={rehearse.error ?? list.error} />
      {list.data && list.data.total === 0 && <Empty>Not rehearsed yet.</Empty>}
      {list.data && list.data.total > 0 && (
        <>
          <DataTable
            caption="Rehearsals, newest first"
            rows={list.data.data}
            rowKey={(rehearsal) => rehearsal.id}
            columns={[
              {
                header: 'Rehearsed',
                rowHeader: true,
                cell: (rehearsal) => (
                  <OpenButton id={rehearsal.id} open={open} setOpen={setOpen} controls="rehearsal-report">
                    {formatDate(rehearsal.createdAt)}
                  </OpenButton>
                ),
              },
              { header: 'State', cell: (rehearsal) => <Status value={rehearsal.status} label={STATUS_WORDS[rehearsal.status]} /> },
              { header: 'Contacts', cell: (rehearsal) => rehearsal.summary?.contacts ?? `up to ${rehearsal.sample}` },
              { header: 'Would be called', cell: (rehearsal) => rehearsal.summary?.wouldBeCalled ?? '—' },
              { header: 'Forecast', cell: (rehearsal) => <Money amount={rehearsal.costTotal} /> },
            ]}
          />
          <Pagination page={list.data.page} limit={list.data.limit} total={list.data.total} onPage={setPage} />
        </>
      )}
      {open && <RehearsalReport key={open} campaignId={campaignId} id={open} onFinished={() => void list.reload()} />}
    </section>
  );
}

/** An amount of the API in the wallet's currency, every fractional digit shown (a forecast of a few calls is fractions of a cent). */
function Money({ amount }: { amount: string | null }) {
  const { profile } = useProfile();
  if (amount === null) return <>—</>;
  return <>{profile ? formatMoney(amount, profile.wallet.currency, { exact: true }) : amount}</>;
}

/** One rehearsal, followed until its report is stored, then the report. */
function RehearsalReport({ campaignId, id, onFinished }: { campaignId: string; id: string; onFinished: () => void }) {
  const [over, setOver] = useState(false);
  const rehearsal = useLoad(
    async () => {
      const found = await api<Rehearsal>('GET', `/campaigns/${campaignId}/rehearsals/${id}`);
      if (finished(found) && !over) {
        setOver(true);
        onFinished();
      }
      return found;
    },
    [campaignId, id],
    over ? undefined : REHEARSAL_REFRESH_MS,
  );
  const data = rehearsal.data;
  return (
    <div id="rehearsal-report" class="card rehearsal-report" data-testid="rehearsal-report">
      <h3>Rehearsal of {data ? formatDate(data.createdAt) : '…'}</h3>
      <ErrorMessage error={rehearsal.error} />
      {data && !finished(data) && (
        <p aria-live="polite">
          <Status value={data.status} label={STATUS_WORDS[data.status]} /> Rehearsing {plural(data.sample, 'contact')} at most…
        </p>
      )}
      {data?.status === 'FAILED' && <p class="error">{data.failure}</p>}
      {data?.status === 'DONE' && data.summary && <Report rehearsal={data} summary={data.summary} />}
    </div>
  );
}

function Report({ rehearsal, summary }: { rehearsal: Rehearsal; summary: NonNullable<Rehearsal['summary']> }) {
  const from = new Date(rehearsal.from);
  const called = rehearsal.contacts.filter((contact) => contact.conversation);
  // Each reason with the API's sentence for it, as one of its contacts has it.
  const reasons = Object.entries(summary.byReason).map(([reason, count]) => {
    const contact = rehearsal.contacts.find((found) => found.reason === reason);
    return { reason, count, verdict: contact?.verdict, why: contact?.why ?? '' };
  });
  return (
    <>
      <p role="status" class="callout" data-testid="nothing-dialled">
        Nothing was dialled or sent: this is what the campaign would do, asked at {formatDate(rehearsal.from)}.
      </p>
      <dl class="cards counts">
        {(
          [
            ['Contacts rehearsed', String(summary.contacts)],
            ['Would be called', String(summary.wouldBeCalled)],
            ['Called now', String(summary.byVerdict.dial ?? 0)],
            ['Waiting for their window', String(summary.byVerdict.wait ?? 0)],
            ['Skipped', String(summary.byVerdict.skip ?? 0)],
            ['Forecast cost', <Money amount={rehearsal.costTotal} />],
            ['Billed for the rehearsal', <Money amount={rehearsal.billed} />],
          ] as const
        ).map(([label, value]) => (
          <div key={label} class="card">
            <dt>{label}</dt>
            <dd class="metric">{value}</dd>
          </div>
        ))}
      </dl>
      {rehearsal.brain && <p>Conversations: {brainOf(rehearsal.brain)}.</p>}
      <ul class="rehearsal-notes">
        {rehearsal.notes.map((note) => (
          <li key={note} class="hint">
            {note}
          </li>
        ))}
      </ul>
      {reasons.length > 0 && (
        <DataTable
          caption="Reasons"
          rows={reasons}
          rowKey={(row) => row.reason}
          columns={[
            { header: 'Reason', rowHeader: true, cell: (row) => <code>{row.reason}</code> },
            { header: 'Verdict', cell: (row) => (row.verdict ? <Status value={row.verdict} label={VERDICT_WORDS[row.verdict]} /> : '—') },
            { header: 'What the dialer says', cell: (row) => row.why },
            { header: 'Contacts', cell: (row) => row.count },
          ]}
        />
      )}
      <DataTable
        caption="Contacts, in the list's order"
        wrapClass="rehearsal-contacts"
        rows={rehearsal.contacts}
        rowKey={(contact) => contact.contactId}
        columns={[
          { header: 'Contact', rowHeader: true, cell: (contact) => contact.name ?? contact.phoneNumber },
          { header: 'Phone', cell: (contact) => contact.phoneNumber },
          { header: 'Verdict', cell: (contact) => <Status value={contact.verdict} label={VERDICT_WORDS[contact.verdict]} /> },
          { header: 'Why', cell: (contact) => contact.why },
          { header: 'First call (their time)', cell: (contact) => <FirstCall contact={contact} from={from} /> },
        ]}
      />
      {called.length > 0 && (
        <>
          <h4>Conversations, follow-ups and cost</h4>
          {called.map((contact) => (
            <Rehearsed key={contact.contactId} contact={contact} />
          ))}
        </>
      )}
    </>
  );
}

/** When the contact would first be called, in each of its possible zones: "Mon 10:00 America/New_York". */
function FirstCall({ contact, from }: { contact: RehearsedContact; from: Date }) {
  if (!contact.firstCallAt) return <>Not called</>;
  const at = new Date(contact.firstCallAt.utc);
  return (
    <ul class="plain">
      {contact.firstCallAt.local.map(({ timeZone }) => (
        <li key={timeZone}>
          {formatInZone(at, timeZone, from)} {timeZone}
        </li>
      ))}
    </ul>
  );
}

/** A contact who would be called: its conversation (opened on demand), the follow-ups that would go and the cost forecast with each part's basis. */
function Rehearsed({ contact }: { contact: RehearsedContact }) {
  const conversation = contact.conversation!;
  const who = contact.name ? `${contact.name} (${contact.phoneNumber})` : contact.phoneNumber;
  return (
    <details class="rehearsed">
      <summary>
        {who}: {plural(conversation.transcript.length, 'turn')}
        {conversation.endReason ? `, ended: ${endReasonInWords(conversation.endReason)}` : ''}
        {conversation.failure ? ', not rehearsed' : ''}
      </summary>
      {conversation.failure && <p class="error">{conversation.failure}</p>}
      <p class="hint">
        {conversation.personaByModel
          ? `The agent's model played the contact: ${conversation.personaByModel}`
          : `The scripted contact says: ${conversation.persona.map((line) => `“${line}”`).join(' ')}`}
      </p>
      <Transcript turns={conversation.transcript} label={`Rehearsed conversation with ${who}`} />
      {contact.followUp && (
        <div class="rehearsal-follow-ups">
          <FollowUps title="After an answered call" followUp={contact.followUp.answered} />
          <FollowUps title="After an unanswered call" followUp={contact.followUp.unanswered} />
        </div>
      )}
      {contact.cost && <CostForecast cost={contact.cost} />}
    </details>
  );
}

function FollowUps({ title, followUp }: { title: string; followUp: NonNullable<RehearsedContact['followUp']>['answered'] }) {
  return (
    <div>
      <h5>{title}</h5>
      {followUp.messages.length === 0 && <Empty>{followUp.none ?? 'No message would go.'}</Empty>}
      {followUp.messages.length > 0 && (
        <ul class="plain">
          {followUp.messages.map((message, index) => (
            <li key={index}>
              <strong>{message.channel === 'SMS' ? 'SMS' : 'WhatsApp'}</strong> to {message.to}
              {message.sender ? ` from ${message.sender}` : ''}:{' '}
              {message.body ?? `template ${message.templateName ?? '—'} (${message.languageCode ?? '—'}) ${message.parameters.join(', ')}`}
              {message.segments !== null && ` (${plural(message.segments, 'segment')})`}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

function CostForecast({ cost }: { cost: NonNullable<RehearsedContact['cost']> }) {
  return (
    <DataTable
      caption={`Cost forecast: a call of about ${cost.talkSeconds} s`}
      rows={COST_PARTS}
      rowKey={([part]) => part}
      columns={[
        { header: 'Component', rowHeader: true, cell: ([, label]) => label },
        { header: 'Cost', className: 'number', headerClass: 'number', cell: ([part]) => <Money amount={cost.cost[part]} /> },
        { header: 'Basis', cell: ([part]) => cost.basis[part] },
      ]}
      foot={
        <tr>
          <th scope="row">Total</th>
          <td class="number">
            <strong>
              <Money amount={cost.cost.total} />
            </strong>
          </td>
          <td />
        </tr>
      }
    />
  );
}
