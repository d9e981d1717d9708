import { randomInt } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { bearer, createKey, signUp } from './harness.ts';

/** A distinct valid US number per call, so voice numbers (unique on the platform) never collide. */
export const uniqueNumber = () => `+1415${String(randomInt(2_000_000, 9_999_999))}`;

export function apiAs(app: FastifyInstance, key: string) {
  return async (method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE', url: string, payload?: unknown) => {
    const response = await app.inject({
      method,
      url: `/api/v1${url}`,
      headers: bearer(key),
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
    return response;
  };
}

/**
 * A new tenant (its owner's session and an API key), with a provider integration connected through
 * the dashboard route when one is given.
 */
export async function newTenant(app: FastifyInstance, integration?: { kind: string; credentials: Record<string, string> }) {
  const owner = await signUp(app);
  const { key } = await createKey(app, owner.token);
  if (integration) {
    const put = await app.inject({
      method: 'PUT',
      url: `/api/v1/integrations/${integration.kind}`,
      headers: bearer(owner.token),
      payload: integration.credentials,
    });
    if (put.statusCode !== 200) throw new Error(`connecting ${integration.kind} failed: ${put.statusCode} ${put.body}`);
  }
  return { owner, key, api: apiAs(app, key) };
}

/** A new tenant with each integration (kind → credentials) connected through the dashboard route. */
export async function tenantWith(app: FastifyInstance, integrations: Record<string, object>) {
  const owner = await signUp(app);
  const { key } = await createKey(app, owner.token);
  for (const [kind, payload] of Object.entries(integrations)) {
    const put = await app.inject({ method: 'PUT', url: `/api/v1/integrations/${kind}`, headers: bearer(owner.token), payload });
    if (put.statusCode !== 200) throw new Error(`connecting ${kind} failed: ${put.statusCode} ${put.body}`);
  }
  return { owner, key, api: apiAs(app, key) };
}

let counter = 0;

/**
 * What a campaign needs to start, made over HTTP: an agent, a SIMULATOR voice number and a list
 * whose contacts carry the given metadata (e.g. `{ simulate: 'BUSY,ANSWERED' }`).
 */
export async function voiceSetup(app: FastifyInstance, key: string, contacts: Record<string, unknown>[] = [{}, {}]) {
  const api = apiAs(app, key);
  const n = ++counter;
  const agent = (await api('POST', '/agents', { name: `Agent ${n}` })).json();
  const number = (await api('POST', '/voice-numbers', { phoneNumber: uniqueNumber(), provider: 'SIMULATOR' })).json();
  const list = (await api('POST', '/contact-lists', { name: `Voice list ${n}` })).json();
  const bulk = await api('POST', `/contact-lists/${list.id}/contacts/bulk`, {
    contacts: contacts.map((metadata, i) => ({ phoneNumber: `+1212555${String(1000 + i)}`, name: `Contact ${i + 1}`, metadata })),
  });
  if (!agent.id || !number.id || bulk.json().imported !== contacts.length)
    throw new Error(`voice setup failed: ${JSON.stringify({ agent, number, bulk: bulk.json() })}`);
  return { agentId: agent.id as string, voiceNumberId: number.id as string, contactListId: list.id as string };
}

/**
 * A campaign of the tests' own. The statutory calling rules are on by default (docs/compliance.md),
 * and these campaigns call the simulator's fictional New York numbers at whatever time the test
 * runs: each is relaxed explicitly, as the law allows for calls that are no solicitation. A test
 * of the rules passes `callingRules: true` (test/calling-compliance.test.ts).
 */
export async function createCampaign(app: FastifyInstance, key: string, body: Record<string, unknown>) {
  const response = await apiAs(app, key)('POST', '/campaigns', { name: `Campaign ${++counter}`, callingRules: false, ...body });
  if (response.statusCode !== 201) throw new Error(`campaign creation failed: ${response.statusCode} ${response.body}`);
  return response.json() as { id: string; status: string; [field: string]: unknown };
}

/**
 * A campaign of `agentId` (with `fields`) on a new SIMULATOR number whose new list holds
 * `contacts`, started, then ticked twice by `tick` (the dialer): placed, then answered (with
 * SIMULATOR_RING_SECONDS=0). Returns the campaign as created.
 */
export async function startedSimulatedCampaign(
  api: ReturnType<typeof apiAs>,
  tick: () => Promise<unknown>,
  agentId: string,
  contacts: Record<string, unknown>[],
  fields: Record<string, unknown> = {},
) {
  const number = (await api('POST', '/voice-numbers', { phoneNumber: uniqueNumber(), provider: 'SIMULATOR' })).json();
  const list = (await api('POST', '/contact-lists', { name: `List ${uniqueNumber()}` })).json();
  const bulk = await api('POST', `/contact-lists/${list.id}/contacts/bulk`, {
    contacts: contacts.map((contact) => ({ phoneNumber: uniqueNumber(), ...contact })),
  });
  if (bulk.json().imported !== contacts.length) throw new Error(`contacts not imported: ${bulk.body}`);
  const created = await api('POST', '/campaigns', {
    name: `Campaign ${uniqueNumber()}`,
    agentId,
    voiceNumberId: number.id,
    contactListId: list.id,
    timezone: 'UTC',
    maxAttempts: 1,
    callingRules: false, // simulated calls to fictional numbers, no solicitation (see createCampaign)
    ...fields,
  });
  if (created.statusCode !== 201) throw new Error(`campaign creation failed: ${created.statusCode} ${created.body}`);
  const campaign = created.json() as { id: string; [field: string]: unknown };
  const started = await api('POST', `/campaigns/${campaign.id}/start`, {});
  if (started.statusCode !== 202) throw new Error(`campaign start failed: ${started.statusCode} ${started.body}`);
  await tick();
  await tick();
  return campaign;
}
