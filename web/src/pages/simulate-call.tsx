import { useState } from 'preact/hooks';
import type { Call, InboundCallBody, VoiceNumber } from '../../../src/api-types.ts';
import { api, type Page } from '../api.ts';
import { useProfile } from '../profile.ts';
import { navigate } from '../router.ts';
import { Empty, ErrorMessage, Field, fieldErrorOf, Form, namedOptions, PageTitle, Select, useAction, useLoad } from '../ui.tsx';

/**
 * A test call without a telephone: the simulator rings a SIMULATOR number as a caller would, its
 * inbound agent answers, and the call's page follows it live.
 */
export function SimulateCallPage(_props: { params: Record<string, string> }) {
  const { refresh } = useProfile();
  const numbers = useLoad(() => api<Page<VoiceNumber>>('GET', '/voice-numbers?limit=200'), []);
  const simulated = (numbers.data?.data ?? []).filter((number) => number.provider === 'SIMULATOR');
  const [voiceNumberId, setVoiceNumberId] = useState('');
  const [fromNumber, setFromNumber] = useState('+14155550123');
  const chosen = voiceNumberId || simulated[0]?.id || '';
  const place = useAction(async () => {
    const call = await api<Call>('POST', '/simulator/inbound-calls', { voiceNumberId: chosen, fromNumber } satisfies InboundCallBody);
    refresh();
    navigate(`/calls/${call.id}`);
  });
  return (
    <>
      <PageTitle>Test call</PageTitle>
      <p>
        Place a simulated incoming call to one of your SIMULATOR numbers: the number's inbound agent answers, and you follow the
        conversation on the call's page. To hear an agent in your browser instead, or to chat with it, open the agent under{' '}
        <a href="#/agents">Agents &amp; numbers</a>.
      </p>
      <ErrorMessage error={numbers.error} />
      {numbers.data && simulated.length === 0 && (
        <Empty>
          No SIMULATOR number yet: add one under <a href="#/agents">Agents &amp; numbers</a>, and give it an inbound agent.
        </Empty>
      )}
      {simulated.length > 0 && (
        <Form class="grid-form" onSubmit={place.run}>
          <Select
            label="Number called"
            value={chosen}
            onValue={setVoiceNumberId}
            options={namedOptions(
              simulated,
              ['', 'Choose a number'],
              (number) => `${number.phoneNumber} (${number.label ?? 'simulator'})`,
            ).slice(1)}
            hint="Its inbound agent answers the call."
            problem={fieldErrorOf(place.error, '/voiceNumberId')}
          />
          <Field
            label="Caller's number"
            type="tel"
            inputMode="tel"
            required
            maxLength={32}
            value={fromNumber}
            onValue={setFromNumber}
            hint="E.164: + and country code."
            problem={fieldErrorOf(place.error, '/fromNumber')}
          />
          <ErrorMessage error={place.error} />
          <button type="submit" class="primary" disabled={place.busy}>
            Place test call
          </button>
        </Form>
      )}
    </>
  );
}
