import './integrations.css';
import { useState } from 'preact/hooks';
import type { Integration } from '../../../src/api-types.ts';
import { api } from '../api.ts';
import { Confirm, ErrorMessage, Field, fieldErrorOf, Form, formatDate, PageTitle, useAction, useLoad } from '../ui.tsx';

interface CredentialField {
  name: string;
  label: string;
  secret: boolean;
  pattern: string;
  maxLength: number;
  hint: string;
}

interface Kind {
  kind: string;
  title: string;
  purpose: string;
  fields: CredentialField[];
}

const speechApiKey: CredentialField = {
  name: 'apiKey',
  label: 'API key',
  secret: true,
  pattern: '.{16,200}',
  maxLength: 200,
  hint: '16 to 200 characters.',
};

// The fields and limits each provider's integration declares (src/providers/*/index.ts); the server refuses anything else with its own message.
const KINDS: Kind[] = [
  {
    kind: 'twilio',
    title: 'Twilio',
    purpose: 'Places and answers calls on TWILIO voice numbers, and sends SMS.',
    fields: [
      {
        name: 'accountSid',
        label: 'Account SID',
        secret: false,
        pattern: 'AC[0-9a-fA-F]{32}',
        maxLength: 34,
        hint: 'AC followed by 32 hexadecimal digits.',
      },
      { name: 'authToken', label: 'Auth token', secret: true, pattern: '.{16,128}', maxLength: 128, hint: '16 to 128 characters.' },
    ],
  },
  {
    kind: 'whatsapp',
    title: 'WhatsApp Cloud API',
    purpose: 'Sends WhatsApp template messages after calls.',
    fields: [
      {
        name: 'businessAccountId',
        label: 'Business account ID',
        secret: false,
        pattern: '[0-9]{1,32}',
        maxLength: 32,
        hint: 'Your WhatsApp Business Account (WABA) id, digits only.',
      },
      {
        name: 'phoneNumberId',
        label: 'Phone number ID',
        secret: false,
        pattern: '[0-9]{1,32}',
        maxLength: 32,
        hint: 'The default sender phone number id, digits only.',
      },
      {
        name: 'accessToken',
        label: 'Access token',
        secret: true,
        pattern: '.{16,1024}',
        maxLength: 1024,
        hint: 'A system-user token with whatsapp_business_messaging and whatsapp_business_management; 16 to 1,024 characters.',
      },
      {
        name: 'appSecret',
        label: 'App secret',
        secret: true,
        pattern: '.{16,256}',
        maxLength: 256,
        hint: "The Meta app's secret, which signs webhook deliveries; 16 to 256 characters.",
      },
    ],
  },
  {
    kind: 'telnyx',
    title: 'Telnyx',
    purpose: 'Places calls on TELNYX voice numbers through Call Control, and sends SMS.',
    fields: [
      {
        name: 'connectionId',
        label: 'Call Control application ID',
        secret: false,
        pattern: '[A-Za-z0-9_\\-]{1,64}',
        maxLength: 64,
        hint: 'The Call Control application (connection) that places the calls.',
      },
      {
        name: 'publicKey',
        label: 'Public key',
        secret: false,
        pattern: '[A-Za-z0-9+\\/]{43}=',
        maxLength: 44,
        hint: "The account's Ed25519 public key (Keys & Credentials), which verifies Telnyx's webhooks.",
      },
      { name: 'apiKey', label: 'API key', secret: true, pattern: '.{16,256}', maxLength: 256, hint: '16 to 256 characters.' },
    ],
  },
  {
    kind: 'deepgram',
    title: 'Deepgram',
    purpose: "Hears callers: live speech-to-text for agents whose speech-to-text is Deepgram, instead of the service's account.",
    fields: [speechApiKey],
  },
  {
    kind: 'elevenlabs',
    title: 'ElevenLabs',
    purpose: "Speaks for agents whose text-to-speech is ElevenLabs, with its voices (yours too), instead of the service's account.",
    fields: [speechApiKey],
  },
  {
    kind: 'msg91',
    title: 'MSG91',
    purpose: 'Sends SMS in India (DLT-registered templates).',
    fields: [{ name: 'authKey', label: 'Auth key', secret: true, pattern: '.{8,128}', maxLength: 128, hint: '8 to 128 characters.' }],
  },
];

