import { randomBytes } from 'node:crypto';
import { randomInt } from 'node:crypto';
import { tenantCtx, type Deps, type TenantCtx } from './platform/context.ts';
import * as agents from './modules/agents/service.ts';
import * as campaigns from './modules/campaigns/service.ts';
import * as messaging from './modules/messaging/service.ts';
import * as contacts from './modules/contacts/service.ts';
import * as knowledge from './modules/knowledge/service.ts';
import { createApiKey, createTenant } from './modules/identity/service.ts';

export interface DemoTenant {
  tenantId: string;
  email: string;
  password: string;
  apiKey: string;
  campaignId: string;
}

/** A tenant to try the service with: its owner's login and an API key, shown to the operator once. */
export async function createDemoTenant(deps: Deps): Promise<DemoTenant> {
  // The same suffix names the tenant and its login, so two demo tenants are told apart everywhere.
  const suffix = randomBytes(3).toString('hex');
  const email = `demo-${suffix}@callforge.local`;
  const password = randomBytes(12).toString('base64url');
  const { tenantId, user } = await createTenant(deps.db, deps.config, {
    tenantName: `Demo ${suffix}`,
    email,
    password,
    name: 'Demo owner',
  });
  const key = await createApiKey(deps, tenantId, { name: 'Demo key' }, { createdBy: user.id });
  const campaignId = await createDemoCampaign(tenantCtx(deps, tenantId));
  return { tenantId, email, password, apiKey: key.key, campaignId };
}

/** Contract §11: outcomes the simulator plays for the demo contacts, attempt by attempt. */
const DEMO_CONTACTS = [
  { name: 'Ada Lovelace', simulate: 'ANSWERED' },
  { name: 'Alan Turing', simulate: 'BUSY,ANSWERED' },
  { name: 'Grace Hopper', simulate: 'UNANSWERED,UNANSWERED,ANSWERED' },
  { name: 'Edsger Dijkstra', simulate: 'UNANSWERED,UNANSWERED,UNANSWERED' },
  { name: 'Barbara Liskov', simulate: 'ANSWERED' },
  { name: 'Donald Knuth', simulate: 'INVALID_NUMBER' },
  { name: 'Margaret Hamilton', simulate: 'BUSY,BUSY,BUSY' },
  { name: 'Ken Thompson', simulate: 'ANSWERED' },
];

/** What the demo clinic's agent knows: the retrieval agent answers its contacts' questions from it, offline. */
export const DEMO_KNOWLEDGE = [
  'Parking is free in the garage behind the clinic, entrance on Elm Street.',
  'An appointment can be moved by phone until 24 hours before it; later changes cost a fee of 20 dollars.',
  'The clinic opens at 8 am on weekdays and at 9 am on Saturdays; it is closed on Sundays.',
  'Please bring your insurance card and arrive ten minutes early.',
].join('\n\n');

/**
 * How the demo's answering contacts react to what the agent says (scripted-contact.ts): a question
 * the agent's knowledge answers, then another, then goodbye; a line it does not understand gets
 * asked again once.
 */
export const DEMO_CONTACT_SCRIPT = [
  'reminder|appointment => Yes, that is me. Where can I park?',
  'garage|parking => Good to know. Can I move my appointment if I need to?',
  'move|moved|24 hours => Perfect, thank you. Goodbye!',
  'Sorry, could you say that again?',
];

/**
 * An agent that knows the clinic (a knowledge base, read as soon as a worker runs), a post-call SMS
 * on the simulator, a SIMULATOR number, a list and a RUNNING campaign that dials at any hour.
 */
