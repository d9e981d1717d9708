import './messaging.css';
import type { ComponentChildren, ComponentType } from 'preact';
import { useEffect, useId, useRef, useState } from 'preact/hooks';
import type {
  Agent,
  CreateSmsCampaignBody,
  CreateWhatsAppCampaignBody,
  Message,
  SmsCampaign,
  UpdateSmsCampaignBody,
  UpdateWhatsAppCampaignBody,
  WhatsAppCampaign,
} from '../../../src/api-types.ts';
import { api, ApiError, query, type Page } from '../api.ts';
import {
  ActionsHeader,
  type Column,
  Confirm,
  DataTable,
  Empty,
  ErrorMessage,
  Field,
  fieldErrorOf,
  Form,
  formatDate,
  PageTitle,
  Pagination,
  Select,
  Status,
  TextArea,
  useAction,
  useLoad,
  valueOptions as options,
} from '../ui.tsx';

// The service's limits and enums (src/modules/messaging/schemas.ts).
const MAX_WHATSAPP_TEMPLATES = 20;
const MAX_BODY_PARAMETERS = 10;
const SMS_BODY_LIMIT = 1600;
const PROCESSES = ['INCOMING', 'OUTGOING'] as const satisfies readonly WhatsAppMapping['process'][];
const WHATSAPP_CALL_STATUSES = ['ANSWERED', 'UNANSWERED', 'FAILED', 'BUSY'] as const satisfies readonly WhatsAppMapping['callStatus'][];
const SMS_CALL_STATUSES = ['ANSWERED', 'UNANSWERED'] as const satisfies readonly SmsCallStatus[];
const SMS_PROVIDERS = ['TWILIO', 'TELNYX', 'MSG91', 'SIMULATOR'] as const;
const MESSAGE_STATUSES = ['QUEUED', 'SENDING', 'SENT', 'DELIVERED', 'READ', 'FAILED'] as const satisfies readonly Message['status'][];
const CAMPAIGNS_PER_PAGE = 50;
const MESSAGES_PER_PAGE = 25;
const PLACEHOLDERS_HINT = 'Placeholders {{name}}, {{phoneNumber}}, {{email}} and {{<metadata key>}} are filled from the contact.';

type MessagingCampaign = WhatsAppCampaign | SmsCampaign;
type WhatsAppMapping = WhatsAppCampaign['templates'][number];
type SmsCallStatus = SmsCampaign['templates'][number]['callStatus'];

const sentenceCase = (value: string) => value.charAt(0) + value.slice(1).toLowerCase();

/** Post-call messaging: WhatsApp and SMS campaigns per agent, and the log of what was sent. */
export function MessagingPage(_props: { params: Record<string, string> }) {
  const agents = useLoad(() => api<Page<Agent>>('GET', '/agents?limit=200'), []);
  const agentList = agents.data?.data ?? [];
  const agentName = (id: string | null) => (id ? (agentList.find((agent) => agent.id === id)?.name ?? 'Deleted agent') : '—');
  return (
    <>
      <PageTitle>Messaging</PageTitle>
      <p class="hint">When a call ends, the agent's active campaigns send at most one WhatsApp message and one SMS to the contact.</p>
      <ErrorMessage error={agents.error} />
      <CampaignsSection<WhatsAppCampaign>
        title="WhatsApp campaigns"
        channel="WhatsApp"
        path="/whatsapp/campaigns"
        agents={agentList}
        agentName={agentName}
        columns={[
          {
            header: 'Sender',
            cell: (campaign) => (campaign.phoneNumberId ? <code>{campaign.phoneNumberId}</code> : 'Integration default'),
          },
          { header: 'Templates', cell: (campaign) => `${campaign.templates.length} of ${MAX_WHATSAPP_TEMPLATES}` },
        ]}
        Editor={WhatsAppEditor}
      />
      <CampaignsSection<SmsCampaign>
        title="SMS campaigns"
        channel="SMS"
        path="/sms-agent/campaigns"
        agents={agentList}
        agentName={agentName}
        columns={[
          {
            header: 'Sender',
            cell: (campaign) => (
              <>
                <code>{campaign.senderNumber}</code> via {campaign.senderProvider}
              </>
            ),
          },
          {
            header: 'Templates',
            cell: (campaign) => campaign.templates.map((template) => sentenceCase(template.callStatus)).join(', ') || 'None',
          },
        ]}
        Editor={SmsEditor}
      />
      <MessageLog agentName={agentName} />
    </>
  );
}

