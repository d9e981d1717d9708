import './agents.css';
import type { Agent, Bindings, CreateTestChatBody, TestChat, TranscriptTurn } from '../../../src/api-types.ts';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError } from '../api.ts';
import { useProfile } from '../profile.ts';
import { brainOf, Transcript } from '../transcript.tsx';
import { ErrorMessage, Field, Form, formatMoney, PageTitle, useAction, useLoad } from '../ui.tsx';
import { AgentForm } from './agent-form.tsx';
import { SuitesSection } from './agent-suites.tsx';
import { VersionsSection, versionsLoad } from './agent-versions.tsx';
import { BrowserCallPanel } from './browser-call.tsx';

/** One agent: its settings, its extraction fields, its versions and test suites, a test chat and a browser call with it. */
export function AgentPage({ params }: { params: Record<string, string> }) {
  // Another agent is another page: an open chat or call does not carry over to it.
  return <AgentView key={params.id} id={params.id!} />;
}

function AgentView({ id }: { id: string }) {
  const loaded = useLoad(
    () => Promise.all([api<Agent>('GET', `/agents/${id}`), api<Bindings>('GET', `/analytics/agents/${id}/bindings`)]),
    [id],
  );
  const versions = useLoad(() => versionsLoad(id), [id]);
  // A restored version replaces the settings under the form: the form starts again from them.
  const [restores, setRestores] = useState(0);
  const [talking, setTalking] = useState(false);
  const [calling, setCalling] = useState(false);
  const [agent, bindings] = loaded.data ?? [];

  return (
    <>
      <PageTitle
        actions={
          agent && (
            <>
              <PanelToggle
                open={calling}
                onToggle={setCalling}
                controls="browser-call"
                labels={['Call me in the browser', 'Close the call']}
              />
              <PanelToggle open={talking} onToggle={setTalking} controls="test-chat" labels={['Talk to this agent', 'Close the chat']} />
            </>
          )
        }
      >
        {agent ? agent.name : 'Agent'}
      </PageTitle>
      <p class="actions">
        <a href="#/agents">All agents</a>
        {agent && (
          <>
            <a href={`#/calls?agentId=${agent.id}`}>Its calls</a>
            <a href={`#/analytics`}>Call results</a>
            <a href="#/calls/simulate">Simulated incoming call</a>
          </>
        )}
      </p>
      <ErrorMessage error={loaded.error} />
      {!agent && loaded.loading && <p>Loading the agent…</p>}
      {agent && (
        <div class="agent-page">
          <section id="browser-call" class="agent-chat card" aria-labelledby="browser-call-title" hidden={!calling}>
            <h2 id="browser-call-title">Call in the browser</h2>
            {calling && <BrowserCallPanel agent={agent} />}
          </section>
          <section id="test-chat" class="agent-chat card" aria-labelledby="test-chat-title" hidden={!talking}>
            <h2 id="test-chat-title">Talk to this agent</h2>
            {talking && <TestChatPanel agent={agent} />}
          </section>
          <section aria-labelledby="settings-title">
            <h2 id="settings-title">Settings</h2>
            <AgentForm key={`${agent.id}-${restores}`} agent={agent} fields={bindings?.fields ?? []} onSaved={() => loaded.reload()} />
          </section>
          <VersionsSection
            agent={agent}
            versions={versions}
            onRestored={async () => {
              await loaded.reload();
              setRestores((count) => count + 1);
            }}
          />
          <SuitesSection agent={agent} versions={versions.data?.data} />
        </div>
      )}
    </>
  );
}

/** A button that opens and closes one of the page's panels. */
function PanelToggle(props: { open: boolean; onToggle: (open: boolean) => void; controls: string; labels: [open: string, close: string] }) {
  return (
    <button
      type="button"
      class={props.open ? undefined : 'primary'}
      aria-expanded={props.open}
      aria-controls={props.controls}
      onClick={() => props.onToggle(!props.open)}
    >
      {props.labels[props.open ? 1 : 0]}
    </button>
  );
}

/**
 * A test chat with the agent, through the engine that runs its calls: its transcript as bubbles,
 * who answers (a model or the retrieval agent) and the test cost so far. The chat starts when the
 * panel opens; a chat the agent ended takes no more messages, and "New chat" starts over.
 */
