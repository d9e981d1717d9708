import { useState } from 'preact/hooks';
import type { Agent, ApiKey, CreateApiKeyBody, CreatedApiKey } from '../../../src/api-types.ts';
import { api, type Page } from '../api.ts';
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
  Select,
  Status,
  useAction,
  useLoad,
} from '../ui.tsx';

/** API keys: create one (shown once), list them, revoke with confirmation. */
export function KeysPage() {
  const keys = useLoad(() => api<Page<ApiKey>>('GET', '/api-keys?limit=200'), []);
  const agents = useLoad(() => api<Page<Agent>>('GET', '/agents?limit=200'), []);
  const [name, setName] = useState('');
  const [expiresAt, setExpiresAt] = useState('');
  const [webhookUrl, setWebhookUrl] = useState('');
  const [agentId, setAgentId] = useState('');
  const [created, setCreated] = useState<CreatedApiKey | undefined>(undefined);
  const [copied, setCopied] = useState(false);
  const [revoking, setRevoking] = useState<ApiKey | undefined>(undefined);

  const create = useAction(async () => {
    const body = {
      name,
      ...(expiresAt ? { expiresAt: new Date(expiresAt).toISOString() } : {}),
      ...(webhookUrl ? { webhookUrl } : {}),
      ...(agentId ? { agentId } : {}),
    } satisfies CreateApiKeyBody;
    setCreated(await api<CreatedApiKey>('POST', '/api-keys', body));
    setCopied(false);
    setName('');
    setExpiresAt('');
    setWebhookUrl('');
    setAgentId('');
    await keys.reload();
  });
  const revoke = useAction(async (key: ApiKey) => {
    await api('DELETE', `/api-keys/${key.id}`);
    setRevoking(undefined);
    await keys.reload();
  });
  const copy = async () => {
    // The dashboard sends no Idempotency-Key, so its answer always holds the key.
    await navigator.clipboard.writeText(created?.key ?? '');
    setCopied(true);
  };

  return (
    <>
      <PageTitle>API keys</PageTitle>
      {created && (
        <section class="callout" aria-labelledby="new-key-title">
          <h2 id="new-key-title">Your new key “{created.name}”</h2>
          <p class="warning" role="alert">
            Copy it now: it is shown only this once and cannot be recovered. Anyone who has it can use your account through the API.
          </p>
          <div class="secret">
            <code data-testid="new-key">{created.key}</code>
            <button type="button" onClick={() => void copy()}>
              {copied ? 'Copied' : 'Copy key'}
            </button>
          </div>
          {created.webhookSecret && (
            <p>
              Webhook signing secret (also shown once): <code data-testid="webhook-secret">{created.webhookSecret}</code>
            </p>
          )}
          <button type="button" onClick={() => setCreated(undefined)}>
            I have stored it safely
          </button>
        </section>
      )}
      <section aria-labelledby="create-key-title">
        <h2 id="create-key-title">Create a key</h2>
        <Form class="grid-form" onSubmit={create.run}>
          <Field label="Name" value={name} onValue={setName} required maxLength={200} problem={fieldErrorOf(create.error, '/name')} />
          <Field
            label="Expires (optional)"
            type="datetime-local"
            value={expiresAt}
            onValue={setExpiresAt}
            hint="Leave empty for a key that does not expire."
            problem={fieldErrorOf(create.error, '/expiresAt')}
          />
          <Field
            label="Webhook URL (optional)"
            type="url"
            value={webhookUrl}
            onValue={setWebhookUrl}
            placeholder="https://example.com/callforge"
            hint="Call results and events are posted here, signed."
            problem={fieldErrorOf(create.error, '/webhookUrl')}
          />
          <Select
            label="Pinned agent (optional)"
            value={agentId}
            onValue={setAgentId}
            options={namedOptions(agents.data?.data, ['', 'All agents'])}
            hint="A pinned key sees only that agent's calls."
          />
          <ErrorMessage error={create.error} />
          <button type="submit" class="primary" disabled={create.busy}>
            Create key
          </button>
        </Form>
      </section>
      <section aria-labelledby="keys-title">
        <h2 id="keys-title">Keys</h2>
        <ErrorMessage error={keys.error ?? revoke.error} />
        {keys.data && keys.data.data.length === 0 && <Empty>No keys yet.</Empty>}
        {keys.data && keys.data.data.length > 0 && (
          <DataTable
            rows={keys.data.data}
            rowKey={(key) => key.id}
            columns={[
              { header: 'Name', cell: (key) => key.name },
              { header: 'Prefix', cell: (key) => <code>{key.keyPrefix}…</code> },
              { header: 'Created', cell: (key) => formatDate(key.createdAt) },
              { header: 'Last used', cell: (key) => formatDate(key.lastUsedAt) },
              { header: 'Expires', cell: (key) => (key.expiresAt ? formatDate(key.expiresAt) : 'Never') },
              { header: 'Status', cell: (key) => <Status value={key.status} /> },
              {
                header: <ActionsHeader />,
                cell: (key) =>
                  key.status === 'ACTIVE' && (
                    <button type="button" class="danger" onClick={() => setRevoking(key)} aria-label={`Revoke ${key.name}`}>
                      Revoke
                    </button>
                  ),
              },
            ]}
          />
        )}
      </section>
      <Confirm
        open={!!revoking}
        title="Revoke this key?"
        confirmLabel="Revoke key"
        onCancel={() => setRevoking(undefined)}
        onConfirm={() => void revoke.run(revoking!)}
      >
        <p>
          “{revoking?.name}” ({revoking?.keyPrefix}…) stops working at once, everywhere. This cannot be undone.
        </p>
      </Confirm>
    </>
  );
}