interface EditorProps<C> {
  campaign: C | undefined;
  /** Agents that may get a new campaign of this channel (one per agent). */
  freeAgents: Agent[];
  onSaved: () => void;
  onCancel: () => void;
}

/** A campaign list of one channel with its editor, active toggle and delete. */
function CampaignsSection<C extends MessagingCampaign>({
  title,
  channel,
  path,
  agents,
  agentName,
  columns,
  Editor,
}: {
  title: string;
  channel: 'WhatsApp' | 'SMS';
  path: string;
  agents: Agent[];
  agentName: (id: string | null) => string;
  /** The channel's own columns, between Agent and Status. */
  columns: Column<C>[];
  Editor: ComponentType<EditorProps<C>>;
}) {
  const [page, setPage] = useState(1);
  const [editing, setEditing] = useState<C | 'new' | undefined>(undefined);
  const [deleting, setDeleting] = useState<C | undefined>(undefined);
  const campaigns = useLoad(() => api<Page<C>>('GET', `${path}${query({ page, limit: CAMPAIGNS_PER_PAGE })}`), [path, page]);
  const list = campaigns.data?.data ?? [];
  const headingId = useId();
  const heading = useRef<HTMLHeadingElement>(null);
  const closeEditor = () => {
    setEditing(undefined);
    heading.current?.focus();
  };

  const toggle = useAction(async (campaign: C) => {
    await api('PUT', `${path}/${campaign.id}`, { isActive: !campaign.isActive } satisfies UpdateWhatsAppCampaignBody &
      UpdateSmsCampaignBody);
    await campaigns.reload();
  });
  const remove = useAction(async (campaign: C) => {
    await api('DELETE', `${path}/${campaign.id}`);
    setDeleting(undefined);
    if (editing !== 'new' && editing?.id === campaign.id) setEditing(undefined);
    await campaigns.reload();
    // Its row, which held the focus, is gone.
    heading.current?.focus();
  });
  const saved = async () => {
    closeEditor();
    await campaigns.reload();
  };

  return (
    <section aria-labelledby={headingId} class="messaging-section">
      <div class="messaging-heading">
        <h2 id={headingId} ref={heading} tabIndex={-1}>
          {title}
        </h2>
        {!editing && (
          <button type="button" class="primary" onClick={() => setEditing('new')}>
            New {channel} campaign
          </button>
        )}
      </div>
      {editing && (
        // Keyed so that editing another campaign starts from that campaign's values.
        <Editor
          key={editing === 'new' ? 'new' : editing.id}
          campaign={editing === 'new' ? undefined : editing}
          freeAgents={agents.filter((agent) => !list.some((campaign) => campaign.agentId === agent.id))}
          onSaved={() => void saved()}
          onCancel={closeEditor}
        />
      )}
      <ErrorMessage error={campaigns.error ?? toggle.error} />
      {campaigns.data && list.length === 0 && <Empty>No {channel} campaigns yet.</Empty>}
      {list.length > 0 && (
        <DataTable
          rows={list}
          rowKey={(campaign) => campaign.id}
          columns={[
            { header: 'Name', cell: (campaign) => campaign.name },
            { header: 'Agent', cell: (campaign) => agentName(campaign.agentId) },
            ...columns,
            { header: 'Status', cell: (campaign) => <Status value={campaign.isActive ? 'ACTIVE' : 'INACTIVE'} /> },
            { header: 'Updated', cell: (campaign) => formatDate(campaign.updatedAt) },
            {
              header: <ActionsHeader />,
              cell: (campaign) => (
                <div class="actions messaging-row-actions">
                  <button type="button" onClick={() => setEditing(campaign)} aria-label={`Edit ${campaign.name}`}>
                    Edit
                  </button>
                  <button
                    type="button"
                    disabled={toggle.busy}
                    onClick={() => void toggle.run(campaign)}
                    aria-label={`${campaign.isActive ? 'Deactivate' : 'Activate'} ${campaign.name}`}
                  >
                    {campaign.isActive ? 'Deactivate' : 'Activate'}
                  </button>
                  <button
                    type="button"
                    class="danger"
                    onClick={() => (remove.clearError(), setDeleting(campaign))}
                    aria-label={`Delete ${campaign.name}`}
                  >
                    Delete
                  </button>
                </div>
              ),
            },
          ]}
        />
      )}
      {campaigns.data && campaigns.data.total > CAMPAIGNS_PER_PAGE && (
        <Pagination page={page} limit={CAMPAIGNS_PER_PAGE} total={campaigns.data.total} onPage={setPage} />
      )}
      <Confirm
        open={!!deleting}
        title={`Delete this ${channel} campaign?`}
        confirmLabel="Delete campaign"
        onCancel={() => setDeleting(undefined)}
        onConfirm={() => void remove.run(deleting!)}
      >
        <p>
          “{deleting?.name}” stops sending {channel} messages after {agentName(deleting?.agentId ?? null)}'s calls. Messages already sent
          stay in the log.
        </p>
        <ErrorMessage error={remove.error} />
      </Confirm>
    </section>
  );
}