/** The tenant's own provider credentials: which are connected, connect or update, disconnect. */
export function IntegrationsPage(_props: { params: Record<string, string> }) {
  const connected = useLoad(() => api<{ data: Integration[] }>('GET', '/integrations'), []);
  const [disconnecting, setDisconnecting] = useState<Kind | undefined>(undefined);
  const disconnect = useAction(async (kind: Kind) => {
    await api('DELETE', `/integrations/${kind.kind}`);
    setDisconnecting(undefined);
    await connected.reload();
  });
  const cancelDisconnect = () => {
    setDisconnecting(undefined);
    disconnect.clearError();
  };

  return (
    <>
      <PageTitle>Integrations</PageTitle>
      <p>
        Your own provider accounts. Secrets are stored encrypted and are never shown again, not even here: to change one, enter it anew.
      </p>
      <ErrorMessage error={connected.error} />
      {connected.data && (
        <div class="integrations">
          {KINDS.map((kind) => (
            <IntegrationCard
              key={kind.kind}
              kind={kind}
              current={connected.data!.data.find((integration) => integration.kind === kind.kind)}
              onSaved={connected.reload}
              onDisconnect={() => setDisconnecting(kind)}
            />
          ))}
        </div>
      )}
      <Confirm
        open={!!disconnecting}
        title={`Disconnect ${disconnecting?.title ?? ''}?`}
        confirmLabel="Disconnect"
        onCancel={cancelDisconnect}
        onConfirm={() => void disconnect.run(disconnecting!)}
      >
        <p>
          Its stored credentials are deleted at once; anything that uses {disconnecting?.title} stops working until you connect it again.
        </p>
        <ErrorMessage error={disconnect.error} />
      </Confirm>
    </>
  );
}

function IntegrationCard({
  kind,
  current,
  onSaved,
  onDisconnect,
}: {
  kind: Kind;
  current: Integration | undefined;
  onSaved: () => Promise<void>;
  onDisconnect: () => void;
}) {
  const blank = () =>
    Object.fromEntries(kind.fields.map((field) => [field.name, field.secret ? '' : (current?.settings[field.name] ?? '')]));
  const [values, setValues] = useState<Record<string, string>>(blank);
  const save = useAction(async () => {
    await api('PUT', `/integrations/${kind.kind}`, values);
    // Secrets leave the page once sent; settings keep what was saved.
    setValues((before) => Object.fromEntries(kind.fields.map((field) => [field.name, field.secret ? '' : (before[field.name] ?? '')])));
    await onSaved();
  });
  const titleId = `integration-${kind.kind}-title`;

  return (
    <section class="card integrations-card" aria-labelledby={titleId}>
      <h2 id={titleId}>{kind.title}</h2>
      <p class="hint">{kind.purpose}</p>
      <div aria-live="polite">
        {current ? (
          <>
            <p>
              <span class="status status-active">Connected</span> since {formatDate(current.createdAt)}
              {current.updatedAt !== current.createdAt && <>, updated {formatDate(current.updatedAt)}</>}
            </p>
            <dl class="integrations-facts">
              {kind.fields.map((field) => (
                <div key={field.name}>
                  <dt>{field.label}</dt>
                  <dd>
                    {field.secret ? (
                      current.secretsSet.includes(field.name) ? (
                        'Set (hidden)'
                      ) : (
                        'Not set'
                      )
                    ) : (
                      <code>{current.settings[field.name] ?? '—'}</code>
                    )}
                  </dd>
                </div>
              ))}
            </dl>
          </>
        ) : (
          <p>
            <span class="status">Not connected</span>
          </p>
        )}
      </div>
      <Form onSubmit={save.run}>
        {kind.fields.map((field) => (
          <Field
            key={field.name}
            label={field.label}
            type={field.secret ? 'password' : 'text'}
            autoComplete="off"
            required
            pattern={field.pattern}
            maxLength={field.maxLength}
            hint={field.secret && current ? `${field.hint} Enter it again to update.` : field.hint}
            value={values[field.name] ?? ''}
            onValue={(value) => setValues({ ...values, [field.name]: value })}
            problem={fieldErrorOf(save.error, `/${field.name}`)}
          />
        ))}
        <ErrorMessage error={save.error} />
        <div class="actions">
          <button type="submit" class="primary" disabled={save.busy}>
            {current ? `Update ${kind.title}` : `Connect ${kind.title}`}
          </button>
          {current && (
            <button type="button" class="danger" onClick={onDisconnect}>
              Disconnect {kind.title}
            </button>
          )}
        </div>
      </Form>
    </section>
  );
}