function TestChatPanel({ agent }: { agent: Agent }) {
  const { profile, refresh } = useProfile();
  const [chat, setChat] = useState<TestChat | undefined>(undefined);
  const [text, setText] = useState('');
  const [pending, setPending] = useState<string | undefined>(undefined);
  const [contactName, setContactName] = useState('');
  const [contactPhone, setContactPhone] = useState('');
  const [contactEmail, setContactEmail] = useState('');
  const input = useRef<HTMLInputElement>(null);
  const box = useRef<HTMLDivElement>(null);

  const start = useAction(async () => {
    setChat(undefined);
    const contact = {
      ...(contactName.trim() ? { name: contactName.trim() } : {}),
      ...(contactPhone.trim() ? { phoneNumber: contactPhone.trim() } : {}),
      ...(contactEmail.trim() ? { email: contactEmail.trim() } : {}),
    };
    const body: CreateTestChatBody = { agentId: agent.id, ...(Object.keys(contact).length ? { contact } : {}) };
    setChat(await api<TestChat>('POST', '/test-chats', body));
    refresh();
    input.current?.focus();
  });
  const send = useAction(async () => {
    if (!chat || !text.trim()) return;
    const said = text.trim();
    setPending(said);
    setText('');
    try {
      setChat(await api<TestChat>('POST', `/test-chats/${chat.id}/messages`, { text: said }));
      refresh();
    } catch (caught) {
      // Ended meanwhile: show the chat as it is; busy: the words come back to send again.
      if (caught instanceof ApiError && caught.code === 'TEST_CHAT_ENDED') setChat(await api<TestChat>('GET', `/test-chats/${chat.id}`));
      else setText(said);
      throw caught;
    } finally {
      setPending(undefined);
    }
  });

  useEffect(() => void start.run(), [agent.id]);
  // The newest turn stays in view.
  useEffect(() => {
    if (box.current) box.current.scrollTop = box.current.scrollHeight;
  }, [chat?.transcript.length, pending]);

  const ended = chat?.status === 'ENDED';
  const turns: TranscriptTurn[] = [
    ...(chat?.transcript ?? []),
    ...(pending ? [{ role: 'contact' as const, text: pending, at: new Date().toISOString() }] : []),
  ];

  return (
    <>
      {chat && (
        <dl class="chat-facts">
          <div>
            <dt>Answered by</dt>
            <dd data-testid="test-chat-brain">{brainOf(chat.brain)}</dd>
          </div>
          <div>
            <dt>Test cost so far</dt>
            <dd data-testid="test-chat-cost">
              {profile ? formatMoney(chat.cost.total, profile.wallet.currency, { exact: true }) : chat.cost.total}
            </dd>
          </div>
          {chat.usage.llmTokens > 0 && (
            <div>
              <dt>Model tokens</dt>
              <dd>{chat.usage.llmTokens}</dd>
            </div>
          )}
        </dl>
      )}
      {chat?.brain === 'retrieval-agent' && (
        <p class="hint">
          No language model answers this agent, so its system prompt has no effect: it answers with the one sentence of its knowledge bases
          that answers, or says it does not know. Set a model server (Integrations) to have the prompt followed.
        </p>
      )}
      <div class="chat-box" ref={box} tabIndex={0} role="region" aria-label="Chat transcript">
        {start.busy && !chat && <p class="hint">Starting the chat…</p>}
        {turns.length > 0 && <Transcript turns={turns} contactLabel="You" label="Chat" live />}
      </div>
      <p class="chat-status" aria-live="polite">
        {send.busy
          ? 'The agent is answering…'
          : ended
            ? `The agent ended this chat (${chat.endReason?.replaceAll('_', ' ') ?? 'ended'}).`
            : ''}
      </p>
      <ErrorMessage error={start.error ?? send.error} />
      <Form class="chat-send" onSubmit={send.run}>
        <div class="field">
          <label for="test-chat-message">Your message</label>
          <input
            id="test-chat-message"
            ref={input}
            value={text}
            onInput={(event) => setText(event.currentTarget.value)}
            maxLength={2000}
            autoComplete="off"
            disabled={!chat || ended}
            aria-describedby={ended ? 'test-chat-ended' : undefined}
          />
          {ended && (
            <small id="test-chat-ended" class="hint">
              This chat has ended: start a new chat to talk to the agent again.
            </small>
          )}
        </div>
        <button type="submit" class="primary" disabled={!chat || ended || send.busy || !text.trim()}>
          Send
        </button>
        <button type="button" disabled={start.busy} onClick={() => void start.run()}>
          New chat
        </button>
      </Form>
      <details class="chat-contact">
        <summary>Talk as a contact (optional)</summary>
        <p class="hint">
          Fills the prompt's {'{{name}}'}, {'{{phone}}'} and {'{{email}}'} in the next new chat.
        </p>
        <div class="agent-row-fields">
          <Field label="Contact name" value={contactName} onValue={setContactName} maxLength={200} autoComplete="off" />
          <Field
            label="Contact phone"
            type="tel"
            inputMode="tel"
            value={contactPhone}
            onValue={setContactPhone}
            maxLength={40}
            autoComplete="off"
          />
          <Field label="Contact email" type="email" value={contactEmail} onValue={setContactEmail} maxLength={320} autoComplete="off" />
        </div>
      </details>
    </>
  );
}