/** The editor's frame: a heading that takes focus when it opens, the form, save and cancel. */
function EditorForm({
  title,
  saveDisabled,
  error,
  onSubmit,
  onCancel,
  children,
}: {
  title: string;
  saveDisabled: boolean;
  error: Error | undefined;
  onSubmit: () => void;
  onCancel: () => void;
  children: ComponentChildren;
}) {
  const heading = useRef<HTMLHeadingElement>(null);
  const headingId = useId();
  useEffect(() => heading.current?.focus(), []);
  return (
    <Form class="grid-form messaging-editor" aria-labelledby={headingId} onSubmit={onSubmit}>
      <h3 id={headingId} ref={heading} tabIndex={-1} class="wide">
        {title}
      </h3>
      {children}
      <ErrorMessage error={error} />
      <div class="actions wide">
        <button type="submit" class="primary" disabled={saveDisabled}>
          Save campaign
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </Form>
  );
}

function AgentChoice({
  campaign,
  freeAgents,
  agentId,
  setAgentId,
}: {
  campaign: MessagingCampaign | undefined;
  freeAgents: Agent[];
  agentId: string;
  setAgentId: (id: string) => void;
}) {
  if (campaign) return null;
  if (freeAgents.length === 0) {
    return (
      <p class="warning wide">
        Every agent already has a campaign of this kind (one per agent). <a href="#/agents">Create an agent</a> or edit its campaign.
      </p>
    );
  }
  return (
    <Select
      label="Agent"
      value={agentId}
      onValue={setAgentId}
      options={freeAgents.map((agent): [string, string] => [agent.id, agent.name])}
      hint="One campaign per agent; it cannot be moved later."
    />
  );
}

function ActiveCheckbox({ checked, onChange }: { checked: boolean; onChange: (checked: boolean) => void }) {
  return (
    <label class="messaging-check">
      <input type="checkbox" checked={checked} onChange={(event) => onChange(event.currentTarget.checked)} /> Active (sends after calls)
    </label>
  );
}

/** A mapping's own problems (a repeated mapping, its body parameters); its named fields show theirs. */
const problemsUnder = (error: Error | undefined, prefix: string) =>
  error instanceof ApiError
    ? error.details.filter((detail) => detail.path === prefix || detail.path.startsWith(`${prefix}/bodyParameters`))
    : [];

interface MappingDraft {
  templateName: string;
  languageCode: string;
  process: WhatsAppMapping['process'];
  callStatus: WhatsAppMapping['callStatus'];
  /** One value per line. */
  bodyParameters: string;
}

const blankMapping = (): MappingDraft => ({
  templateName: '',
  languageCode: 'en_US',
  process: 'OUTGOING',
  callStatus: 'ANSWERED',
  bodyParameters: '',
});
const linesOf = (text: string) =>
  text
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);

