import type { ComponentChildren } from 'preact';
import type {
  Agent,
  AgentLlm,
  BindingField,
  CreateAgentBody,
  CustomTool,
  KnowledgeBase,
  PutBindingsBody,
  Tool,
} from '../../../src/api-types.ts';
import { useState } from 'preact/hooks';
import { api, ApiError, type FieldError, type Page } from '../api.ts';
import { ErrorMessage, Field, fieldErrorOf, Form, Select, TextArea, useAction, useLoad, valueOptions } from '../ui.tsx';
import { LANGUAGE_PATTERN, SpeechSettings, speechBody, speechDraft } from './agent-speech.tsx';

const MAX_KNOWLEDGE_BASES = 20;
// The API's bounds on an agent's recording (src/modules/agents/schemas.ts).
const MAX_RETENTION_DAYS = 3650;
const DEFAULT_RETENTION_DAYS = 30;
const MAX_CUSTOM_TOOLS = 20;
const MAX_EXTRACTION_FIELDS = 50;
const FIELD_TYPES = ['string', 'number', 'boolean', 'enum', 'date'] as const satisfies readonly BindingField['type'][];
const NAME_PATTERN = '[A-Za-z][A-Za-z0-9_]{0,63}';

/** The variables a prompt or first message may name (the API refuses any other). */
const TEMPLATE_VARIABLES: [string, string][] = [
  ['name', "the contact's name"],
  ['phone', "the contact's phone number"],
  ['email', "the contact's email"],
  ['metadata.<key>', "a field of the contact's metadata"],
  ['campaign.name', "the campaign's name"],
  ['agent.name', "the agent's name"],
  ['now', 'the date and time'],
  ['date', "today's date"],
  ['time', 'the time'],
  ['timezone', "the contact's time zone"],
];

function TemplateVariables() {
  return (
    <span class="agent-variables">
      Variables:{' '}
      {TEMPLATE_VARIABLES.map(([name, meaning], index) => (
        <span key={name}>
          <code title={meaning}>{`{{${name}}}`}</code>
          {index < TEMPLATE_VARIABLES.length - 1 ? ', ' : '.'}
        </span>
      ))}
    </span>
  );
}

interface ToolDraft {
  name: string;
  description: string;
  parameters: string;
  url: string;
}

interface FieldDraft {
  name: string;
  type: BindingField['type'];
  description: string;
  enumValues: string;
}

const EMPTY_PARAMETERS = '{\n  "type": "object",\n  "properties": {}\n}';

const toolDraft = (tool: CustomTool): ToolDraft => ({
  name: tool.name,
  description: tool.description,
  parameters: JSON.stringify(tool.parameters, null, 2),
  url: tool.url,
});

const fieldDraft = (field: BindingField): FieldDraft => ({
  name: field.name,
  type: field.type,
  description: field.description ?? '',
  enumValues: (field.enumValues ?? []).join(', '),
});

/** A JSON error of the dashboard's own, shaped like the API's so it shows on its field the same way. */
const refused = (message: string, details: FieldError[]) => new ApiError(400, 'INVALID_INPUT', message, details);

/**
 * A JSON object typed into a text area; anything else is refused here, before sending, on its field.
 * `subject` begins the sentence: "Metadata is", "Custom tool 1: parameters are".
 */
