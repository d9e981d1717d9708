import './agents.css';
import type { ComponentChildren } from 'preact';
import type { Agent, CreateAgentBody, CreateVoiceNumberBody, KnowledgeBase, Tool, VoiceNumber } from '../../../src/api-types.ts';
import { useState } from 'preact/hooks';
import { api, query, type Page } from '../api.ts';
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
  TextArea,
  useAction,
  useLoad,
} from '../ui.tsx';

type Deleting = { kind: 'agent'; record: Agent } | { kind: 'number'; record: VoiceNumber };

const PAGE_SIZE = 25;
const MAX_KNOWLEDGE_BASES = 20;
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
  const agentNames = new Map((allAgents.data?.data ?? []).map((agent) => [agent.id, agent.name]));
  const deletingName = deleting?.kind === 'agent' ? deleting.record.name : deleting?.record.phoneNumber;

  return (
    <>
      <PageTitle>Agents &amp; numbers</PageTitle>
      <CreateAgent onCreated={reloadAgents} />
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
                      <strong id={`agent-${agent.id}`}>{agent.name}</strong>
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
                cell: (number) => (number.inboundAgentId ? (agentNames.get(number.inboundAgentId) ?? 'Another agent') : 'None'),
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

/** Checkboxes for picking names out of a catalogue, in a fieldset with its legend. */
function Choices({
  legend,
  options,
  chosen,
  onChosen,
  empty,
}: {
  legend: string;
  options: { value: string; label: string; hint?: string }[];
  chosen: string[];
  onChosen: (chosen: string[]) => void;
  empty: ComponentChildren;
}) {
  return (
    <fieldset class="agents-choices wide">
      <legend>{legend}</legend>
      {options.length === 0 && <p class="empty">{empty}</p>}
      {options.map((option) => (
        <label key={option.value}>
          <input
            type="checkbox"
            checked={chosen.includes(option.value)}
            onChange={(event) =>
              onChosen(event.currentTarget.checked ? [...chosen, option.value] : chosen.filter((value) => value !== option.value))
            }
          />
          <span>
            {option.label}
            {option.hint && <small class="hint"> — {option.hint}</small>}
          </span>
        </label>
      ))}
    </fieldset>
  );
}

function CreateAgent({ onCreated }: { onCreated: () => Promise<void> }) {
  const tools = useLoad(() => api<{ data: Tool[] }>('GET', '/analytics/tools'), []);
  const knowledgeBases = useLoad(() => api<Page<KnowledgeBase>>('GET', '/knowledge-bases?limit=200'), []);
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [language, setLanguage] = useState('en-US');
  const [voice, setVoice] = useState('');
  const [systemPrompt, setSystemPrompt] = useState('');
  const [firstMessage, setFirstMessage] = useState('');
  const [chosenTools, setChosenTools] = useState<string[]>([]);
  const [knowledgeBaseIds, setKnowledgeBaseIds] = useState<string[]>([]);

  const create = useAction(async () => {
    const optional = { description, voice, systemPrompt, firstMessage };
    const given = Object.fromEntries(Object.entries(optional).filter(([, value]) => value.trim() !== ''));
    await api('POST', '/agents', { name, language, ...given, tools: chosenTools, knowledgeBaseIds } satisfies CreateAgentBody);
    setName('');
    setDescription('');
    setLanguage('en-US');
    setVoice('');
    setSystemPrompt('');
    setFirstMessage('');
    setChosenTools([]);
    setKnowledgeBaseIds([]);
    await onCreated();
  });
  const tooManyBases = knowledgeBaseIds.length > MAX_KNOWLEDGE_BASES;

  return (
    <section aria-labelledby="create-agent-title">
      <h2 id="create-agent-title">Create an agent</h2>
      <Form class="grid-form" onSubmit={create.run}>
        <Field
          label="Agent name"
          value={name}
          onValue={setName}
          required
          maxLength={200}
          autoComplete="off"
          hint="Unique among your agents."
          problem={fieldErrorOf(create.error, '/name')}
        />
        <Field
          label="Language"
          value={language}
          onValue={setLanguage}
          required
          maxLength={16}
          pattern="[A-Za-z]{2,3}(-[A-Za-z]{4})?(-([A-Za-z]{2}|[0-9]{3}))?"
          hint="A BCP-47 tag such as en-US, es or pt-BR."
          problem={fieldErrorOf(create.error, '/language')}
        />
        <Field
          label="Voice (optional)"
          value={voice}
          onValue={setVoice}
          maxLength={200}
          hint="The text-to-speech voice's identifier."
          problem={fieldErrorOf(create.error, '/voice')}
        />
        <Field
          label="Description (optional)"
          value={description}
          onValue={setDescription}
          maxLength={2000}
          problem={fieldErrorOf(create.error, '/description')}
        />
        <TextArea
          class="wide agents-long"
          label="System prompt (optional)"
          value={systemPrompt}
          onValue={setSystemPrompt}
          maxLength={50_000}
          hint="Instructions the agent follows on every call."
          problem={fieldErrorOf(create.error, '/systemPrompt')}
        />
        <TextArea
          class="wide agents-long"
          label="First message (optional)"
          value={firstMessage}
          onValue={setFirstMessage}
          maxLength={2000}
          hint="What the agent says first when the call is answered."
          problem={fieldErrorOf(create.error, '/firstMessage')}
        />
        <ErrorMessage error={tools.error ?? knowledgeBases.error} />
        <Choices
          legend="Tools"
          options={(tools.data?.data ?? []).map((tool) => ({ value: tool.name, label: tool.name, hint: tool.description }))}
          chosen={chosenTools}
          onChosen={setChosenTools}
          empty="No tools are available."
        />
        <Choices
          legend={`Knowledge bases (at most ${MAX_KNOWLEDGE_BASES})`}
          options={(knowledgeBases.data?.data ?? []).map((base) => ({ value: base.id, label: base.name }))}
          chosen={knowledgeBaseIds}
          onChosen={setKnowledgeBaseIds}
          empty={
            <>
              No knowledge bases yet; <a href="#/knowledge">create one under Knowledge</a>.
            </>
          }
        />
        {tooManyBases && (
          <p class="error wide" role="alert">
            Choose at most {MAX_KNOWLEDGE_BASES} knowledge bases.
          </p>
        )}
        <ErrorMessage error={create.error} />
        <button type="submit" class="primary" disabled={create.busy || tooManyBases}>
          Create agent
        </button>
      </Form>
    </section>
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