function WhatsAppEditor({ campaign, freeAgents, onSaved, onCancel }: EditorProps<WhatsAppCampaign>) {
  const [agentId, setAgentId] = useState('');
  // The first free agent until one is chosen (the agents may load after the editor opens).
  const chosenAgent = agentId || freeAgents[0]?.id || '';
  const [name, setName] = useState(campaign?.name ?? '');
  const [phoneNumberId, setPhoneNumberId] = useState(campaign?.phoneNumberId ?? '');
  const [isActive, setIsActive] = useState(campaign?.isActive ?? true);
  const [mappings, setMappings] = useState<MappingDraft[]>(
    campaign
      ? campaign.templates.map((template) => ({ ...template, bodyParameters: template.bodyParameters.join('\n') }))
      : [blankMapping()],
  );
  const full = mappings.length >= MAX_WHATSAPP_TEMPLATES;

  const update = (index: number, change: Partial<MappingDraft>) =>
    setMappings(mappings.map((mapping, i) => (i === index ? { ...mapping, ...change } : mapping)));
  const save = useAction(async () => {
    const templates = mappings.map((mapping) => ({
      templateName: mapping.templateName.trim(),
      ...(mapping.languageCode.trim() ? { languageCode: mapping.languageCode.trim() } : {}),
      process: mapping.process,
      callStatus: mapping.callStatus,
      bodyParameters: linesOf(mapping.bodyParameters),
    }));
    const common = { ...(name.trim() ? { name: name.trim() } : {}), isActive, templates };
    if (campaign)
      await api('PUT', `/whatsapp/campaigns/${campaign.id}`, {
        ...common,
        phoneNumberId: phoneNumberId.trim() || null,
      } satisfies UpdateWhatsAppCampaignBody);
    else
      await api('POST', '/whatsapp/campaigns', {
        agentId: chosenAgent,
        ...common,
        ...(phoneNumberId.trim() ? { phoneNumberId: phoneNumberId.trim() } : {}),
      } satisfies CreateWhatsAppCampaignBody);
    onSaved();
  });

  return (
    <EditorForm
      title={campaign ? `Edit “${campaign.name}”` : 'New WhatsApp campaign'}
      saveDisabled={save.busy || (!campaign && !chosenAgent)}
      error={save.error}
      onSubmit={() => void save.run()}
      onCancel={onCancel}
    >
      <AgentChoice campaign={campaign} freeAgents={freeAgents} agentId={chosenAgent} setAgentId={setAgentId} />
      <Field
        label="Name (optional)"
        value={name}
        onValue={setName}
        maxLength={200}
        hint={campaign ? undefined : 'Default: the agent name and “WhatsApp follow-up”.'}
        problem={fieldErrorOf(save.error, '/name')}
      />
      <Field
        label="Sender phone number ID (optional)"
        value={phoneNumberId}
        onValue={setPhoneNumberId}
        inputMode="numeric"
        pattern="[0-9]{1,32}"
        maxLength={32}
        hint="The WhatsApp phone number ID (digits). Empty: the WhatsApp integration's default sender."
        problem={fieldErrorOf(save.error, '/phoneNumberId')}
      />
      <ActiveCheckbox checked={isActive} onChange={setIsActive} />
      <div class="wide messaging-mappings">
        <h4>Template mappings</h4>
        <p class="hint">
          The mapping of the call's direction and outcome in the contact's language (metadata.language) is sent, else the first listed for
          that pair. One mapping per direction, outcome and language.
        </p>
        {mappings.map((mapping, index) => (
          <fieldset class="messaging-mapping" key={index}>
            <legend>Mapping {index + 1}</legend>
            <Field
              label="Template name"
              value={mapping.templateName}
              onValue={(templateName) => update(index, { templateName })}
              required
              maxLength={512}
              pattern="[a-z0-9_]+"
              hint="An approved template: lower-case letters, digits, underscores."
              problem={fieldErrorOf(save.error, `/templates/${index}/templateName`)}
            />
            <Field
              label="Language code"
              value={mapping.languageCode}
              onValue={(languageCode) => update(index, { languageCode })}
              maxLength={12}
              pattern="[A-Za-z]{2,3}([_\-][A-Za-z0-9]{2,4})?"
              hint="Such as en_US or es; empty means en_US."
              problem={fieldErrorOf(save.error, `/templates/${index}/languageCode`)}
            />
            <Select
              label="Call direction"
              value={mapping.process}
              onValue={(process) => update(index, { process })}
              options={options(PROCESSES)}
            />
            <Select
              label="Call outcome"
              value={mapping.callStatus}
              onValue={(callStatus) => update(index, { callStatus })}
              options={options(WHATSAPP_CALL_STATUSES)}
            />
            <div class="wide">
              <TextArea
                label="Body parameters (optional)"
                rows={2}
                value={mapping.bodyParameters}
                onValue={(bodyParameters) => update(index, { bodyParameters })}
                hint={`One per line, filling the template's {{1}}, {{2}}… in order; at most ${MAX_BODY_PARAMETERS}. ${PLACEHOLDERS_HINT}`}
              />
            </div>
            {problemsUnder(save.error, `/templates/${index}`).map((detail) => (
              <p class="problem wide" key={detail.path}>
                {detail.message}
              </p>
            ))}
            <button
              type="button"
              class="danger"
              onClick={() => setMappings(mappings.filter((_, i) => i !== index))}
              aria-label={`Remove mapping ${index + 1}`}
            >
              Remove
            </button>
          </fieldset>
        ))}
        <div class="actions">
          <button type="button" disabled={full} onClick={() => setMappings([...mappings, blankMapping()])}>
            Add mapping
          </button>
          <span class="hint" aria-live="polite">
            {mappings.length} of {MAX_WHATSAPP_TEMPLATES} mappings{full ? ': the most a campaign can have.' : ''}
          </span>
        </div>
      </div>
    </EditorForm>
  );
}

