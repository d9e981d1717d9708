/**
 * The conversation module: it opens a session for an agent (its model or the retrieval agent, its
 * prompt filled for the contact, its tools and knowledge) and runs it where a conversation happens:
 * on a simulated call, against a scripted contact, and in the dashboard's test chat.
 */
import { tenantCtx, withTransaction, type Deps, type TenantCtx } from '../../platform/context.ts';
import { appError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { money } from '../../platform/money.ts';
import { normalizePhoneNumber } from '../../platform/phone-numbers.ts';
import type { ChatMessage } from '../../providers/types.ts';
import type { JobDefinition } from '../../platform/jobs.ts';
import type { Agent } from '../agents/schemas.ts';
import * as agents from '../agents/service.ts';
import * as calls from '../calls/service.ts';
import * as compliance from '../compliance/service.ts';
import * as campaigns from '../campaigns/service.ts';
import * as identity from '../identity/service.ts';
import * as knowledge from '../knowledge/service.ts';
import { openSession, type ConversationModel, type PreparedReply, type SavedSession, type Session } from './engine.ts';

export type { PreparedReply, Session };
/** The contact a test names (a chat's, a test suite scenario's), as the API takes it. */
export { TestContact as TestContactSchema } from './schemas.ts';
export { addTokens, PERSONA_TURNS, personaLine, withExtraTokens, type Persona, type Tokens } from './persona.ts';
import * as repo from './repo.ts';
import type { CreateTestChatBody, TestChat } from './schemas.ts';
import { contactScript, ownScript, scriptedLines } from './scripted-contact.ts';
import { toolboxFor, type Venue } from './tools.ts';

/** A reply's length when the agent sets none: a few spoken sentences, and a bound on a runaway answer's cost. */
const DEFAULT_MAX_TOKENS = 300;
/** Passages retrieval weighs per query. */
const SEARCH_TOP_K = 5;

/** The agent's model with its reply settings, or null when there is no model server (the retrieval agent converses). */
export async function modelFor(deps: Pick<Deps, 'config'>, ctx: TenantCtx, agent: Pick<Agent, 'llm'>): Promise<ConversationModel | null> {
  const model = await agents.languageModelOf(deps, ctx, agent);
  if (!model) return null;
  return { ...model, temperature: agent.llm?.temperature, maxTokens: agent.llm?.maxTokens ?? DEFAULT_MAX_TOKENS };
}

/** Who the agent talks to, for its templates. */
export interface Counterpart {
  name: string | null;
  phone: string | null;
  email: string | null;
  metadata: Record<string, unknown>;
  /** The pre-dial webhook's variables for this call. */
  variables?: Record<string, string>;
  campaignName: string | null;
  timezone: string;
}

/** What an agent's templates are filled with, for one counterpart, now. */
const templateValuesOf = (ctx: TenantCtx, agent: Pick<Agent, 'name'>, counterpart: Counterpart): agents.TemplateValues => ({
  ...counterpart,
  agentName: agent.name,
  now: ctx.clock.now(),
});

/** A session for `agent`, its prompt filled for `counterpart`, its tools acting for `venue`. */
export async function sessionFor(
  deps: Deps,
  ctx: TenantCtx,
  agent: Agent,
  counterpart: Counterpart,
  venue: Venue,
  startedAt: Date,
  resume?: SavedSession,
) {
  const values = templateValuesOf(ctx, agent, counterpart);
  const search = (query: string) =>
    agent.knowledgeBaseIds.length
      ? knowledge.searchBases(deps, ctx.tenantId, agent.knowledgeBaseIds, query, SEARCH_TOP_K)
      : Promise.resolve([]);
  const model = await modelFor(deps, ctx, agent);
  const backupModel = model && agent.backup?.llm ? await modelFor(deps, ctx, { llm: agent.backup.llm }) : null;
  const session = openSession({
    agentName: agent.name,
    systemPrompt: agents.renderTemplate(agent.systemPrompt ?? '', values),
    firstMessage: agent.firstMessage ? agents.renderTemplate(agent.firstMessage, values) : null,
    language: agent.language,
    model,
    backup: backupModel && { model: backupModel, stallMs: deps.config.voice.failoverStallMs },
    toolbox: toolboxFor({ deps, tenantId: ctx.tenantId, agent, venue, search }),
    search,
    similarityToQuestion: (question, sentences) => knowledge.similarityToQuestion(deps, question, sentences),
    knowledgeInContext: agent.knowledgeInContext,
    clock: ctx.clock,
    startedAt,
    resume,
  });
  return { session, model };
}

/** The session's usage so far in the call's terms: tokens as the server reported them, for the model that ran. */
export function usageOf(session: Session, model: Pick<ConversationModel, 'name' | 'provider'> | null): calls.CallUsage {
  const { inputTokens, outputTokens, inputAudioTokens = 0, outputAudioTokens = 0 } = session.usage;
  const ran = model && inputTokens + outputTokens > 0;
  return {
    ...calls.NO_USAGE,
    llmTokens: inputTokens + outputTokens,
    llmInputTokens: inputTokens,
    llmOutputTokens: outputTokens,
    llmInputAudioTokens: inputAudioTokens,
    llmOutputAudioTokens: outputAudioTokens,
    llmModel: ran ? model.name : null,
    llmProvider: ran ? model.provider : null,
    ...(session.usage.backup && {
      backup: {
        ...calls.NO_BACKUP_USAGE,
        llmInputTokens: session.usage.backup.inputTokens,
        llmOutputTokens: session.usage.backup.outputTokens,
        llmModel: session.usage.backup.model,
        llmProvider: session.usage.backup.provider,
      },
    }),
  };
}

async function counterpartOfCall(ctx: TenantCtx, call: calls.CallRow): Promise<Counterpart & { script: readonly string[] }> {
  const phone = call.direction === 'OUTGOING' ? call.to_number : call.from_number;
  const [contact, campaign, tenantZone] = await Promise.all([
    campaigns.contactOfCall(ctx, call),
    call.campaign_id ? campaigns.findCampaign(ctx, call.campaign_id) : undefined,
    identity.tenantTimezone(ctx),
  ]);
  return {
    name: contact?.name ?? call.contact_name,
    phone,
    email: contact?.email ?? null,
    metadata: contact?.metadata ?? call.contact_metadata ?? {},
    variables: contact?.variables ?? {},
    campaignName: campaign?.name ?? null,
    timezone: campaign?.timezone ?? tenantZone ?? 'UTC',
    script: scriptedLines(call.contact_metadata, campaign?.simulatorScript),
  };
}

/**
 * A simulated call, answered: the agent converses with the scripted contact through the real engine
 * (model or retrieval agent, tools, knowledge), every turn recorded on the call as it happens. When
 * the agent ends the conversation the call ends; when the script runs out first, the contact stays
 * on the line without a word until the simulator's time is up.
 */
export async function converseOnSimulatedCall(deps: Deps, job: calls.CallAnsweredJob): Promise<void> {
  const ctx = tenantCtx(deps, job.tenantId);
  const call = await calls.claimConversation(ctx, job.callId);
  const conversation = call && (await conversationOfCall(deps, ctx, call));
  if (!call || !conversation) return;
  const { session, model, counterpart } = conversation;
  const record = async (turns: calls.TranscriptTurn[]) => calls.appendTurns(ctx, call.id, turns, usageOf(session, model));
  // false: the call ended meanwhile (the contact's time ran out, or someone hung up); stop talking.
  if (!(await converseWithScript(session, counterpart.script, record))) return;
  if (session.ended) await endCallConversation(ctx, call, session.ended, conversation.agent);
}

/**
 * The scripted contact's side of a conversation, through to its end: the agent opens, the contact
 * answers each turn from its lines (a reaction when the agent's words fit one), until the agent
 * ends the conversation or the script runs out. `record` keeps each turn's lines; false from it
 * stops the conversation (and this answers false).
 */
export async function converseWithScript(
  session: Session,
  lines: readonly string[],
  record: (turns: calls.TranscriptTurn[]) => Promise<boolean>,
): Promise<boolean> {
  const agentWords = (turns: calls.TranscriptTurn[]) =>
    turns
      .filter((turn) => turn.role === 'agent')
      .map((turn) => turn.text)
      .join(' ');
  const opening = await session.open();
  if (!(await record(opening))) return false;
  const script = contactScript(lines);
  for (let line = script.next(agentWords(opening)); line !== undefined && !session.ended;) {
    const turns = await session.hear(line);
    if (!(await record(turns))) return false;
    line = script.next(agentWords(turns));
  }
  return true;
}

/**
 * A conversation in text with a caller whose next words `nextLine` writes from the transcript so far
 * (null: they are done): the agent's opening, then each line and the agent's answer, into
 * `transcript`, until either side ends it.
 */
export async function converseInText(
  session: Session,
  nextLine: (transcript: calls.TranscriptTurn[]) => Promise<string | null>,
  transcript: calls.TranscriptTurn[],
): Promise<void> {
  transcript.push(...(await session.open()));
  while (!session.ended) {
    const said = await nextLine(transcript);
    if (said === null) break;
    transcript.push(...(await session.hear(said)));
  }
}

/** What a contact of a campaign says on a simulated call: its metadata.simulate.say, else the campaign's simulatorScript. */
export { ownScript, scriptedLines };

/** The agent's side of an answered call: its session, its prompt filled for the contact; null when the call has no agent. */
export async function conversationOfCall(deps: Deps, ctx: TenantCtx, call: calls.CallRow, loaded?: Agent) {
  if (!call.agent_id) return null;
  const agent = loaded ?? (await agents.agentOfCall(ctx, call));
  if (!agent) return null;
  const counterpart = await counterpartOfCall(ctx, call);
  const { session, model } = await sessionFor(deps, ctx, agent, counterpart, { kind: 'call', call }, call.answered_at ?? ctx.clock.now());
  return { agent, session, model, counterpart };
}

/**
 * The agent ended the conversation: an opt-out kept on the call and the person put on the
 * do-not-call list, and the call ended, or handed to the agent's transfer number.
 */
export async function endCallConversation(
  ctx: TenantCtx,
  call: calls.CallRow,
  reason: calls.EndReason,
  agent: Pick<Agent, 'transferNumber'>,
): Promise<void> {
  if (reason === 'opted_out') await optOut(ctx, call);
  await calls.endConversation(ctx, call.id, reason, reason === 'transferred' ? (agent.transferNumber ?? undefined) : undefined);
}

/**
 * What a machine that answered one of a campaign's calls gets (the calls module asks): the
 * campaign's policy, its voicemail filled as the agent's first message is, to be spoken in the
 * agent's language. Null when the call's campaign does not detect machines.
 */
export async function machinePolicyOf(ctx: TenantCtx, call: calls.CallRow): Promise<calls.MachinePolicy | null> {
  const setting = call.campaign_id ? (await campaigns.findCampaign(ctx, call.campaign_id))?.answeringMachine : undefined;
  if (!setting?.detect) return null;
  if (setting.onMachine !== 'LEAVE_VOICEMAIL' || !setting.voicemailMessage) return { onMachine: 'HANG_UP_AND_RETRY' };
  // An unfinished campaign's agent cannot be deleted; a missing one leaves the message in its plain words.
  const agent = await agents.agentOfCall(ctx, call);
  const values = templateValuesOf(ctx, { name: agent?.name ?? '' }, await counterpartOfCall(ctx, call));
  return {
    onMachine: 'LEAVE_VOICEMAIL',
    message: agents.renderTemplate(setting.voicemailMessage, values),
    language: agent?.language ?? 'en-US',
  };
}

export const converseOnSimulatedCallJob = (deps: Deps): JobDefinition<calls.CallAnsweredJob> => ({
  name: calls.CALL_ANSWERED,
  // A conversation is not repeated: the call is claimed once, so a retry finds it taken and stops.
  retryLimit: 2,
  batchSize: 1, // each conversation waits on its model; one job must not wait behind another
  handle: (data) => converseOnSimulatedCall(deps, data),
});

// ---------------------------------------------------------------------------------------------
// "Talk to this agent": the same engine without a call

const chatNotFound = () => appError('NOT_FOUND', { what: 'Test chat' });

function toTestChat(row: repo.TestChatRow): TestChat {
  return {
    id: row.id,
    agentId: row.agent_id,
    status: row.end_reason ? 'ENDED' : 'OPEN',
    endReason: row.end_reason as TestChat['endReason'],
    brain: row.brain,
    transcript: row.transcript as TestChat['transcript'],
    usage: { ...calls.NO_USAGE, ...row.usage } as TestChat['usage'],
    cost: row.cost as TestChat['cost'],
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

const brainOf = (model: ConversationModel | null) => (model ? `model:${model.name}` : 'retrieval-agent');

/** A test chat's counterpart: who the tester says they are, in the tenant's time zone. */
const counterpartOfChat = (contact: CreateTestChatBody['contact'], timezone: string): Counterpart => ({
  name: contact?.name ?? null,
  phone: contact?.phoneNumber ? (normalizePhoneNumber(contact.phoneNumber) ?? contact.phoneNumber) : null,
  email: contact?.email ?? null,
  metadata: contact?.metadata ?? {},
  campaignName: null,
  timezone,
});

/**
 * Saves what a turn changed and bills what it used: the chat's cost is priced like a call's and
 * the wallet debited by the increase, in one transaction. Undefined when another message was
 * answered meanwhile.
 */
async function saveChat(
  ctx: TenantCtx,
  chat: repo.TestChatRow | { id: string; agentId: string },
  session: Session,
  model: ConversationModel | null,
  turns: calls.TranscriptTurn[],
  // A browser call's: what its speech used too, and its end when the caller hangs up.
  spoken: { usage?: calls.CallUsage; endReason?: calls.EndReason } = {},
) {
  // A typed message keeps what a browser call on the chat spoke so far.
  const usage = spoken.usage ?? { ...usageOf(session, model), ...('version' in chat ? speechUsageOf(chat.usage) : {}) };
  const { cost, total } = calls.priceUsage(ctx, usage);
  const saved = session.save();
  const state = {
    brain: brainOf(model),
    history: saved.history,
    usage,
    cost,
    costTotal: total.toFixed(4),
    endReason: saved.ended ?? spoken.endReason ?? null,
    at: ctx.clock.now(),
  };
  return withTransaction(ctx, async (txCtx) => {
    const row =
      'version' in chat
        ? await repo.updateTestChat(txCtx.db, ctx.tenantId, chat.id, chat.version, { ...state, transcript: [...chat.transcript, ...turns] })
        : await repo.insertTestChat(txCtx.db, ctx.tenantId, { ...state, transcript: turns, id: chat.id, agentId: chat.agentId });
    if (!row) return undefined;
    const increase = total.sub(money('version' in chat ? chat.cost_total : '0'));
    if (increase.greaterThan(0)) await identity.debitWallet(txCtx.db, ctx.tenantId, increase, `Test chat ${row.id}`, row.id);
    return row;
  });
}

/** Opens a test chat with the agent: its opening line (or the model's), nothing else leaves the chat. */
export async function startTestChat(deps: Deps, ctx: TenantCtx, body: CreateTestChatBody): Promise<TestChat> {
  const agent = await agents.requireAgent(ctx, body.agentId);
  const id = newId();
  const counterpart = counterpartOfChat(body.contact, (await identity.tenantTimezone(ctx)) ?? 'UTC');
  const { session, model } = await sessionFor(deps, ctx, agent, counterpart, { kind: 'chat', chatId: id }, ctx.clock.now());
  const turns = await session.open();
  const row = await saveChat(ctx, { id, agentId: agent.id }, session, model, turns);
  return toTestChat(row!);
}

export async function getTestChat(ctx: TenantCtx, id: string): Promise<TestChat> {
  const row = await repo.findTestChat(ctx.db, ctx.tenantId, id);
  if (!row) throw chatNotFound();
  return toTestChat(row);
}

/** The tester says `text`; the agent answers through the same engine as on a call. */
export async function sendTestChatMessage(deps: Deps, ctx: TenantCtx, id: string, text: string): Promise<TestChat> {
  const row = await repo.findTestChat(ctx.db, ctx.tenantId, id);
  if (!row) throw chatNotFound();
  if (row.end_reason) throw appError('TEST_CHAT_ENDED', { reason: row.end_reason.replaceAll('_', ' ') });
  const agent = await agents.requireAgent(ctx, row.agent_id);
  const usage = row.usage as Partial<calls.CallUsage>;
  const resume: SavedSession = {
    history: row.history as ChatMessage[],
    usage: {
      inputTokens: usage.llmInputTokens ?? 0,
      outputTokens: usage.llmOutputTokens ?? 0,
      // The chat failed over to the agent's backup model in an earlier message: it answers on.
      ...(usage.backup?.llmModel && {
        backup: {
          model: usage.backup.llmModel,
          provider: usage.backup.llmProvider ?? 'OPENAI_COMPATIBLE',
          inputTokens: usage.backup.llmInputTokens,
          outputTokens: usage.backup.llmOutputTokens,
        },
      }),
    },
    ended: null,
  };
  // The prompt was filled when the chat opened and lives on in its history: no one to fill it for.
  const counterpart = counterpartOfChat(undefined, 'UTC');
  const { session, model } = await sessionFor(deps, ctx, agent, counterpart, { kind: 'chat', chatId: id }, row.created_at, resume);
  const turns = await session.hear(text);
  const saved = await saveChat(ctx, row, session, model, turns);
  if (!saved) throw appError('TEST_CHAT_BUSY');
  return toTestChat(saved);
}

// ---------------------------------------------------------------------------------------------
// "Call me in the browser": a test chat spoken (the media module carries its audio)

/** What a browser call's speech used, with who ran it (which prices it). */
type SpeechUsage = Pick<calls.CallUsage, 'sttSeconds' | 'ttsCharacters' | 'sttProvider' | 'ttsProvider'>;

const speechUsageOf = (usage: Partial<calls.CallUsage>): SpeechUsage => ({
  sttSeconds: usage.sttSeconds ?? 0,
  ttsCharacters: usage.ttsCharacters ?? 0,
  sttProvider: usage.sttProvider ?? null,
  ttsProvider: usage.ttsProvider ?? null,
});

const COUNTED_USAGE = [
  'sttSeconds',
  'ttsCharacters',
  'llmTokens',
  'llmInputTokens',
  'llmOutputTokens',
  'llmInputAudioTokens',
  'llmOutputAudioTokens',
  'telephonySeconds',
] as const;
const NAMED_USAGE = ['llmModel', 'llmProvider', 'sttProvider', 'ttsProvider', 'telephonyProvider'] as const;

/** `base` with what was used from `before` to `now` added, so a typed message sent to the chat meanwhile keeps its share. */
function grownUsage(base: Partial<calls.CallUsage>, now: calls.CallUsage, before: calls.CallUsage): calls.CallUsage {
  const usage = { ...now };
  for (const key of COUNTED_USAGE) usage[key] = (base[key] ?? 0) + now[key] - before[key];
  for (const key of NAMED_USAGE) usage[key] = now[key] ?? base[key] ?? null;
  usage.sttSeconds = Math.round(usage.sttSeconds * 100) / 100;
  return usage;
}

/** A test chat the tester speaks: its session runs on a voice pipeline, which records each settled exchange. */
export interface VoiceTestChat {
  readonly session: Session;
  /** The chat as last recorded. */
  chat(): TestChat;
  /** Records settled turns, billing the model's tokens and the speech used so far; false once the chat is over. */
  record(turns: calls.TranscriptTurn[], speech: SpeechUsage): Promise<boolean>;
  /** The call is over: the chat ends with `reason`, unless the agent ended it first. */
  end(reason: calls.EndReason): Promise<void>;
}

/**
 * Opens a test chat to be spoken, as "Talk to this agent" opens a typed one (same session, same
 * billing as test cost); the agent's opening is left to the voice pipeline, which speaks it.
 */
export async function openVoiceTestChat(
  deps: Deps,
  ctx: TenantCtx,
  agent: Agent,
  contact: CreateTestChatBody['contact'],
): Promise<VoiceTestChat> {
  const id = newId();
  const counterpart = counterpartOfChat(contact, (await identity.tenantTimezone(ctx)) ?? 'UTC');
  const { session, model } = await sessionFor(deps, ctx, agent, counterpart, { kind: 'chat', chatId: id }, ctx.clock.now());
  let row = (await saveChat(ctx, { id, agentId: agent.id }, session, model, []))!;
  /** The usage as last written; writes go one after another (the pipeline's last words may overlap a reply). */
  let written = usageOf(session, model);
  let writes: Promise<unknown> = Promise.resolve();

  const write = (turns: calls.TranscriptTurn[], usage: calls.CallUsage, endReason?: calls.EndReason) => {
    const next = writes.then(async () => {
      for (let current: repo.TestChatRow | undefined = row; current && !current.end_reason;) {
        const saved = await saveChat(ctx, current, session, model, turns, { usage: grownUsage(current.usage, usage, written), endReason });
        if (saved) {
          [row, written] = [saved, usage];
          return true;
        }
        // A typed message was answered in between: build on what it saved.
        current = await repo.findTestChat(ctx.db, ctx.tenantId, id);
        if (current) row = current;
      }
      return false;
    });
    writes = next.catch(() => undefined);
    return next;
  };
  const usageNow = (speech: Partial<calls.CallUsage>) => ({ ...usageOf(session, model), ...speechUsageOf(speech) });

  return {
    session,
    chat: () => toTestChat(row),
    record: (turns, speech) => write(turns, usageNow(speech)),
    end: async (reason) => void (await write([], usageNow(written), reason)),
  };
}

/**
 * The person asked on the call not to be called again: an `opt_out` outcome on the call, and their
 * number on the do-not-call list with the call and the transcript turn where they said so.
 */
async function optOut(ctx: TenantCtx, call: calls.CallRow): Promise<void> {
  const at = ctx.clock.now().toISOString();
  await calls.recordOutcome(ctx, call, { type: 'opt_out', toolCallId: null, at, data: {} });
  const transcript = ((await calls.findCallRow(ctx, call.id))?.transcript ?? []) as { role?: string }[];
  const turn = transcript.findLastIndex((entry) => entry.role === 'contact');
  await compliance.addToDoNotCall(ctx, {
    phoneNumber: call.direction === 'INCOMING' ? call.from_number : call.to_number,
    source: 'call',
    reason: 'Asked on a call not to be called again.',
    evidence: { callId: call.id, transcriptTurn: turn, at },
  });
}
