/**
 * Campaign rehearsals (issue 41, item 4): what a campaign would do over a sample of its list,
 * without dialling, sending, billing a call or writing a compliance record — run on the job queue
 * and kept as one report (docs/decisions/0062-campaign-rehearsal.md). Each part comes from the code
 * that does it for real: the dialer's verdicts (campaigns), the conversation engine with the
 * scripted contact (conversation), the follow-ups the messaging module would record, the rate card.
 */
import { DateTime } from 'luxon';
import { tenantCtx, withTransaction, type Deps, type TenantCtx } from '../../platform/context.ts';
import { AppError, appError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import type { JobDefinition } from '../../platform/jobs.ts';
import { money, type Money } from '../../platform/money.ts';
import type { Page } from '../../platform/pagination.ts';
import { ProviderError } from '../../providers/errors.ts';
import type { Agent } from '../agents/schemas.ts';
import * as agents from '../agents/service.ts';
import * as calls from '../calls/service.ts';
import type { Campaign } from '../campaigns/schemas.ts';
import * as campaigns from '../campaigns/service.ts';
import * as conversation from '../conversation/service.ts';
import * as identity from '../identity/service.ts';
import * as messaging from '../messaging/service.ts';
import * as repo from './repo.ts';
import { DEFAULT_SAMPLE, type CreateRehearsalBody, type ListedRehearsal, type Rehearsal, type RehearsedContact } from './schemas.ts';

export const REHEARSE_CAMPAIGN = 'campaigns.rehearse';
export interface RehearseCampaignJob {
  tenantId: string;
  rehearsalId: string;
}

/** Contacts conversing at once: a model's replies are waited on side by side; the retrieval agent shares the CPU. */
const CONTACTS_AT_ONCE = 4;
/**
 * A spoken call's pace, for the estimate of its length: about 150 words a minute, and a second
 * between turns (the caller's pause, the agent's answer starting). An estimate, and labelled so.
 */
const WORDS_PER_SECOND = 2.5;
const SECONDS_BETWEEN_TURNS = 1;

const rehearsalNotFound = () => appError('NOT_FOUND', { what: 'Rehearsal' });

type Report = Pick<Rehearsal, 'brain' | 'notes' | 'summary' | 'contacts' | 'costTotal' | 'billed'>;

/** A report stored before a conversation could fail has no `failure`: each of its conversations was rehearsed. */
const withFailureField = (contact: RehearsedContact): RehearsedContact =>
  contact.conversation ? { ...contact, conversation: { ...contact.conversation, failure: contact.conversation.failure ?? null } } : contact;

const toRehearsal = (row: repo.RehearsalRow): Rehearsal => {
  const report = row.report as Report | null;
  return {
    id: row.id,
    campaignId: row.campaign_id,
    status: row.status,
    sample: row.sample,
    from: row.from_at.toISOString(),
    failure: row.failure,
    brain: report?.brain ?? null,
    notes: report?.notes ?? [],
    summary: report?.summary ?? null,
    contacts: (report?.contacts ?? []).map(withFailureField),
    costTotal: report?.costTotal ?? null,
    billed: report?.billed ?? null,
    createdAt: row.created_at.toISOString(),
    finishedAt: row.finished_at?.toISOString() ?? null,
  };
};

/** Queues a rehearsal of the campaign, whatever its status (a rehearsal only reads it). */
export async function startRehearsal(ctx: TenantCtx, campaignId: string, body: CreateRehearsalBody): Promise<Rehearsal> {
  await campaigns.rehearsableCampaign(ctx, campaignId);
  const row = await withTransaction(ctx, async (txCtx) => {
    const inserted = await repo.insertRehearsal(txCtx.db, ctx.tenantId, {
      id: newId(),
      campaignId,
      sample: body.sample ?? DEFAULT_SAMPLE,
      from: body.from ? new Date(body.from) : ctx.clock.now(),
      at: ctx.clock.now(),
    });
    await txCtx.jobs.send<RehearseCampaignJob>(REHEARSE_CAMPAIGN, { tenantId: ctx.tenantId, rehearsalId: inserted.id }, { tx: txCtx.db });
    return inserted;
  });
  return toRehearsal(row);
}

export async function getRehearsal(ctx: TenantCtx, campaignId: string, id: string): Promise<Rehearsal> {
  const row = await repo.findRehearsal(ctx.db, ctx.tenantId, campaignId, id);
  if (!row) throw rehearsalNotFound();
  return toRehearsal(row);
}

/** The campaign's rehearsals, newest first, without their contacts; another tenant's campaign is 404. */
export async function listRehearsals(ctx: TenantCtx, campaignId: string, page: Page): Promise<{ data: ListedRehearsal[]; total: number }> {
  if (!(await campaigns.findCampaign(ctx, campaignId))) throw appError('NOT_FOUND', { what: 'Campaign' });
  const { rows, total } = await repo.listRehearsals(ctx.db, ctx.tenantId, campaignId, page);
  return { data: rows.map((row) => withoutContacts(toRehearsal(row))), total };
}

const withoutContacts = ({ contacts: _contacts, ...listed }: Rehearsal): ListedRehearsal => listed;

const wordsOf = (turns: calls.TranscriptTurn[], role: string) =>
  turns
    .filter((turn) => turn.role === role)
    .map((turn) => turn.text)
    .join(' ');
const wordCount = (text: string) => text.split(/\s+/).filter(Boolean).length;

/**
 * The contact's conversation with the agent through the real engine; its tools answer as in a test
 * (nothing leaves it). The contact reads its own script (`metadata.simulate.say`); else, when the
 * agent has a model, the model plays the contact as the list describes them (a persona drawn from
 * their name and metadata, its tokens billed as the model's); else it reads the campaign's script.
 * A persona whose model fails ends this conversation with its `failure` and no usage to bill.
 */
async function converse(deps: Deps, ctx: TenantCtx, agent: Agent, contact: campaigns.RehearsedContact, campaign: Campaign, id: string) {
  const counterpart: conversation.Counterpart = {
    name: contact.name,
    phone: contact.phoneNumber,
    email: contact.email,
    metadata: contact.metadata,
    variables: {},
    campaignName: campaign.name,
    timezone: campaign.timezone,
  };
  const venue = { kind: 'suite' as const, runId: id, mocks: [] };
  const { session, model } = await conversation.sessionFor(deps, ctx, agent, counterpart, venue, ctx.clock.now());
  const transcript: calls.TranscriptTurn[] = [];
  if (model && !conversation.ownScript(contact.metadata)) {
    const persona = personaOf(contact);
    const extra: conversation.Tokens = { inputTokens: 0, outputTokens: 0 };
    let turns = 0;
    let personaFailed: ProviderError | undefined;
    await conversation.converseInText(
      session,
      async (sofar) => {
        if (turns++ >= conversation.PERSONA_TURNS) return null;
        // A model that fails the persona ends this contact's conversation there; the other contacts are rehearsed all the same.
        return conversation.personaLine(model, persona, sofar, extra).catch((error: unknown) => {
          if (!(error instanceof ProviderError)) throw error;
          personaFailed = error;
          return null;
        });
      },
      transcript,
    );
    if (personaFailed) {
      const failure = `The agent's model failed while playing the contact, so this conversation was not rehearsed (${personaFailed.message}); rehearse again once the model answers.`;
      return { persona: [], personaByModel: persona.description, transcript, endReason: session.ended, usage: null, failure };
    }
    const usage = conversation.withExtraTokens(conversation.usageOf(session, model), extra, model);
    return { persona: [], personaByModel: persona.description, transcript, endReason: session.ended, usage, failure: null };
  }
  const persona = conversation.scriptedLines(contact.metadata, campaign.simulatorScript);
  await conversation.converseWithScript(session, persona, async (turns) => {
    transcript.push(...turns);
    return true;
  });
  const usage = conversation.usageOf(session, model);
  return { persona: [...persona], personaByModel: null, transcript, endReason: session.ended, usage, failure: null };
}

/** Who a model plays for a rehearsed contact: what the list says of them, and no more. */
function personaOf(contact: campaigns.RehearsedContact): conversation.Persona {
  const { simulate: _simulate, ...known } = contact.metadata ?? {};
  const facts = Object.keys(known).length ? ` What the calling company's list says about you: ${JSON.stringify(known)}.` : '';
  return {
    description: `${contact.name ?? 'The person'} at ${contact.phoneNumber}, who was not expecting this call.${facts}`,
    goal: 'Answer the call as this person plausibly would, with what you know of yourself, and end it once it is over.',
  };
}

/**
 * The call's forecast: the model's tokens as measured; the call's length, what the contact says
 * (speech-to-text) and what the agent says (text-to-speech) estimated from the transcript.
 */
function forecast(ctx: TenantCtx, usage: calls.CallUsage, transcript: calls.TranscriptTurn[]) {
  const agentText = wordsOf(transcript, 'agent');
  const contactText = wordsOf(transcript, 'contact');
  const spoken = transcript.filter((turn) => turn.role === 'agent' || turn.role === 'contact').length;
  const talkSeconds = Math.ceil((wordCount(agentText) + wordCount(contactText)) / WORDS_PER_SECOND + spoken * SECONDS_BETWEEN_TURNS);
  const estimated: calls.CallUsage = {
    ...usage,
    telephonySeconds: talkSeconds,
    sttSeconds: Math.ceil(wordCount(contactText) / WORDS_PER_SECOND),
    ttsCharacters: agentText.length,
  };
  const { cost, total } = calls.priceUsage(ctx, estimated);
  return {
    forecast: {
      usage: estimated,
      cost,
      // The model's tokens (none for the retrieval agent) are what ran; the speech and the line are estimated.
      basis: {
        telephony: 'estimate' as const,
        stt: 'estimate' as const,
        tts: 'estimate' as const,
        llm: 'measured' as const,
        platformFee: 'estimate' as const,
      },
      talkSeconds,
    },
    total,
    // What ran: the model's tokens, billed like a test chat's.
    measured: calls.priceUsage(ctx, usage).total,
  };
}

const sentenceOf = (verdict: campaigns.RehearsedContact['verdict']) =>
  verdict.verdict === 'dial'
    ? campaigns.VERDICT_SENTENCES.dial!
    : verdict.verdict === 'skip' && verdict.reason === 'outside_window'
      ? campaigns.VERDICT_SENTENCES.outside_window_never!
      : campaigns.VERDICT_SENTENCES[verdict.reason]!;

/** One contact's part of the report, and what its conversation's model cost. */
async function rehearseContact(
  deps: Deps,
  ctx: TenantCtx,
  setup: { id: string; campaign: Campaign; agentOf: (version: number | null) => Promise<Agent | undefined>; from: Date },
  contact: campaigns.RehearsedContact,
): Promise<{ part: RehearsedContact; total: Money; measured: Money }> {
  const { verdict } = contact;
  const firstCall = verdict.verdict === 'dial' ? setup.from : verdict.verdict === 'wait' ? verdict.until : null;
  const part: RehearsedContact = {
    contactId: contact.contactId,
    position: contact.position,
    phoneNumber: contact.phoneNumber,
    name: contact.name,
    verdict: verdict.verdict,
    reason: verdict.reason,
    why: sentenceOf(verdict),
    wouldBeCalled: firstCall !== null,
    firstCallAt: firstCall && {
      utc: firstCall.toISOString(),
      local: verdict.facts.timeZones.map((timeZone) => ({
        timeZone,
        time: DateTime.fromJSDate(firstCall, { zone: timeZone }).toISO({ suppressMilliseconds: true }) ?? '',
      })),
    },
    facts: verdict.facts as unknown as Record<string, unknown>,
    conversation: null,
    followUp: null,
    cost: null,
  };
  const agent = firstCall && setup.campaign.agentId ? await setup.agentOf(contact.agentVersion) : undefined;
  if (!agent) return { part, total: money(0), measured: money(0) };
  const talk = await converse(deps, ctx, agent, contact, setup.campaign, setup.id);
  part.conversation = {
    persona: talk.persona,
    personaByModel: talk.personaByModel,
    transcript: talk.transcript,
    endReason: talk.endReason,
    failure: talk.failure,
  };
  const recipient = { phoneNumber: contact.phoneNumber, name: contact.name, email: contact.email, metadata: contact.metadata };
  const [answered, unanswered] = await Promise.all(
    ['ANSWERED', 'UNANSWERED'].map(async (outcome) => {
      const { messages, none } = await messaging.followUpsWouldSend(ctx, agent.id, outcome, recipient);
      return {
        messages: messages.map((message) => ({
          channel: message.channel,
          to: message.to_number,
          sender: message.sender,
          body: message.body,
          templateName: message.template_name,
          languageCode: message.language_code,
          parameters: message.parameters,
          segments: message.segments,
        })),
        none,
      };
    }),
  );
  part.followUp = { answered: answered!, unanswered: unanswered! };
  // A conversation cut short forecasts nothing and bills nothing (docs/decisions/0062-campaign-rehearsal.md).
  if (!talk.usage) return { part, total: money(0), measured: money(0) };
  const { forecast: cost, total, measured } = forecast(ctx, talk.usage, talk.transcript);
  part.cost = cost;
  return { part, total, measured };
}

/** Retries of the rehearsal's job: its last attempt (retryCount at this limit) records its failure rather than throw it. */
const REHEARSE_RETRY_LIMIT = 2;

/**
 * The rehearsal's job: the dialer's verdicts on the sample, a conversation with each contact who
 * would be called, the follow-ups and the cost; stored as the report in one transaction with the
 * model's cost debited (offline, the retrieval agent costs nothing and nothing is debited). An
 * unexpected error is thrown to be retried; on the last attempt it is the rehearsal's `failure`
 * (FAILED, nothing billed), so that it does not stay RUNNING, polled for ever.
 */
export async function rehearseCampaign(deps: Deps, job: RehearseCampaignJob, meta: { retryCount: number }): Promise<void> {
  const ctx = tenantCtx(deps, job.tenantId);
  const row = await repo.startRehearsal(ctx.db, ctx.tenantId, job.rehearsalId);
  if (!row) return;
  try {
    await rehearse(deps, ctx, row);
  } catch (error) {
    if (meta.retryCount < REHEARSE_RETRY_LIMIT) throw error;
    const reason = error instanceof Error ? error.message : String(error);
    // The earlier attempts' errors were logged with their stack by the job queue; this one is not thrown to it.
    deps.log.warn({ tenantId: ctx.tenantId, rehearsalId: row.id, err: error }, `rehearsal ${row.id} failed on its last attempt`);
    const failure = `Rehearsing failed ${REHEARSE_RETRY_LIMIT + 1} times (${reason}); nothing was billed for it, and you may ask for another rehearsal.`;
    await repo.finishRehearsal(ctx.db, ctx.tenantId, row.id, { failure }, ctx.clock.now());
  }
}

async function rehearse(deps: Deps, ctx: TenantCtx, row: repo.RehearsalRow): Promise<void> {
  let dialling: Awaited<ReturnType<typeof campaigns.rehearseDialling>>;
  try {
    dialling = await campaigns.rehearseDialling(ctx, row.campaign_id, row.sample, row.from_at);
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    await repo.finishRehearsal(ctx.db, ctx.tenantId, row.id, { failure: error.message }, ctx.clock.now());
    return;
  }
  const { campaign, contacts } = dialling;
  const agentsByVersion = new Map<number | null, Promise<Agent | undefined>>();
  const agentOf = (version: number | null) => {
    if (!agentsByVersion.has(version))
      agentsByVersion.set(version, agents.agentOfCall(ctx, { agent_id: campaign.agentId, agent_version: version }));
    return agentsByVersion.get(version)!;
  };
  const setup = { id: row.id, campaign, agentOf, from: row.from_at };
  const results: Awaited<ReturnType<typeof rehearseContact>>[] = new Array(contacts.length);
  let next = 0;
  const worker = async () => {
    for (let index = next++; index < contacts.length; index = next++)
      results[index] = await rehearseContact(deps, ctx, setup, contacts[index]!);
  };
  await Promise.all(Array.from({ length: Math.min(CONTACTS_AT_ONCE, contacts.length) }, worker));

  const parts = results.map((result) => result.part);
  const count = (key: (part: RehearsedContact) => string | null) =>
    parts.reduce<Record<string, number>>((counts, part) => {
      const value = key(part);
      if (value !== null) counts[value] = (counts[value] ?? 0) + 1;
      return counts;
    }, {});
  const notRehearsed = parts.filter((part) => part.conversation?.failure).length;
  const costTotal = results.reduce((sum, result) => sum.add(result.total), money(0));
  const billed = results.reduce((sum, result) => sum.add(result.measured), money(0));
  const firstAgent = campaign.agentId ? await agentOf(null) : undefined;
  const model = firstAgent && (await conversation.modelFor(deps, ctx, firstAgent));
  const brain = !firstAgent ? null : model ? `model:${model.name}` : 'retrieval-agent';
  const notes = [
    "Nothing was dialled, sent or recorded: the verdicts are the dialer's at `from` over the list as it is now, each contact at its first attempt.",
    model
      ? "The conversations ran on the agent's model: its tokens are measured and billed like a test chat's (`billed`)."
      : 'The conversations ran on the retrieval agent, offline: they cost nothing and nothing was billed.',
    'Telephony, speech-to-text and text-to-speech are estimates from the conversation (about 150 words a minute, a second between turns), priced with the rate card.',
    ...(campaign.preDialWebhook
      ? ['The pre-dial webhook was not asked: a rehearsal calls no server; its answer could still skip a contact.']
      : []),
    ...(campaign.postCallMessages === 'FINAL_OUTCOME' && campaign.maxAttempts > 1
      ? ['postCallMessages is FINAL_OUTCOME: an unanswered follow-up goes only after the last attempt.']
      : []),
    ...(campaign.agentId ? [] : ['The campaign has no agent: no conversation ran.']),
    ...(notRehearsed
      ? [
          `${notRehearsed} of the conversations could not be rehearsed: the agent's model failed while playing the contact (each one's failure says why); they are neither in the forecast nor billed.`,
        ]
      : []),
  ];
  const report: Report = {
    brain,
    notes,
    summary: {
      contacts: parts.length,
      wouldBeCalled: parts.filter((part) => part.wouldBeCalled).length,
      byVerdict: count((part) => part.verdict),
      byReason: count((part) => part.reason),
    },
    contacts: parts,
    costTotal: costTotal.toFixed(4),
    billed: billed.toFixed(4),
  };
  await withTransaction(ctx, async (txCtx) => {
    const stored = await repo.finishRehearsal(txCtx.db, ctx.tenantId, row.id, { report }, ctx.clock.now());
    if (stored && billed.greaterThan(0)) await identity.debitWallet(txCtx.db, ctx.tenantId, billed, `Campaign rehearsal ${row.id}`, row.id);
  });
}

export const rehearseCampaignJob = (deps: Deps): JobDefinition<RehearseCampaignJob> => ({
  name: REHEARSE_CAMPAIGN,
  retryLimit: REHEARSE_RETRY_LIMIT,
  // 500 contacts with a slow model take a while.
  expireInSeconds: 3600,
  batchSize: 1,
  handle: (data, meta) => rehearseCampaign(deps, data, meta),
});