// GSM 03.38: the basic set costs one septet a character, the extension set two; anything else makes the text UCS-2.
const GSM_BASIC = new Set(
  '@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà',
);
const GSM_EXTENSION = new Set('^{}\\[~]|€\f');

/** Encoding and segment count as carriers bill them, before placeholders are filled. */
function smsSegments(text: string): { encoding: string; segments: number } {
  const characters = [...text];
  if (characters.every((character) => GSM_BASIC.has(character) || GSM_EXTENSION.has(character))) {
    const septets = characters.reduce((sum, character) => sum + (GSM_EXTENSION.has(character) ? 2 : 1), 0);
    return { encoding: 'GSM-7', segments: septets <= 160 ? 1 : Math.ceil(septets / 153) };
  }
  return { encoding: 'UCS-2', segments: text.length <= 70 ? 1 : Math.ceil(text.length / 67) };
}

function MessageBodyField({
  label,
  value,
  onValue,
  problem,
}: {
  label: string;
  value: string;
  onValue: (value: string) => void;
  problem?: string;
}) {
  const { encoding, segments } = smsSegments(value);
  return (
    <TextArea
      class="wide"
      label={label}
      value={value}
      onValue={onValue}
      required
      maxLength={SMS_BODY_LIMIT}
      hint={PLACEHOLDERS_HINT}
      note={`${value.length} of ${SMS_BODY_LIMIT} characters · ${encoding} · ${segments} ${segments === 1 ? 'segment' : 'segments'} (before placeholders are filled)`}
      problem={problem}
    />
  );
}

interface SmsTemplateDraft {
  enabled: boolean;
  messageBody: string;
  dltSenderId: string;
  dltTemplateId: string;
}

const OUTCOME_TEXT: Record<SmsCallStatus, string> = { ANSWERED: 'answered calls', UNANSWERED: 'unanswered, busy and failed calls' };

