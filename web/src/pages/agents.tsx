import './agents.css';
import type { Agent, CreateVoiceNumberBody, UpdateVoiceNumberBody, VoiceNumber } from '../../../src/api-types.ts';
import { useState } from 'preact/hooks';
import { api, query, type Page } from '../api.ts';
import { AgentForm } from './agent-form.tsx';
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
  PhoneField,
  Select,
  useAction,
  useLoad,
} from '../ui.tsx';

type Deleting = { kind: 'agent'; record: Agent } | { kind: 'number'; record: VoiceNumber };

const PAGE_SIZE = 25;
const PROVIDERS: [VoiceNumber['provider'], string][] = [
  ['SIMULATOR', 'Simulator (test calls, no carrier)'],
  ['TWILIO', 'Twilio'],
  ['TELNYX', 'Telnyx'],
];

/** Agents and the voice numbers they call from and answer on. */
export function AgentsPage(_props: { params: Record<string, string> }) {
  const [agentPage, setAgentPage] = useState(1);
  const agents = useLoad(() => api<Page<Agent>>('GET', `/agents${query({ page: agentPage, limit: PAGE_SIZE })}`), [agentPage]);
  // Every agent (up to the API's page maximum), to pick an inbound agent and name it in the numbers table.
  const allAgents = useLoad(() => api<Page<Agent>>('GET', '/agents?limit=200'), []);
  const numbers = useLoad(() => api<Page<VoiceNumber>>('GET', '/voice-numbers?limit=200'), []);
  const [deleting, setDeleting] = useState<Deleting | undefined>(undefined);

  const reloadAgents = async () => {
    await Promise.all([agents.reload(), allAgents.reload()]);
  };
  const remove = useAction(async (target: Deleting) => {
    if (target.kind === 'agent') {
      await api('DELETE', `/agents/${target.record.id}`);
      await reloadAgents();
    } else {
      await api('DELETE', `/voice-numbers/${target.record.id}`);
      await numbers.reload();
    }
    setDeleting(undefined);
  });
  const cancelDelete = () => {
    setDeleting(undefined);
    remove.clearError();
  };
  const deletingName = deleting?.kind === 'agent' ? deleting.record.name : deleting?.record.phoneNumber;

  return (
    <>
      <PageTitle
        actions={
          // The form is long (every field of an agent): below the lists, so they are seen first.
          <button type="button" class="primary" onClick={() => document.querySelector<HTMLInputElement>('.agent-form input')?.focus()}>
            New agent
          </button>
        }
      >
        Agents &amp; numbers
      </PageTitle>
      <section aria-labelledby="agents-title">
        <h2 id="agents-title">Agents</h2>
        <ErrorMessage error={agents.error} />
        {agents.data && agents.data.total === 0 && <Empty>No agents yet.</Empty>}
        {agents.data && agents.data.data.length > 0 && (
          <>
            <DataTable
              wrapClass="agents-table-wrap"
              rows={agents.data.data}
              rowKey={(agent) => agent.id}
              columns={[
                {
                  header: 'Name',
                  cell: (agent) => (
                    <>
                      <a href={`#/agents/${agent.id}`} id={`agent-${agent.id}`}>
                        <strong>{agent.name}</strong>
                      </a>
                      {agent.description && <div class="agents-description">{agent.description}</div>}
                    </>
                  ),
                },
                { header: 'Language', cell: (agent) => agent.language },
                { header: 'Tools', cell: (agent) => (agent.tools.length ? agent.tools.join(', ') : '—') },
                { header: 'Knowledge bases', cell: (agent) => agent.knowledgeBaseIds.length },
                { header: 'Created', cell: (agent) => formatDate(agent.createdAt) },
                {
                  header: <ActionsHeader />,
                  cell: (agent) => (
                    <button
                      type="button"
                      class="danger"
                      onClick={() => setDeleting({ kind: 'agent', record: agent })}
                      aria-describedby={`agent-${agent.id}`}
                    >
                      Delete
                    </button>
                  ),
                },
              ]}
            />
            <Pagination page={agents.data.page} limit={agents.data.limit} total={agents.data.total} onPage={setAgentPage} />
          </>
        )}
      </section>
      <RegisterNumber agents={allAgents.data?.data ?? []} onRegistered={numbers.reload} />
      <section aria-labelledby="numbers-title">
        <h2 id="numbers-title">Voice numbers</h2>
        <ErrorMessage error={numbers.error} />
        {numbers.data && numbers.data.total === 0 && <Empty>No voice numbers yet.</Empty>}
        {numbers.data && numbers.data.data.length > 0 && (
          <DataTable
            wrapClass="agents-table-wrap"
            rows={numbers.data.data}
            rowKey={(number) => number.id}
            columns={[
              { header: 'Number', cell: (number) => <span id={`number-${number.id}`}>{number.phoneNumber}</span> },
              { header: 'Provider', cell: (number) => number.provider },
              { header: 'Label', cell: (number) => number.label ?? '—' },
              {
                header: 'Inbound agent',
                cell: (number) => <InboundAgent number={number} agents={allAgents.data?.data ?? []} onChanged={numbers.reload} />,
              },
              { header: 'Registered', cell: (number) => formatDate(number.createdAt) },
              {
                header: <ActionsHeader />,
                cell: (number) => (
                  <button
                    type="button"
                    class="danger"
                    onClick={() => setDeleting({ kind: 'number', record: number })}
                    aria-describedby={`number-${number.id}`}
                  >
                    Delete
                  </button>
                ),
              },
            ]}
          />
        )}
      </section>
      <CreateAgent onCreated={reloadAgents} />
      <Confirm
        open={!!deleting}
        title={deleting?.kind === 'agent' ? 'Delete this agent?' : 'Delete this number?'}
        confirmLabel={deleting?.kind === 'agent' ? 'Delete agent' : 'Delete number'}
        onCancel={cancelDelete}
        onConfirm={() => void remove.run(deleting!)}
      >
        <p>
          {deleting?.kind === 'agent'
            ? `“${deletingName}” is deleted permanently; its past calls stay in the call logs.`
            : `${deletingName} is removed from your account; campaigns can no longer call from it and calls to it are no longer answered.`}
        </p>
        <ErrorMessage error={remove.error} />
      </Confirm>
    </>
  );
}

