import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDemoTenant, DEMO_CONTACT_SCRIPT } from '../src/demo.ts';
import { dialerTick } from '../src/modules/campaigns/dialer.ts';
import { converseOnSimulatedCall } from '../src/modules/conversation/service.ts';
import { processSource } from '../src/modules/knowledge/service.ts';
import { manualClock } from '../src/platform/clock.ts';
import { startTestApp, type TestApp } from './harness.ts';
import { apiAs } from './voice-fixtures.ts';

// Issue 41, item 6: the demo converses. Its agent knows the clinic (a knowledge base, answered from
// by the offline retrieval agent: no model is configured here), its contacts react to what the
// agent says, and the follow-up thanks them for taking the call, not for confirming anything.
const clock = manualClock('2026-11-23T10:00:00.000Z');
let t: TestApp;

beforeAll(async () => {
  t = await startTestApp({ clock, env: { SIMULATOR_RING_SECONDS: '0', SIMULATOR_TALK_SECONDS: '600' } });
});
afterAll(() => t.close());

describe('the demo', () => {
  it("answers its contacts' questions from the clinic's facts, the contacts reacting to what the agent says", async () => {
    const demo = await createDemoTenant(t.runtime);
    const api = apiAs(t.app, demo.apiKey);
    const [base] = (await api('GET', '/knowledge-bases')).json().data;
    const [source] = (await api('GET', `/knowledge-bases/${base.id}/sources`)).json().data;
    // What the worker does when the server runs.
    await processSource(t.runtime, { tenantId: demo.tenantId, sourceId: source.id, generation: 1 }, { retryCount: 0 });
    expect((await api('GET', `/campaigns/${demo.campaignId}`)).json()).toMatchObject({ simulatorScript: DEMO_CONTACT_SCRIPT });

    // The first tick dials, the next finds the simulator's calls answered (it rings for no time here).
    await dialerTick(t.runtime);
    await dialerTick(t.runtime);
    const calls = (await api('GET', `/call-logs?campaignId=${demo.campaignId}&limit=20`)).json().data as {
      id: string;
      status: string;
      toNumber: string;
    }[];
    const ada = calls.find((call) => call.toNumber === '+12125551000')!; // Ada Lovelace, who answers
    expect(ada.status).toBe('IN_PROGRESS');
    await converseOnSimulatedCall(t.runtime, { tenantId: demo.tenantId, callId: ada.id });
    const call = (await api('GET', `/call-logs/${ada.id}`)).json();
    const said = call.transcript.map((turn: { role: string; text: string }) => [turn.role, turn.text]);
    expect(said[0]).toEqual(['agent', 'Hello, this is a reminder about your appointment at the clinic.']);
    expect(said[1]).toEqual(['contact', 'Yes, that is me. Where can I park?']);
    expect(said[2]![1]).toContain('garage behind the clinic');
    expect(said[3]).toEqual(['contact', 'Good to know. Can I move my appointment if I need to?']);
    expect(said[4]![1]).toContain('24 hours');
    expect(said[5]).toEqual(['contact', 'Perfect, thank you. Goodbye!']);
    expect(
      call.transcript
        .slice(2)
        .filter((turn: { role: string }) => turn.role === 'agent')
        .map((turn: { by: string }) => turn.by),
    ).toEqual(['retrieval-agent', 'retrieval-agent', 'retrieval-agent']);
    expect(call).toMatchObject({ status: 'ENDED', endReason: 'agent_ended' });
    expect(call.transcript[2].sources).toEqual([expect.objectContaining({ sourceName: 'Clinic facts' })]);
  });
});