function SmsEditor({ campaign, freeAgents, onSaved, onCancel }: EditorProps<SmsCampaign>) {
  const [agentId, setAgentId] = useState('');
  // The first free agent until one is chosen (the agents may load after the editor opens).
  const chosenAgent = agentId || freeAgents[0]?.id || '';
  const [name, setName] = useState(campaign?.name ?? '');
  const [senderNumber, setSenderNumber] = useState(campaign?.senderNumber ?? '');
  const [senderProvider, setSenderProvider] = useState(campaign?.senderProvider ?? 'TWILIO');
  const [isActive, setIsActive] = useState(campaign?.isActive ?? true);
  const [drafts, setDrafts] = useState(
    () =>
      Object.fromEntries(
        SMS_CALL_STATUSES.map((callStatus) => {
          const template = campaign?.templates.find((candidate) => candidate.callStatus === callStatus);
          return [
            callStatus,
            {
              enabled: !campaign || !!template,
              messageBody: template?.messageBody ?? '',
              dltSenderId: template?.dltSenderId ?? '',
              dltTemplateId: template?.dltTemplateId ?? '',
            },
          ];
        }),
      ) as Record<SmsCallStatus, SmsTemplateDraft>,
  );
  const enabled = SMS_CALL_STATUSES.filter((callStatus) => drafts[callStatus].enabled);
  const update = (callStatus: SmsCallStatus, change: Partial<SmsTemplateDraft>) =>
    setDrafts({ ...drafts, [callStatus]: { ...drafts[callStatus], ...change } });

  const save = useAction(async () => {
    const templates = enabled.map((callStatus) => ({
      callStatus,
      messageBody: drafts[callStatus].messageBody,
      dltSenderId: drafts[callStatus].dltSenderId.trim() || null,
      dltTemplateId: drafts[callStatus].dltTemplateId.trim() || null,
    }));
    const body = {
      ...(name.trim() ? { name: name.trim() } : {}),
      senderNumber: senderNumber.trim(),
      senderProvider,
      isActive,
      templates,
    } satisfies UpdateSmsCampaignBody;
    if (campaign) await api('PUT', `/sms-agent/campaigns/${campaign.id}`, body);
    else await api('POST', '/sms-agent/campaigns', { agentId: chosenAgent, ...body } satisfies CreateSmsCampaignBody);
    onSaved();
  });
  // The service names problems by the index of the template in the array sent.
  const problem = (callStatus: SmsCallStatus, field: string) =>
    fieldErrorOf(save.error, `/templates/${enabled.indexOf(callStatus)}/${field}`);

  return (
    <EditorForm
      title={campaign ? `Edit “${campaign.name}”` : 'New SMS campaign'}
      saveDisabled={save.busy || (!campaign && !chosenAgent)}
      error={save.error}
      onSubmit={() => void save.run()}
      onCancel={onCancel}
    >
      <AgentChoice campaign={campaign} freeAgents={freeAgents} agentId={chosenAgent} setAgentId={setAgentId} />
      <Field
        label="Name (optional)"
        value={name}
        onValue={setName}
        maxLength={200}
        hint={campaign ? undefined : 'Default: the agent name and “SMS follow-up”.'}
        problem={fieldErrorOf(save.error, '/name')}
      />
      <Field
        label="Sender number or ID"
        value={senderNumber}
        onValue={setSenderNumber}
        required
        maxLength={16}
        pattern="\+[1-9][0-9]{6,14}|[A-Za-z0-9]{3,11}"
        hint="An E.164 number such as +14155550100, or a sender ID of 3 to 11 letters and digits."
        problem={fieldErrorOf(save.error, '/senderNumber')}
      />
      <Select
        label="Provider"
        value={senderProvider}
        onValue={setSenderProvider}
        options={options(SMS_PROVIDERS)}
        hint="MSG91 needs a DLT template ID on every template."
      />
      <ActiveCheckbox checked={isActive} onChange={setIsActive} />
      {SMS_CALL_STATUSES.map((callStatus) => {
        const draft = drafts[callStatus];
        return (
          <fieldset class="messaging-mapping wide" key={callStatus}>
            <legend>{sentenceCase(callStatus)} calls</legend>
            <label class="messaging-check wide">
              <input
                type="checkbox"
                checked={draft.enabled}
                onChange={(event) => update(callStatus, { enabled: event.currentTarget.checked })}
              />{' '}
              Send an SMS after {OUTCOME_TEXT[callStatus]}
            </label>
            {draft.enabled && (
              <>
                <MessageBodyField
                  label="Message"
                  value={draft.messageBody}
                  onValue={(messageBody) => update(callStatus, { messageBody })}
                  problem={problem(callStatus, 'messageBody')}
                />
                <Field
                  label="DLT sender ID (optional)"
                  value={draft.dltSenderId}
                  onValue={(dltSenderId) => update(callStatus, { dltSenderId })}
                  maxLength={32}
                  hint="DLT header (India)."
                  problem={problem(callStatus, 'dltSenderId')}
                />
                <Field
                  label="DLT template ID (optional)"
                  value={draft.dltTemplateId}
                  onValue={(dltTemplateId) => update(callStatus, { dltTemplateId })}
                  maxLength={64}
                  hint="DLT template (India); MSG91 fails a message without one."
                  problem={problem(callStatus, 'dltTemplateId') ?? problem(callStatus, 'callStatus')}
                />
              </>
            )}
          </fieldset>
        );
      })}
    </EditorForm>
  );
}