async function createDemoCampaign(ctx: TenantCtx): Promise<string> {
  const base = await knowledge.createBase(ctx, { name: 'Demo clinic facts' });
  await knowledge.addJsonSource(ctx, base.id, { sourceType: 'text', sourceName: 'Clinic facts', rawText: DEMO_KNOWLEDGE });
  const agent = await agents.createAgent(ctx, {
    name: 'Appointment reminder',
    systemPrompt: 'You call customers to remind them of their appointment and answer their questions. Be brief and friendly.',
    firstMessage: 'Hello, this is a reminder about your appointment at the clinic.',
    knowledgeBaseIds: [base.id],
  });
  // What every answered call can be thanked for, confirmed or not; what an unanswered one needs.
  await messaging.createSmsCampaign(ctx, {
    agentId: agent.id,
    name: 'Demo: follow-up SMS',
    senderNumber: 'CALLFORGE',
    senderProvider: 'SIMULATOR',
    templates: [
      { callStatus: 'ANSWERED', messageBody: 'Thanks for taking our call, {{name|there}}. Reply here if your plans change.' },
      { callStatus: 'UNANSWERED', messageBody: 'Hi {{name|there}}, we tried to reach you about your appointment. Reply or call us back.' },
    ],
  });
  const number = await agents.createVoiceNumber(ctx, {
    phoneNumber: `+1415${randomInt(2_000_000, 9_999_999)}`,
    provider: 'SIMULATOR',
    label: 'Demo simulator line',
  });
  const list = await contacts.createList(ctx, { name: 'Demo customers' });
  await contacts.importContacts(
    ctx,
    list.id,
    DEMO_CONTACTS.map(({ name, simulate }, i) => ({
      row: i + 1,
      fields: { phoneNumber: `+1212555${String(1000 + i)}`, name, metadata: { simulate } },
    })),
  );
  const campaign = await campaigns.createCampaign(ctx, {
    name: 'Demo: appointment reminders',
    agentId: agent.id,
    voiceNumberId: number.id,
    contactListId: list.id,
    timezone: 'UTC',
    // Appointment reminders are no telephone solicitation, the only calls the statutory rules
    // govern, and these simulated numbers ring no one: the demo dials at any hour.
    callingRules: false,
    callWindowStart: '00:00',
    callWindowEnd: '23:59',
    callDays: [1, 2, 3, 4, 5, 6, 7],
    maxAttempts: 3,
    redialDelayMin: 1,
    maxConcurrentCalls: 3,
    simulatorScript: DEMO_CONTACT_SCRIPT,
  });
  await campaigns.startCampaign(ctx, campaign.id);
  return campaign.id;
}

/** Whether a callforge server answers at `baseUrl` (its /healthz) within two seconds. */
export async function serverAnswers(baseUrl: string): Promise<boolean> {
  try {
    return (await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(2_000) })).ok;
  } catch {
    return false;
  }
}

/**
 * What the operator is shown: the login and key, and how to watch the campaign at `baseUrl`. Only
 * a running server dials, so a demo made with the server stopped says so and how to start it.
 */
export function describeDemo(demo: DemoTenant, baseUrl: string, serverRunning: boolean): string {
  const curl = (path: string) => `curl -H "Authorization: Bearer ${demo.apiKey}" ${baseUrl}/api/v1${path}`;
  const watch = [
    `                   ${curl(`/campaigns/${demo.campaignId}`)}`,
    `                   ${curl('/call-logs')}`,
    `                   ${curl('/messages')}   (the follow-up SMS)`,
  ];
  return [
    '',
    '  callforge demo tenant (shown once, keep it somewhere safe)',
    `  API key:         ${demo.apiKey}`,
    `  Dashboard login: ${demo.email} / ${demo.password}`,
    ...(serverRunning
      ? [
          `  Try it:          ${curl('/profile')}`,
          `  Demo campaign:   dialling the simulator now; watch it with`,
          ...watch,
          `  API docs:        ${baseUrl}/docs`,
        ]
      : [
          `  Server:          nothing answers at ${baseUrl}, so nothing dials yet. Start the server (npm start),`,
          '                   and the demo campaign, already running, dials the simulator within seconds;',
          `                   a server on another address: callforge demo --url <its address>. Then watch it with`,
          ...watch,
        ]),
    '',
  ].join('\n');
}
