import type { Agent, TestChat, TranscriptTurn } from '../../../src/api-types.ts';
import { useEffect, useRef, useState } from 'preact/hooks';
import { openMicrophone, startBrowserLine, type BrowserLine, type LineCounts } from '../browser-call/line.ts';
import { useProfile } from '../profile.ts';
import { brainOf, Transcript } from '../transcript.tsx';
import { ErrorMessage, formatMoney } from '../ui.tsx';

/** Recognisers that listen as the caller speaks (src/providers/registry.ts): a call needs one. */
const LIVE_STT = ['DEEPGRAM'];

type Phase = 'connecting' | 'on' | 'ended';

const NO_COUNTS: LineCounts = { framesSent: 0, agentFrames: 0, agentSeconds: 0, marksPlayed: 0 };

/** Why the socket closed, in words, when the service sent no error of its own. */
function closedWithout(code: number, reason: string): Error | undefined {
  if (code === 1000) return undefined;
  if (code === 1008) return new Error(`The service refused the call (${reason || 'no reason given'}).`);
  return new Error('The connection to the service was lost; check your connection (or log in again) and call again.');
}

/**
 * "Call me in the browser": the agent on the microphone and speakers, through the pipeline of its
 * phone calls, recorded as a test chat (billed as test cost). The transcript grows as each
 * exchange is settled; the caller's words show as soon as they are recognised.
 */
export function BrowserCallPanel({ agent }: { agent: Agent }) {
  const { profile, refresh } = useProfile();
  const [phase, setPhase] = useState<Phase>('connecting');
  const [chat, setChat] = useState<TestChat | undefined>(undefined);
  const [heard, setHeard] = useState<string | undefined>(undefined);
  const [error, setError] = useState<Error | undefined>(undefined);
  const [counts, setCounts] = useState<LineCounts>(NO_COUNTS);
  const [attempt, setAttempt] = useState(0);
  const line = useRef<BrowserLine | undefined>(undefined);
  const box = useRef<HTMLDivElement>(null);
  const canListen = agent.stt !== null && LIVE_STT.includes(agent.stt.provider);

  useEffect(() => {
    if (!canListen) return;
    let abandoned = false;
    let refused: Error | undefined;
    setPhase('connecting');
    setChat(undefined);
    setHeard(undefined);
    setError(undefined);
    setCounts(NO_COUNTS);
    void (async () => {
      const microphone = await openMicrophone();
      if (abandoned) return microphone.getTracks().forEach((track) => track.stop());
      line.current = await startBrowserLine(
        agent.id,
        microphone,
        {},
        {
          onEvent(event) {
            if (event.type === 'started') setPhase('on');
            else if (event.type === 'heard') setHeard(event.text);
            else if (event.type === 'chat') {
              setChat(event.chat);
              setHeard(undefined);
              refresh();
            } else if (event.type === 'error') refused = new Error(event.message);
          },
          onCounts: setCounts,
          onClosed(code, reason) {
            setPhase('ended');
            setError(refused ?? closedWithout(code, reason));
            refresh();
          },
        },
      );
      if (abandoned) line.current.close();
    })().catch((caught: unknown) => {
      setPhase('ended');
      setError(caught as Error);
    });
    return () => {
      abandoned = true;
      line.current?.close();
      line.current = undefined;
    };
  }, [agent.id, attempt, canListen]);

  // The newest turn stays in view.
  useEffect(() => {
    if (box.current) box.current.scrollTop = box.current.scrollHeight;
  }, [chat?.transcript.length, heard]);

  if (!canListen)
    return (
      <p class="error" role="alert">
        {agent.name} cannot take a call yet: it needs a live speech-to-text to listen with. Choose <strong>Deepgram (live)</strong> as its
        speech-to-text under Voice in the settings below (with a Deepgram key under Integrations), save, and call again.
      </p>
    );

  const turns: TranscriptTurn[] = [
    ...(chat?.transcript ?? []),
    ...(heard ? [{ role: 'contact' as const, text: heard, at: new Date().toISOString() }] : []),
  ];
  const status =
    phase === 'connecting'
      ? 'Connecting: allow the microphone if the browser asks…'
      : phase === 'on'
        ? 'On the call: speak to the agent.'
        : chat?.endReason
          ? `The call is over (${chat.endReason.replaceAll('_', ' ')}).`
          : 'The call is over.';

  return (
    <>
      <dl class="chat-facts">
        {chat && (
          <>
            <div>
              <dt>Answered by</dt>
              <dd>{brainOf(chat.brain)}</dd>
            </div>
            <div>
              <dt>Test cost so far</dt>
              <dd data-testid="browser-call-cost">
                {profile ? formatMoney(chat.cost.total, profile.wallet.currency, { exact: true }) : chat.cost.total}
              </dd>
            </div>
          </>
        )}
        <div>
          <dt>Your microphone</dt>
          <dd>
            <span data-testid="browser-call-sent">{((counts.framesSent * 20) / 1000).toFixed(1)}</span> s sent
          </dd>
        </div>
        <div>
          <dt>The agent's voice</dt>
          <dd>
            <span data-testid="browser-call-received" data-frames={counts.agentFrames}>
              {counts.agentSeconds.toFixed(1)}
            </span>{' '}
            s received, <span data-testid="browser-call-played">{counts.marksPlayed}</span> sentences played
          </dd>
        </div>
      </dl>
      <div class="chat-box" ref={box} tabIndex={0} role="region" aria-label="Call transcript">
        {turns.length === 0 && <p class="hint">The agent's words and yours appear here as the call goes on.</p>}
        {turns.length > 0 && <Transcript turns={turns} contactLabel="You" label="Call" live />}
      </div>
      <p class="chat-status" aria-live="polite" data-testid="browser-call-status">
        {status}
      </p>
      <ErrorMessage error={error} />
      <div class="chat-send">
        {phase === 'ended' ? (
          <button type="button" class="primary" onClick={() => setAttempt(attempt + 1)}>
            Call again
          </button>
        ) : (
          <button type="button" class="danger" onClick={() => line.current?.hangUp()}>
            Hang up
          </button>
        )}
      </div>
    </>
  );
}