/** Every post-call message, newest first, with its delivery status. */
function MessageLog({ agentName }: { agentName: (id: string | null) => string }) {
  const [channel, setChannel] = useState('');
  const [status, setStatus] = useState('');
  const [page, setPage] = useState(1);
  const messages = useLoad(
    () => api<Page<Message>>('GET', `/messages${query({ channel, status, page, limit: MESSAGES_PER_PAGE })}`),
    [channel, status, page],
  );
  const filter = (set: (value: string) => void) => (value: string) => {
    set(value);
    setPage(1);
  };
  return (
    <section aria-labelledby="message-log-title" class="messaging-section">
      <div class="messaging-heading">
        <h2 id="message-log-title">Message log</h2>
        <button type="button" onClick={() => void messages.reload()} disabled={messages.loading}>
          Refresh log
        </button>
      </div>
      <div class="messaging-filters">
        <Select
          label="Channel"
          value={channel}
          onValue={filter(setChannel)}
          options={[
            ['', 'All channels'],
            ['WHATSAPP', 'WhatsApp'],
            ['SMS', 'SMS'],
          ]}
        />
        <Select label="Status" value={status} onValue={filter(setStatus)} options={[['', 'All statuses'], ...options(MESSAGE_STATUSES)]} />
      </div>
      <ErrorMessage error={messages.error} />
      {messages.data && messages.data.data.length === 0 && (
        <Empty>
          {channel || status
            ? 'No messages match these filters.'
            : 'No messages yet: they are sent when calls of agents with an active campaign end.'}
        </Empty>
      )}
      {messages.data && messages.data.data.length > 0 && (
        <>
          <DataTable
            rows={messages.data.data}
            rowKey={(message) => message.id}
            columns={[
              { header: 'Created', cell: (message) => formatDate(message.createdAt) },
              { header: 'Channel', cell: (message) => (message.channel === 'SMS' ? 'SMS' : 'WhatsApp') },
              {
                header: 'To',
                cell: (message) => (
                  <>
                    <code>{message.toNumber}</code>
                    <br />
                    <small class="hint">
                      from {message.sender ?? 'default sender'} via {message.provider}
                    </small>
                  </>
                ),
              },
              { header: 'Agent', cell: (message) => agentName(message.agentId) },
              { header: 'Content', className: 'messaging-content', cell: (message) => <MessageContent message={message} /> },
              {
                header: 'Status',
                className: 'messaging-status',
                cell: (message) => (
                  <>
                    <Status value={message.status} />
                    {message.failureReason && <small class="problem messaging-failure">{message.failureReason}</small>}
                    <MessageProgress message={message} />
                  </>
                ),
              },
            ]}
          />
          <Pagination page={page} limit={MESSAGES_PER_PAGE} total={messages.data.total} onPage={setPage} />
        </>
      )}
    </section>
  );
}

function MessageContent({ message }: { message: Message }) {
  if (message.channel === 'SMS') {
    return (
      <>
        <span class="messaging-body">{message.body}</span>
        {message.segments !== null && (
          <small class="hint">
            {message.segments} {message.segments === 1 ? 'segment' : 'segments'}, {message.encoding}
          </small>
        )}
      </>
    );
  }
  return (
    <>
      Template <code>{message.templateName}</code> ({message.languageCode})
    </>
  );
}

function MessageProgress({ message }: { message: Message }) {
  const steps = (
    [
      ['Sent', message.sentAt],
      ['Delivered', message.deliveredAt],
      ['Read', message.readAt],
      ['Failed', message.failedAt],
    ] as const
  ).filter(([, at]) => at);
  if (steps.length === 0) return null;
  return (
    <dl class="messaging-progress">
      {steps.map(([label, at]) => (
        <div key={label}>
          <dt>{label}</dt>
          <dd>{formatDate(at)}</dd>
        </div>
      ))}
    </dl>
  );
}