function jsonObjectOf(text: string, subject: string, path: string, object: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (caught) {
    const message = `not valid JSON (${(caught as Error).message})`;
    throw refused(`${subject} ${message}.`, [{ path, message }]);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw refused(`${subject} not ${object}.`, [{ path, message: `must be ${object}` }]);
  return value as Record<string, unknown>;
}

/** Custom tools as the API takes them. */
const customToolsOf = (drafts: ToolDraft[]): CustomTool[] =>
  drafts.map((draft, index) => ({
    name: draft.name.trim(),
    description: draft.description.trim(),
    parameters: jsonObjectOf(
      draft.parameters,
      `Custom tool ${index + 1}: parameters are`,
      `/customTools/${index}/parameters`,
      'a JSON object (a JSON Schema with "type": "object")',
    ) as CustomTool['parameters'],
    url: draft.url.trim(),
  }));

/** The agent's metadata as the API takes it: empty means none. */
const metadataOf = (text: string) =>
  text.trim() === '' ? {} : jsonObjectOf(text, 'Metadata is', '/metadata', 'a JSON object of your own keys and values');

const bindingsOf = (drafts: FieldDraft[]): PutBindingsBody => ({
  fields: drafts.map((draft) => ({
    name: draft.name.trim(),
    type: draft.type,
    ...(draft.description.trim() ? { description: draft.description.trim() } : {}),
    ...(draft.type === 'enum'
      ? {
          enumValues: draft.enumValues
            .split(',')
            .map((value) => value.trim())
            .filter(Boolean),
        }
      : {}),
  })),
});

/** The bindings endpoint's problems, moved under /extraction so they show on the extraction fields. */
const asExtractionError = (error: unknown) =>
  error instanceof ApiError
    ? new ApiError(
        error.status,
        error.code,
        `Extraction fields: ${error.message}`,
        error.details.map((detail) => ({ ...detail, path: `/extraction${detail.path}` })),
      )
    : error;

/** The first problem the API found at `path` or under it. */
const problemUnder = (error: Error | undefined, path: string) =>
  error instanceof ApiError
    ? error.details.find((detail) => detail.path === path || detail.path.startsWith(`${path}/`))?.message
    : undefined;

function Check({
  label,
  checked,
  onChecked,
  hint,
}: {
  label: string;
  checked: boolean;
  onChecked: (checked: boolean) => void;
  hint?: string;
}) {
  return (
    <label class="agent-check wide">
      <input type="checkbox" checked={checked} onChange={(event) => onChecked(event.currentTarget.checked)} />
      <span>
        {label}
        {hint && <small class="hint"> — {hint}</small>}
      </span>
    </label>
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

/** Rows of a list editor in a fieldset: each row its own group, removable; one button adds a row. */
function Rows<T>({
  legend,
  hint,
  rows,
  max,
  itemName,
  onRows,
  blank,
  children,
}: {
  legend: string;
  hint: ComponentChildren;
  rows: T[];
  max: number;
  itemName: string;
  onRows: (rows: T[]) => void;
  blank: () => T;
  children: (row: T, index: number, set: (patch: Partial<T>) => void) => ComponentChildren;
}) {
  return (
    <fieldset class="agent-rows wide">
      <legend>{legend}</legend>
      <p class="hint">{hint}</p>
      {rows.map((row, index) => (
        <fieldset class="agent-row" key={index}>
          <legend>
            {itemName} {index + 1}
          </legend>
          {children(row, index, (patch) => onRows(rows.map((other, at) => (at === index ? { ...other, ...patch } : other))))}
          <button type="button" class="danger" onClick={() => onRows(rows.filter((_, at) => at !== index))}>
            Remove {itemName.toLowerCase()} {index + 1}
          </button>
        </fieldset>
      ))}
      <button type="button" disabled={rows.length >= max} onClick={() => onRows([...rows, blank()])}>
        Add {itemName.toLowerCase()}
      </button>
    </fieldset>
  );
}

/**
 * Every setting of an agent, for a new agent (POST) or an existing one (PATCH), and its extraction
 * fields (PUT bindings, once the agent exists). The API's problems show on the fields they concern.
 */
export function AgentForm({
  agent,
  fields,
  onSaved,
}: {
  /** The agent to edit; none to create one. */
  agent?: Agent;
  /** Its extraction fields as stored. */
  fields?: BindingField[];
  /** After a save: the agent as the API answered it (with its one-time secret when created). */
  onSaved: (saved: Agent) => void | Promise<void>;
}) {
  const tools = useLoad(() => api<{ data: Tool[] }>('GET', '/analytics/tools?limit=200'), []);
  const knowledgeBases = useLoad(() => api<Page<KnowledgeBase>>('GET', '/knowledge-bases?limit=200'), []);
  const [name, setName] = useState(agent?.name ?? '');
  const [description, setDescription] = useState(agent?.description ?? '');
  const [language, setLanguage] = useState(agent?.language ?? 'en-US');
  const [speech, setSpeech] = useState(() => speechDraft(agent));
  const [systemPrompt, setSystemPrompt] = useState(agent?.systemPrompt ?? '');
  const [firstMessage, setFirstMessage] = useState(agent?.firstMessage ?? '');
  const [model, setModel] = useState(agent?.llm?.model ?? '');
  const [temperature, setTemperature] = useState(agent?.llm?.temperature?.toString() ?? '');
  const [maxTokens, setMaxTokens] = useState(agent?.llm?.maxTokens?.toString() ?? '');
  const [knowledgeInContext, setKnowledgeInContext] = useState(agent?.knowledgeInContext ?? false);
  const [transferNumber, setTransferNumber] = useState(agent?.transferNumber ?? '');
  const [recording, setRecording] = useState(agent?.recording.enabled ?? false);
  const [retentionDays, setRetentionDays] = useState(String(agent?.recording.retentionDays ?? DEFAULT_RETENTION_DAYS));
  const [metadata, setMetadata] = useState(() =>
    agent && Object.keys(agent.metadata).length > 0 ? JSON.stringify(agent.metadata, null, 2) : '',
  );
  const [chosenTools, setChosenTools] = useState<string[]>(agent?.tools ?? []);
  const [knowledgeBaseIds, setKnowledgeBaseIds] = useState<string[]>(agent?.knowledgeBaseIds ?? []);
  const [customTools, setCustomTools] = useState<ToolDraft[]>((agent?.customTools ?? []).map(toolDraft));
  const [extraction, setExtraction] = useState<FieldDraft[]>((fields ?? []).map(fieldDraft));
  const [saved, setSaved] = useState('');

  const save = useAction(async () => {
    setSaved('');
    const llm: AgentLlm | null = model.trim()
      ? {
          provider: 'OPENAI_COMPATIBLE',
          model: model.trim(),
          ...(temperature.trim() ? { temperature: Number(temperature) } : {}),
          ...(maxTokens.trim() ? { maxTokens: Number(maxTokens) } : {}),
        }
      : null;
    const orNull = (value: string) => (value.trim() === '' ? null : value);
    const body = {
      name,
      language,
      description: orNull(description),
      ...speechBody(speech),
      systemPrompt: orNull(systemPrompt),
      firstMessage: orNull(firstMessage),
      tools: chosenTools,
      knowledgeBaseIds,
      customTools: customToolsOf(customTools),
      llm,
      knowledgeInContext,
      transferNumber: orNull(transferNumber),
      recording: { enabled: recording, retentionDays: Number(retentionDays) },
      metadata: metadataOf(metadata),
    } satisfies CreateAgentBody;
    const bindings = bindingsOf(extraction);
    const answer = agent ? await api<Agent>('PATCH', `/agents/${agent.id}`, body) : await api<Agent>('POST', '/agents', body);
    if (agent || bindings.fields.length > 0) {
      try {
        await api('PUT', `/analytics/agents/${answer.id}/bindings`, bindings);
      } catch (caught) {
        // A new agent exists by now: it is handed on (its secret is shown once) before the problem is.
        if (!agent) await onSaved(answer);
        throw asExtractionError(caught);
      }
    }
    await onSaved(answer);
    setSaved(agent ? 'Saved.' : '');
  });

  const error = save.error;
  const problem = (path: string) => fieldErrorOf(error, path);
  const llmProblem =
    error instanceof ApiError && error.code === 'LLM_NOT_CONFIGURED' ? error.message : (problem('/llm') ?? problem('/llm/model'));
  const tooManyBases = knowledgeBaseIds.length > MAX_KNOWLEDGE_BASES;
  const toolNames = (tools.data?.data ?? []).map((tool) => tool.name);
  // A built-in tool the catalogue no longer has is kept, so saving does not drop it unseen.
  const unknownTools = chosenTools.filter((tool) => tools.data && !toolNames.includes(tool));

  return (
    <Form class="grid-form agent-form" onSubmit={save.run}>
      <Field
        label="Agent name"
        value={name}
        onValue={setName}
        required
        maxLength={200}
        autoComplete="off"
        hint="Unique among your agents."
        problem={problem('/name')}
      />
      <Field
        label="Language"
        value={language}
        onValue={setLanguage}
        required
        maxLength={16}
        pattern={LANGUAGE_PATTERN}
        hint="A BCP-47 tag such as en-US, es or pt-BR."
        problem={problem('/language')}
      />
      <Field
        label="Description (optional)"
        value={description}
        onValue={setDescription}
        maxLength={2000}
        problem={problem('/description')}
      />
      <TextArea
        class="wide agents-long"
        label="System prompt (optional)"
        value={systemPrompt}
        onValue={setSystemPrompt}
        rows={6}
        maxLength={50_000}
        hint="Instructions a language model follows on every call; variables are filled per call. Without a model (the built-in retrieval agent), the prompt changes nothing: that agent answers only from the knowledge bases."
        note={<TemplateVariables />}
        problem={problem('/systemPrompt')}
      />
      <TextArea
        class="wide agents-long"
        label="First message (optional)"
        value={firstMessage}
        onValue={setFirstMessage}
        rows={2}
        maxLength={2000}
        hint="What the agent says first when the call is answered, with the same variables. Empty: the model opens, or the retrieval agent greets."
        problem={problem('/firstMessage')}
      />
      <fieldset class="agent-rows wide">
        <legend>Language model</legend>
        <p class="hint">
          Empty model: the service's default model, or, when the service has no model server, the built-in retrieval agent that answers from
          the knowledge bases.
        </p>
        <div class="agent-row-fields">
          <Select
            label="Model server"
            value="OPENAI_COMPATIBLE"
            onValue={() => undefined}
            options={[['OPENAI_COMPATIBLE', 'OpenAI-compatible']]}
          />
          <Field
            label="Model (optional)"
            value={model}
            onValue={setModel}
            maxLength={200}
            autoComplete="off"
            placeholder="gpt-4o-mini"
            problem={llmProblem}
          />
          <Field
            label="Temperature (optional)"
            type="number"
            inputMode="decimal"
            min={0}
            max={2}
            step={0.1}
            value={temperature}
            onValue={setTemperature}
            disabled={!model.trim()}
            hint="0 to 2."
            problem={problem('/llm/temperature')}
          />
          <Field
            label="Max reply tokens (optional)"
            type="number"
            inputMode="numeric"
            min={16}
            max={4096}
            step={1}
            value={maxTokens}
            onValue={setMaxTokens}
            disabled={!model.trim()}
            hint="16 to 4,096; 300 when empty."
            problem={problem('/llm/maxTokens')}
          />
        </div>
        <Check
          label="Knowledge in context"
          checked={knowledgeInContext}
          onChecked={setKnowledgeInContext}
          hint="Passages of the knowledge bases are given to the model on every turn."
        />
      </fieldset>
      <SpeechSettings draft={speech} onDraft={setSpeech} language={language} error={error} />
      <fieldset class="agent-rows wide">
        <legend>Call recording</legend>
        <p class="hint">
          Phone calls recorded as a WAV file, the contact on the left channel and the agent on the right, played on each call's page. Where
          the person called lives, recording may need their consent or an announcement (say so in the first message): that is your duty.
        </p>
        <Check label="Record this agent's calls" checked={recording} onChecked={setRecording} />
        <Field
          label="Keep recordings (days)"
          type="number"
          inputMode="numeric"
          min={1}
          max={MAX_RETENTION_DAYS}
          step={1}
          required
          value={retentionDays}
          onValue={setRetentionDays}
          hint={`1 to ${MAX_RETENTION_DAYS}; a recording is deleted after that many days.`}
          problem={problem('/recording/retentionDays')}
        />
      </fieldset>
      <Field
        label="Transfer number (optional)"
        type="tel"
        inputMode="tel"
        autoComplete="off"
        maxLength={40}
        value={transferNumber}
        onValue={setTransferNumber}
        hint="Where the transfer_call tool sends the caller, E.164."
        problem={problem('/transferNumber')}
      />
      <TextArea
        class="wide agents-long agent-json"
        label="Metadata (optional)"
        value={metadata}
        onValue={setMetadata}
        rows={3}
        hint='Your own keys and values as a JSON object, such as {"crmId": "A-17"}; returned with the agent, never read by it.'
        problem={problemUnder(error, '/metadata')}
      />
      <ErrorMessage error={tools.error ?? knowledgeBases.error} />
      <Choices
        legend="Tools"
        options={[
          ...(tools.data?.data ?? []).map((tool) => ({ value: tool.name, label: tool.name, hint: tool.description })),
          ...unknownTools.map((tool) => ({ value: tool, label: tool, hint: 'no longer offered' })),
        ]}
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
      <Rows
        legend={`Custom tools (at most ${MAX_CUSTOM_TOOLS})`}
        hint="Your own HTTP tools: the model's arguments are POSTed to the URL, signed with the agent's tool signing secret."
        rows={customTools}
        max={MAX_CUSTOM_TOOLS}
        itemName="Custom tool"
        onRows={setCustomTools}
        blank={(): ToolDraft => ({ name: '', description: '', parameters: EMPTY_PARAMETERS, url: '' })}
      >
        {(tool, index, set) => (
          <div class="agent-row-fields">
            <Field
              label="Tool name"
              value={tool.name}
              onValue={(value) => set({ name: value })}
              required
              pattern={NAME_PATTERN}
              maxLength={64}
              autoComplete="off"
              hint="A letter, then letters, digits or _."
              problem={problem(`/customTools/${index}/name`)}
            />
            <Field
              label="Tool URL"
              type="url"
              value={tool.url}
              onValue={(value) => set({ url: value })}
              required
              maxLength={2000}
              placeholder="https://example.com/tools/lookup"
              problem={problem(`/customTools/${index}/url`)}
            />
            <TextArea
              class="wide agents-long"
              label="Tool description"
              value={tool.description}
              onValue={(value) => set({ description: value })}
              rows={2}
              required
              maxLength={1000}
              hint="What it does and when to use it, for the model."
              problem={problem(`/customTools/${index}/description`)}
            />
            <TextArea
              class="wide agents-long agent-json"
              label="Tool parameters (JSON Schema)"
              value={tool.parameters}
              onValue={(value) => set({ parameters: value })}
              rows={5}
              required
              hint='A JSON Schema with "type": "object"; checked as JSON before it is sent.'
              problem={problemUnder(error, `/customTools/${index}/parameters`)}
            />
          </div>
        )}
      </Rows>
      <Rows
        legend={`Extraction fields (at most ${MAX_EXTRACTION_FIELDS})`}
        hint="What is read out of each finished call into its analytics record."
        rows={extraction}
        max={MAX_EXTRACTION_FIELDS}
        itemName="Field"
        onRows={setExtraction}
        blank={(): FieldDraft => ({ name: '', type: 'string', description: '', enumValues: '' })}
      >
        {(field, index, set) => (
          <div class="agent-row-fields">
            <Field
              label="Field name"
              value={field.name}
              onValue={(value) => set({ name: value })}
              required
              pattern={NAME_PATTERN}
              maxLength={64}
              autoComplete="off"
              problem={problem(`/extraction/fields/${index}/name`)}
            />
            <Select
              label="Field type"
              value={field.type}
              onValue={(value) => set({ type: value })}
              options={valueOptions(FIELD_TYPES)}
              problem={problem(`/extraction/fields/${index}/type`)}
            />
            <Field
              label="Field description (optional)"
              value={field.description}
              onValue={(value) => set({ description: value })}
              maxLength={500}
              hint="What to extract."
              problem={problem(`/extraction/fields/${index}/description`)}
            />
            {field.type === 'enum' && (
              <Field
                label="Allowed values"
                value={field.enumValues}
                onValue={(value) => set({ enumValues: value })}
                required
                hint="Separated by commas."
                problem={problemUnder(error, `/extraction/fields/${index}/enumValues`)}
              />
            )}
          </div>
        )}
      </Rows>
      <ErrorMessage error={error} />
      <div class="actions wide">
        <button type="submit" class="primary" disabled={save.busy || tooManyBases}>
          {agent ? 'Save agent' : 'Create agent'}
        </button>
        <span aria-live="polite">{saved}</span>
      </div>
    </Form>
  );
}