/** Create an agent; its tool signing secret is shown once, like an API key's. */
function CreateAgent({ onCreated }: { onCreated: () => Promise<void> }) {
  const [created, setCreated] = useState<Agent | undefined>(undefined);
  const [copied, setCopied] = useState(false);
  // A new form after each creation: empty again.
  const [formKey, setFormKey] = useState(0);
  const copy = async () => {
    await navigator.clipboard.writeText(created!.toolSigningSecret!);
    setCopied(true);
  };
  return (
    <section aria-labelledby="create-agent-title">
      <h2 id="create-agent-title">Create an agent</h2>
      {created && (
        <section class="callout" aria-labelledby="new-agent-title">
          <h3 id="new-agent-title">
            Agent “<a href={`#/agents/${created.id}`}>{created.name}</a>” created
          </h3>
          {created.toolSigningSecret && (
            <>
              <p class="warning" role="alert">
                Copy its tool signing secret now: it is shown only this once and cannot be recovered. Your custom tools' servers check the
                signature of the agent's requests with it.
              </p>
              <div class="secret">
                <code data-testid="tool-signing-secret">{created.toolSigningSecret}</code>
                <button type="button" onClick={() => void copy()}>
                  {copied ? 'Copied' : 'Copy secret'}
                </button>
              </div>
            </>
          )}
          <div class="actions">
            <a class="button" href={`#/agents/${created.id}`}>
              Open the agent and talk to it
            </a>
            <button type="button" onClick={() => setCreated(undefined)}>
              I have stored it safely
            </button>
          </div>
        </section>
      )}
      <AgentForm
        key={formKey}
        onSaved={async (agent) => {
          setCreated(agent);
          setCopied(false);
          setFormKey((key) => key + 1);
          await onCreated();
        }}
      />
    </section>
  );
}

/** A number's inbound agent, changed in place: the agent that answers calls to it (and its test calls). */
function InboundAgent({ number, agents, onChanged }: { number: VoiceNumber; agents: Agent[]; onChanged: () => Promise<void> }) {
  const change = useAction(async (inboundAgentId: string) => {
    await api('PATCH', `/voice-numbers/${number.id}`, { inboundAgentId: inboundAgentId || null } satisfies UpdateVoiceNumberBody);
    await onChanged();
  });
  return (
    <>
      <Select
        label={`Inbound agent of ${number.phoneNumber}`}
        value={number.inboundAgentId ?? ''}
        onValue={(value) => void change.run(value)}
        options={namedOptions(agents, ['', 'None'])}
      />
      <ErrorMessage error={change.error} />
    </>
  );
}

function RegisterNumber({ agents, onRegistered }: { agents: Agent[]; onRegistered: () => Promise<void> }) {
  const [phoneNumber, setPhoneNumber] = useState('');
  const [provider, setProvider] = useState<VoiceNumber['provider']>('SIMULATOR');
  const [label, setLabel] = useState('');
  const [inboundAgentId, setInboundAgentId] = useState('');
  const register = useAction(async () => {
    await api('POST', '/voice-numbers', {
      phoneNumber,
      provider,
      ...(label ? { label } : {}),
      inboundAgentId: inboundAgentId || null,
    } satisfies CreateVoiceNumberBody);
    setPhoneNumber('');
    setLabel('');
    setInboundAgentId('');
    await onRegistered();
  });
  return (
    <section aria-labelledby="register-number-title">
      <h2 id="register-number-title">Register a voice number</h2>
      <Form class="grid-form" onSubmit={register.run}>
        <PhoneField
          value={phoneNumber}
          onValue={setPhoneNumber}
          placeholder="+14155550100"
          problem={fieldErrorOf(register.error, '/phoneNumber')}
        />
        <Select
          label="Provider"
          value={provider}
          onValue={setProvider}
          options={PROVIDERS}
          hint="Twilio numbers call with the credentials on the Integrations page."
        />
        <Field label="Label (optional)" value={label} onValue={setLabel} maxLength={200} problem={fieldErrorOf(register.error, '/label')} />
        <Select
          label="Inbound agent"
          value={inboundAgentId}
          onValue={setInboundAgentId}
          options={namedOptions(agents, ['', 'None'])}
          hint="The agent that answers calls to this number."
        />
        <ErrorMessage error={register.error} />
        <button type="submit" class="primary" disabled={register.busy}>
          Register number
        </button>
      </Form>
    </section>
  );
}
