import type { Agent, Campaign, ContactList, Integration, VoiceNumber } from '../../src/api-types.ts';
import { api, type Page } from './api.ts';
import { useProfile } from './profile.ts';
import { useLoad } from './ui.tsx';
import { useState } from 'preact/hooks';

interface Step {
  done: boolean;
  title: string;
  href: string;
  how: string;
}

/**
 * The first hour, step by step: each step ticks from the tenant's real state (the profile's
 * onboarding flags, and what the API lists), never from clicks in this page.
 */
/** Where a tenant's "Hide" is remembered in this browser: a display preference, nothing secret. */
const hiddenKey = (tenantId: string) => `callforge.onboarding.hidden.${tenantId}`;

export function OnboardingChecklist() {
  const { profile } = useProfile();
  // Set by Hide, so the page hides the checklist at once; the stored flag hides it on later visits.
  const [hidden, setHidden] = useState(false);
  const state = useLoad(
    async () => {
      const [integrations, agents, numbers, lists, campaigns] = await Promise.all([
        api<{ data: Integration[] }>('GET', '/integrations'),
        api<Page<Agent>>('GET', '/agents?limit=1'),
        api<Page<VoiceNumber>>('GET', '/voice-numbers?limit=1'),
        api<Page<ContactList>>('GET', '/contact-lists?limit=200'),
        api<Page<Campaign>>('GET', '/campaigns?limit=1'),
      ]);
      return {
        integration: integrations.data.length > 0,
        agent: agents.total > 0,
        number: numbers.total > 0,
        contacts: lists.data.some((list) => list.contactCount > 0),
        campaign: campaigns.total > 0,
      };
    },
    // Asked again whenever the profile is (every few seconds, and after anything that changes it).
    [profile],
  );
  if (!profile || !state.data || hidden || localStorage.getItem(hiddenKey(profile.tenant.id)) === '1') return null;
  const steps: Step[] = [
    {
      done: state.data.integration,
      title: 'Add an integration',
      href: '#/integrations',
      how: 'Connect Twilio, an SMS provider or WhatsApp. Not needed to try things out: SIMULATOR numbers call without one.',
    },
    {
      done: state.data.agent || profile.onboarding.hasFlow,
      title: 'Create an agent',
      href: '#/agents',
      how: 'The voice that speaks on your calls: its prompt, first message, language and voice.',
    },
    {
      done: state.data.number,
      title: 'Add a voice number',
      href: '#/agents',
      how: 'The number calls come from; a SIMULATOR number is free.',
    },
    {
      done: state.data.contacts,
      title: 'Upload contacts',
      href: '#/contacts',
      how: 'Create a contact list and upload a CSV (or add people one by one).',
    },
    {
      done: state.data.campaign,
      title: 'Create a campaign',
      href: '#/campaigns/new',
      how: 'Agent, number, list and call window together.',
    },
    {
      done: profile.onboarding.hasTestedCall,
      title: 'Make a first test call',
      href: '#/calls/simulate',
      how: 'Start the campaign, or place a simulated incoming call, and read its transcript.',
    },
  ];
  const doneCount = steps.filter((step) => step.done).length;
  if (doneCount === steps.length) return null;
  return (
    <section class="card onboarding" aria-labelledby="onboarding-title" data-testid="onboarding">
      <div class="onboarding-head">
        <h2 id="onboarding-title">Getting started</h2>
        <button
          type="button"
          class="secondary"
          title="Hide the checklist in this browser"
          onClick={() => {
            localStorage.setItem(hiddenKey(profile.tenant.id), '1');
            setHidden(true);
          }}
        >
          Hide
        </button>
      </div>
      <p class="hint">
        {doneCount} of {steps.length} steps done
      </p>
      <progress value={doneCount} max={steps.length} aria-label="Getting started progress" />
      <ol>
        {steps.map((step) => (
          <li key={step.title} class={step.done ? 'done' : undefined} data-done={step.done}>
            <span class="tick" aria-hidden="true">
              {step.done ? '✓' : '○'}
            </span>
            <span>
              <a href={step.href}>{step.title}</a>
              <span class="visually-hidden">{step.done ? ' (done)' : ' (to do)'}</span>
              <small class="hint">{step.how}</small>
            </span>
          </li>
        ))}
      </ol>
    </section>
  );
}
