import type { Agent, AgentVersion, AgentVersionDiff, PublishVersionBody } from '../../../src/api-types.ts';
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
  useAction,
  useLoad,
} from '../ui.tsx';

/** The newest versions of an agent (the API's page limit), for the lists that offer one. */
export const versionsLoad = (agentId: string) => api<Page<AgentVersion>>('GET', `/agents/${agentId}/versions${query({ limit: 100 })}`);

/** A versioned field's name as people read it. */
const FIELD_WORDS: Record<AgentVersionDiff['changes'][number]['field'], string> = {
  language: 'Language',
  voice: 'Voice',
  systemPrompt: 'System prompt',
  firstMessage: 'First message',
  knowledgeBaseIds: 'Knowledge bases',
  tools: 'Built-in tools',
  customTools: 'Custom tools',
  llm: 'Model',
  realtime: 'Speech-to-speech model',
  stt: 'Speech-to-text',
  tts: 'Text-to-speech',
  backup: 'Backup providers',
  voicePipeline: 'Voice pipeline',
  knowledgeInContext: 'Knowledge in the prompt',
  transferNumber: 'Transfer number',
};

/** A config value as text: strings as they are, nothing as a dash, the rest as indented JSON. */
const valueText = (value: unknown) =>
  value === null || value === undefined || value === '' ? '—' : typeof value === 'string' ? value : JSON.stringify(value, null, 2);

/**
 * The agent's published versions: publish the current config with a note, compare a version with
 * the config as it is now, field by field, and restore one (after a confirmation; nothing is published).
 */
export function VersionsSection({
  agent,
  versions,
  onRestored,
}: {
  agent: Agent;
  /** The agent's versions, loaded by its page (its test suites run them too). */
  versions: ReturnType<typeof useLoad<Page<AgentVersion>>>;
  onRestored: () => void | Promise<void>;
}) {
  const [note, setNote] = useState('');
  const [comparing, setComparing] = useState<number | undefined>(undefined);
  const [restoring, setRestoring] = useState<number | undefined>(undefined);
  const [restored, setRestored] = useState<number | undefined>(undefined);

  const publish = useAction(async () => {
    const body: PublishVersionBody = note.trim() ? { note: note.trim() } : {};
    await api<AgentVersion>('POST', `/agents/${agent.id}/versions`, body);
    setNote('');
    await versions.reload();
  });
  const restore = useAction(async (version: number) => {
    await api<Agent>('POST', `/agents/${agent.id}/versions/${version}/restore`);
    // Said once the page shows the restored settings, not before.
    await onRestored();
    setRestored(version);
    setComparing(undefined);
  });

  return (
    <section class="agent-versions" aria-labelledby="versions-title">
      <h2 id="versions-title">Versions</h2>
      <p class="hint">
        Publishing freezes how the agent converses (prompts, tools, knowledge, model, speech) as a numbered version that campaigns can pin
        or split their contacts between. Its test suites run against each new version.
      </p>
      <Form class="inline-form" onSubmit={publish.run}>
        <Field
          label="What changed (optional)"
          value={note}
          onValue={setNote}
          maxLength={500}
          problem={fieldErrorOf(publish.error, '/note')}
        />
        <button type="submit" class="primary" disabled={publish.busy}>
          Publish version
        </button>
      </Form>
      <ErrorMessage error={publish.error ?? versions.error ?? restore.error} />
      {restored !== undefined && (
        <p role="status" class="callout">
          The agent's settings are version {restored}'s again. Nothing was published: publish them to make a new version.
        </p>
      )}
      {versions.data && versions.data.total === 0 && <Empty>No version published yet: calls run the agent as it is.</Empty>}
      {versions.data && versions.data.total > 0 && (
        <DataTable
          caption="Published versions, newest first"
          rows={versions.data.data}
          rowKey={(version) => version.version}
          columns={[
            { header: 'Version', rowHeader: true, cell: (version) => `Version ${version.version}` },
            { header: 'What changed', cell: (version) => version.note ?? '—' },
            { header: 'Published', cell: (version) => formatDate(version.createdAt) },
            {
              header: <ActionsHeader />,
              cell: (version) => (
                <div class="actions">
                  <button
                    type="button"
                    aria-expanded={comparing === version.version}
                    aria-controls="version-diff"
                    onClick={() => setComparing(comparing === version.version ? undefined : version.version)}
                  >
                    {comparing === version.version ? 'Hide comparison' : `Compare version ${version.version} with now`}
                  </button>
                  <button type="button" disabled={restore.busy} onClick={() => setRestoring(version.version)}>
                    Restore version {version.version}
                  </button>
                </div>
              ),
            },
          ]}
        />
      )}
      {comparing !== undefined && <VersionDiff key={`${comparing}-${agent.updatedAt}`} agentId={agent.id} version={comparing} />}
      <Confirm
        open={restoring !== undefined}
        title={`Restore version ${restoring ?? ''}?`}
        confirmLabel="Yes, restore"
        onCancel={() => setRestoring(undefined)}
        onConfirm={() => {
          const version = restoring!;
          setRestoring(undefined);
          void restore.run(version);
        }}
      >
        <p>
          The agent's prompts, tools, knowledge, model and speech become version {restoring}'s, replacing the settings it has now (publish
          them first to keep them as a version). Calls that run the live agent use them at once.
        </p>
      </Confirm>
    </section>
  );
}

/** The fields in which a version differs from the agent's current config, current beside the version's. */
function VersionDiff({ agentId, version }: { agentId: string; version: number }) {
  const diff = useLoad(() => api<AgentVersionDiff>('GET', `/agents/${agentId}/versions/${version}/diff`), [agentId, version]);
  return (
    <div id="version-diff" class="card version-diff" aria-live="polite">
      <h3>Version {version} against the current settings</h3>
      <ErrorMessage error={diff.error} />
      {diff.data && diff.data.changes.length === 0 && <Empty>Version {version} is the same as the current settings.</Empty>}
      {diff.data && diff.data.changes.length > 0 && (
        <DataTable
          rows={diff.data.changes}
          rowKey={(change) => change.field}
          columns={[
            { header: 'Field', rowHeader: true, cell: (change) => FIELD_WORDS[change.field] },
            { header: 'Now', cell: (change) => <pre class="diff-value">{valueText(change.from)}</pre> },
            { header: `Version ${version}`, cell: (change) => <pre class="diff-value">{valueText(change.to)}</pre> },
          ]}
        />
      )}
    </div>
  );
}
