import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { withTransaction, type TenantCtx } from '../../platform/context.ts';
import { isForeignKeyViolation, isUniqueViolation, onUniqueViolation, type Queryable } from '../../platform/db.ts';
import { appError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import type { Page } from '../../platform/pagination.ts';
import type { ServerKeys } from '../../platform/secrets.ts';
import { INVALID_PHONE, normalizePhoneNumber } from '../../platform/phone-numbers.ts';
import { savedUrlProblem } from '../../platform/safe-fetch.ts';
import { compileArgumentsSchema } from '../../platform/validation.ts';
import { TEMPLATE_VARIABLES, unknownVariable, variableWithoutFallback } from './prompt-template.ts';

/** Prompts are templates over the contact, the campaign and the time; the conversation fills them. */
export { renderTemplate, TEMPLATE_VARIABLES, type TemplateValues } from './prompt-template.ts';
import { llmProvider } from '../../providers/registry.ts';
import * as integrations from '../integrations/service.ts';
import { assertBasesExist } from '../knowledge/service.ts';
import * as repo from './repo.ts';
import { DEFAULT_RETENTION_DAYS, VERSIONED_FIELDS } from './schemas.ts';
import type {
  Agent,
  AgentConfig,
  AgentVersion,
  AgentVersionDiff,
  AgentLlm,
  CreateAgentBody,
  StoredBackup,
  StoredRealtime,
  CustomTool,
  CreateVoiceNumberBody,
  UpdateAgentBody,
  UpdateVoiceNumberBody,
  VoiceNumber,
} from './schemas.ts';
import { realtimeServerOf } from './language-model.ts';
import { backupConflict, backupSpeechPatch, DEFAULT_TTS, speechPatch } from './speech.ts';
import { AGENT_TOOLS, isAgentTool } from './tools.ts';

/** Speech on a phone line: the voices a provider offers, and what the media pipeline speaks and listens with. */
export { defaultVoice, listVoices, relaySpeechOf, serverFor, speechOf, type AgentSpeech, type Server } from './speech.ts';
export { languageModelOf, realtimeModelOf, type LanguageModel, type RealtimeModel } from './language-model.ts';

/** The tools an agent may be given (GET /analytics/tools lists them). */
export { AGENT_TOOLS };

/** What a lookup needs: the tenant and a db handle. A TenantCtx is one; so is an API-key owner's. */
export type TenantScope = Pick<TenantCtx, 'tenantId' | 'db'>;

const toAgent = (row: repo.AgentRow): Agent => ({
  id: row.id,
  tenantId: row.tenant_id,
  name: row.name,
  description: row.description,
  language: row.language,
  voice: row.voice,
  systemPrompt: row.system_prompt,
  firstMessage: row.first_message,
  knowledgeBaseIds: row.knowledge_base_ids,
  tools: row.tools,
  customTools: row.custom_tools,
  llm: row.llm,
  realtime: row.realtime ?? null,
  stt: row.stt,
  tts: row.tts,
  backup: row.backup ?? null,
  voicePipeline: row.voice_pipeline,
  knowledgeInContext: row.knowledge_in_context,
  transferNumber: row.transfer_number,
  recording: row.recording,
  metadata: row.metadata,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});

const toVoiceNumber = (row: repo.VoiceNumberRow): VoiceNumber => ({
  id: row.id,
  tenantId: row.tenant_id,
  phoneNumber: row.phone_number,
  provider: row.provider,
  label: row.label,
  inboundAgentId: row.inbound_agent_id,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});

const agentNotFound = () => appError('NOT_FOUND', { what: 'Agent' });
const numberNotFound = () => appError('NOT_FOUND', { what: 'Voice number' });
const duplicateAgentName = (name: string) => appError('AGENT_NAME_TAKEN', { name });
// Says nothing of who holds the number: it may be another tenant.
const numberTaken = (phoneNumber: string) => appError('VOICE_NUMBER_TAKEN', { phoneNumber });

/**
 * Asks the campaigns module whether a campaign that has not finished uses an agent or a voice
 * number (contract §3); passed in by the routes, which keeps agents free of campaigns.
 */
export type CampaignUsage = (ctx: TenantCtx, id: string) => Promise<boolean>;

/** The canonical casing of a tag the schema's pattern let through: en-us → en-US, zh-hant-tw → zh-Hant-TW. */
function canonicalLanguage(tag: string): string {
  try {
    return Intl.getCanonicalLocales(tag)[0]!;
  } catch {
    throw appError('INVALID_LANGUAGE', { tag }, [{ path: '/language', message: 'must be a BCP-47 language tag' }]);
  }
}

function checkTools(tools: string[]): void {
  const index = tools.findIndex((name) => !isAgentTool(name));
  if (index === -1) return;
  throw appError('UNKNOWN_TOOL', { tool: tools[index]!, tools: AGENT_TOOLS.map((tool) => tool.name).join(', ') }, [
    { path: `/tools/${index}`, message: 'is not a known tool' },
  ]);
}

const knowledgeBaseIds = (ids: string[]) => [...new Set(ids.map((id) => id.toLowerCase()))];

/**
 * A variable no call can fill is refused now, not discovered on a live call: an agent's prompts, a
 * campaign's voicemail (`field` as the person wrote it, `path` its JSON pointer in the body).
 */
export function checkTemplate(field: string, template: string | null | undefined, path = `/${field}`): void {
  const variable = template ? unknownVariable(template) : undefined;
  if (variable === undefined) return;
  const variables = TEMPLATE_VARIABLES.map((v) => `{{${v.name}}}`).join(', ');
  throw appError('UNKNOWN_TEMPLATE_VARIABLE', { field, variable, variables }, [
    { path, message: `{{${variable}}} is not a template variable` },
  ]);
}

/**
 * A text said to the person word for word (a first message, a voicemail) also gives a fallback for
 * each variable that may be empty, so no one hears "Hi , this is…". The system prompt is read by
 * the model only and needs none.
 */
export function checkSpokenTemplate(field: string, template: string | null | undefined, path = `/${field}`): void {
  checkTemplate(field, template, path);
  const variable = template ? variableWithoutFallback(template) : undefined;
  if (variable === undefined) return;
  throw appError('TEMPLATE_NEEDS_FALLBACK', { field, variable, fallback: `{{${variable}|there}}` }, [
    { path, message: `{{${variable}}} may be empty: give it a fallback` },
  ]);
}

async function checkCustomTools(tools: CustomTool[], allowPrivate: boolean): Promise<void> {
  for (const [index, tool] of tools.entries()) {
    const refuse = (problem: string, field: string) => {
      throw appError('INVALID_CUSTOM_TOOL', { name: tool.name, problem }, [{ path: `/customTools/${index}/${field}`, message: problem }]);
    };
    if (isAgentTool(tool.name)) refuse("the name is a built-in tool's; choose another", 'name');
    if (tools.findIndex((other) => other.name.toLowerCase() === tool.name.toLowerCase()) !== index)
      refuse('the name is used twice', 'name');
    if (tool.parameters.type !== 'object') refuse('parameters must be a JSON Schema with "type": "object"', 'parameters');
    try {
      compileArgumentsSchema(tool.parameters);
    } catch (error) {
      refuse(`parameters is not a valid JSON Schema (${(error as Error).message})`, 'parameters');
    }
    let url: URL | undefined;
    try {
      url = new URL(tool.url);
    } catch {
      refuse('url is not a URL', 'url');
    }
    if (url!.protocol !== 'https:' && !(allowPrivate && url!.protocol === 'http:')) refuse('url must be https', 'url');
    // Checked again on every call, on the address actually used (safe-fetch).
    const problem = await savedUrlProblem(tool.url, { allowPrivate });
    if (problem) refuse(`url cannot be fetched: ${problem}`, 'url');
  }
}

/** A model needs a server to ask: the tenant's own (its llm integration) or the service's (LLM_API_URL). */
async function checkLlm(ctx: TenantCtx, llm: AgentLlm | null | undefined, path = '/llm'): Promise<AgentLlm | null | undefined> {
  if (!llm) return llm;
  const provider = llm.provider ?? 'OPENAI_COMPATIBLE';
  if (!ctx.config.llm.apiUrl && !(await integrations.connectionTo(ctx, llmProvider(provider))))
    throw appError('LLM_NOT_CONFIGURED', {}, [{ path, message: 'no model server is configured' }]);
  return { provider, ...llm };
}

/** OpenAI's default voice for speech-to-speech, when an agent names none. */
export const DEFAULT_REALTIME_VOICE = 'marin';

/**
 * Speech-to-speech as stored (defaults filled), once it can run: a server to reach (the tenant's
 * OpenAI-compatible connection or the service's LLM_API_URL), a media stream to carry its audio,
 * and an stt when our turn detection listens. `current`: the agent being updated.
 */
/** An end-of-turn detector this service can run. */
function checkEndOfTurn(ctx: TenantCtx, stt: UpdateAgentBody['stt']): void {
  if (stt?.endOfTurn === 'SMART_TURN' && !ctx.config.voice.smartTurnModel)
    throw appError('SMART_TURN_NOT_CONFIGURED', {}, [{ path: '/stt/endOfTurn', message: 'SMART_TURN_MODEL_PATH is not set' }]);
  const refuse = (problem: string) => appError('END_OF_TURN_CONFLICT', { problem }, [{ path: '/stt/endOfTurn', message: problem }]);
  const fluxModel = stt?.model?.startsWith('flux-') === true;
  if (stt?.endOfTurn === 'FLUX' && stt.provider !== 'DEEPGRAM') throw refuse('FLUX is a Deepgram model: it needs provider DEEPGRAM');
  if (stt?.endOfTurn === 'FLUX' && stt.model && !fluxModel) throw refuse(`FLUX needs a Flux model (flux-general-en), not ${stt.model}`);
  if (fluxModel && stt?.endOfTurn !== 'FLUX') throw refuse(`a Flux model ends the turns itself: set it to FLUX`);
}

async function checkRealtime(
  ctx: TenantCtx,
  input: UpdateAgentBody,
  current: Agent | undefined,
): Promise<StoredRealtime | null | undefined> {
  const given = input.realtime;
  const realtime =
    given === undefined ? current?.realtime : given && { voice: DEFAULT_REALTIME_VOICE, turnDetection: 'server' as const, ...given };
  if (!realtime) return given === undefined ? undefined : null;
  const refuse = (path: string, problem: string) => appError('REALTIME_CONFLICT', { problem }, [{ path, message: problem }]);
  if ((input.voicePipeline ?? current?.voicePipeline) === 'CONVERSATION_RELAY')
    throw refuse('/realtime', 'needs the MEDIA_STREAM voice pipeline: with CONVERSATION_RELAY, Twilio listens and speaks');
  const stt = input.stt === undefined ? current?.stt : input.stt;
  if (realtime.turnDetection === 'pipeline' && !stt)
    throw refuse('/realtime/turnDetection', 'with turn detection by the pipeline needs an stt to listen with');
  if (given && !(await realtimeServerOf(ctx)))
    throw appError('REALTIME_NOT_CONFIGURED', {}, [{ path: '/realtime', message: 'no OpenAI-compatible server is configured' }]);
  return given === undefined ? undefined : realtime;
}

/**
 * The backup as stored, checked against the agent it backs (`input` over `current`): a model that
 * has a server and is not the agent's own, speech providers reachable and not the agent's own, and
 * nothing of speech where callforge does not run the speech (ConversationRelay) or where one model
 * does it all (speech-to-speech). Undefined: the patch leaves it.
 */
async function checkBackup(ctx: TenantCtx, input: UpdateAgentBody, current: Agent | undefined): Promise<StoredBackup | null | undefined> {
  if (!input.backup) return input.backup;
  const refuse = backupConflict;
  const { llm, stt, tts } = input.backup;
  const agentLlm = input.llm === undefined ? current?.llm : input.llm;
  if (
    llm &&
    (llm.provider ?? 'OPENAI_COMPATIBLE') === (agentLlm?.provider ?? 'OPENAI_COMPATIBLE') &&
    llm.model === (agentLlm?.model ?? ctx.config.llm.model)
  )
    throw refuse('llm', "is the agent's own model: name another");
  const realtime = input.realtime === undefined ? current?.realtime : input.realtime;
  if ((stt || tts) && realtime)
    throw refuse(stt ? 'stt' : 'tts', 'has nothing to take over from: the agent speaks through a speech-to-speech model');
  if ((stt || tts) && (input.voicePipeline ?? current?.voicePipeline) === 'CONVERSATION_RELAY')
    throw refuse(stt ? 'stt' : 'tts', "cannot take over: Twilio's ConversationRelay listens and speaks on this agent's calls");
  const agent = {
    stt: input.stt === undefined ? (current?.stt ?? null) : input.stt,
    tts: input.tts ?? current?.tts ?? DEFAULT_TTS,
    language: input.language === undefined ? (current?.language ?? 'en-US') : canonicalLanguage(input.language),
  };
  return { llm: (await checkLlm(ctx, llm, '/backup/llm')) ?? null, ...(await backupSpeechPatch(ctx, { stt, tts }, agent)) };
}

function transferNumberOf(raw: string | null | undefined): string | null | undefined {
  if (!raw) return raw;
  const phoneNumber = normalizePhoneNumber(raw.trim());
  if (!phoneNumber) throw appError('INVALID_PHONE_NUMBER', {}, [{ path: '/transferNumber', message: INVALID_PHONE }]);
  return phoneNumber;
}

/**
 * The patch as stored: language canonical, tools known, templates and custom tools checked, knowledge
 * base ids without repeats, speech providers reachable and the voice one of the provider's.
 * `speechOf`: 'new' on create (speech defaults filled), the agent being updated when the patch
 * touches its speech, undefined when it does not.
 */
async function agentPatch(ctx: TenantCtx, input: UpdateAgentBody, speechOf: Agent | 'new' | undefined): Promise<Partial<repo.AgentFields>> {
  if (input.tools) checkTools(input.tools);
  checkTemplate('systemPrompt', input.systemPrompt);
  checkSpokenTemplate('firstMessage', input.firstMessage);
  if (input.customTools) await checkCustomTools(input.customTools, ctx.config.allowPrivateUrls);
  checkEndOfTurn(ctx, input.stt);
  const language = input.language === undefined ? undefined : canonicalLanguage(input.language);
  const speech = speechOf
    ? await speechPatch(
        ctx,
        { stt: input.stt, tts: input.tts, voice: input.voice, language, voicePipeline: input.voicePipeline },
        speechOf === 'new' ? undefined : speechOf,
      )
    : {};
  return {
    ...input,
    ...speech,
    language,
    knowledgeBaseIds: input.knowledgeBaseIds && knowledgeBaseIds(input.knowledgeBaseIds),
    llm: await checkLlm(ctx, input.llm),
    realtime: await checkRealtime(ctx, { ...input, ...speech }, speechOf === 'new' ? undefined : speechOf),
    backup: await checkBackup(ctx, { ...input, ...speech }, speechOf === 'new' ? undefined : speechOf),
    transferNumber: transferNumberOf(input.transferNumber),
    recording: input.recording && {
      enabled: input.recording.enabled,
      retentionDays: input.recording.retentionDays ?? DEFAULT_RETENTION_DAYS,
    },
  };
}

export async function createAgent(ctx: TenantCtx, input: CreateAgentBody): Promise<Agent> {
  const patch = await agentPatch(ctx, input, 'new');
  await assertBasesExist(ctx, patch.knowledgeBaseIds ?? []);
  const fields: repo.AgentFields = {
    name: input.name,
    description: patch.description ?? null,
    language: patch.language ?? 'en-US',
    voice: patch.voice ?? null,
    systemPrompt: patch.systemPrompt ?? null,
    firstMessage: patch.firstMessage ?? null,
    knowledgeBaseIds: patch.knowledgeBaseIds ?? [],
    tools: patch.tools ?? [],
    customTools: patch.customTools ?? [],
    llm: patch.llm ?? null,
    realtime: patch.realtime ?? null,
    stt: patch.stt ?? null,
    tts: patch.tts!,
    backup: patch.backup ?? null,
    voicePipeline: patch.voicePipeline ?? 'MEDIA_STREAM',
    knowledgeInContext: patch.knowledgeInContext ?? false,
    transferNumber: patch.transferNumber ?? null,
    recording: patch.recording ?? { enabled: false, retentionDays: DEFAULT_RETENTION_DAYS },
    metadata: patch.metadata ?? {},
  };
  const toolSigningSecret = `whsec_${randomBytes(32).toString('base64')}`;
  const row = await onUniqueViolation(
    repo.insertAgent(ctx.db, ctx.tenantId, { id: newId(), ...fields, toolSecretSealed: ctx.serverKeys.seal(toolSigningSecret) }),
    () => duplicateAgentName(input.name),
  );
  return { ...toAgent(row), toolSigningSecret };
}

/** The secret that signs the agent's custom tool requests, opened (every agent has one from its creation). */
export async function toolSigningSecret(ctx: TenantScope & Pick<TenantCtx, 'serverKeys'>, agentId: string): Promise<string | undefined> {
  const row = await repo.findAgent(ctx.db, ctx.tenantId, agentId);
  return row?.tool_secret_sealed ? ctx.serverKeys.open(row.tool_secret_sealed) : undefined;
}

export async function listAgents(ctx: TenantCtx, search: string | undefined, page: Page) {
  const { rows, total } = await repo.listAgents(ctx.db, ctx.tenantId, search, page);
  return { data: rows.map(toAgent), total };
}

export async function updateAgent(ctx: TenantCtx, agentId: string, input: UpdateAgentBody): Promise<Agent> {
  // The voice is checked against the agent's provider: read the agent first when the patch touches its speech.
  const touchesSpeech =
    input.voice !== undefined ||
    input.tts !== undefined ||
    input.stt !== undefined ||
    input.voicePipeline !== undefined ||
    input.realtime !== undefined ||
    input.backup !== undefined;
  const patch = await agentPatch(ctx, input, touchesSpeech ? await requireAgent(ctx, agentId) : undefined);
  await assertBasesExist(ctx, patch.knowledgeBaseIds ?? []);
  const row = await onUniqueViolation(repo.updateAgent(ctx.db, ctx.tenantId, agentId, patch), () => duplicateAgentName(input.name ?? ''));
  if (!row) throw agentNotFound();
  return toAgent(row);
}

/** Names of the agents that search a knowledge base (a base they search is not deleted). */
/** Names of the agents among `ids`, by id: one read however many (usage reports name each agent). */
export const agentNames = (ctx: TenantScope, ids: string[]) => repo.agentNamesById(ctx.db, ctx.tenantId, ids);

export async function agentsSearchingBase(ctx: TenantCtx, baseId: string): Promise<string[]> {
  return repo.agentNamesSearching(ctx.db, ctx.tenantId, baseId);
}

/** Refused while a campaign that has not finished uses the agent; its numbers lose it as inbound agent. */
export async function deleteAgent(ctx: TenantCtx, agentId: string, agentInUse: CampaignUsage): Promise<void> {
  await withTransaction(ctx, async (txCtx) => {
    if (!(await repo.lockAgent(txCtx.db, ctx.tenantId, agentId))) throw agentNotFound();
    if (await agentInUse(txCtx, agentId)) {
      throw appError('AGENT_IN_USE');
    }
    await repo.deleteAgent(txCtx.db, ctx.tenantId, agentId);
  });
}

/** The tenant's agent, or 404 "Agent not found." (also when it belongs to another tenant). */
export async function requireAgent(ctx: TenantScope, agentId: string): Promise<Agent> {
  const row = await repo.findAgent(ctx.db, ctx.tenantId, agentId);
  if (!row) throw agentNotFound();
  return toAgent(row);
}

/** Several agents in one statement, in order (undefined: not the tenant's). */
export async function findAgents(ctx: TenantScope, agentIds: string[]): Promise<(Agent | undefined)[]> {
  const rows = await repo.findAgents(ctx.db, ctx.tenantId, agentIds);
  return agentIds.map((agentId) => {
    const row = rows.get(agentId);
    return row && toAgent(row);
  });
}

export const agentExists = (ctx: TenantScope, agentId: string): Promise<boolean> => repo.agentExists(ctx.db, ctx.tenantId, agentId);

/** Onboarding's "has a flow" (the tenant has built at least one agent), as an SQL condition on the tenant `$1`. */
export const hasAgentCondition = repo.tenantHasAgent;

// Seed §4.7: these two do not exist; the answer names the route that does what was asked.
export const executionsNotAnEndpoint = (agentId: string) => appError('NOT_IMPLEMENTED', { agentId });
export const noBulkStopCalls = () => appError('NOT_IMPLEMENTED.bulkStop');

function phoneNumberOf(raw: string): string {
  const phoneNumber = normalizePhoneNumber(raw.trim());
  if (!phoneNumber) {
    throw appError('INVALID_PHONE_NUMBER', {}, [{ path: '/phoneNumber', message: INVALID_PHONE }]);
  }
  return phoneNumber;
}

/** Registers a number for the tenant; a number is registered once on the whole platform. */
export async function createVoiceNumber(ctx: TenantCtx, input: CreateVoiceNumberBody): Promise<VoiceNumber> {
  const phoneNumber = phoneNumberOf(input.phoneNumber);
  const inboundAgentId = input.inboundAgentId ?? null;
  if (inboundAgentId) await requireAgent(ctx, inboundAgentId);
  try {
    return toVoiceNumber(
      await repo.insertVoiceNumber(ctx.db, ctx.tenantId, {
        id: newId(),
        phoneNumber,
        provider: input.provider,
        label: input.label ?? null,
        inboundAgentId,
      }),
    );
  } catch (error) {
    if (isUniqueViolation(error)) throw numberTaken(phoneNumber);
    if (isForeignKeyViolation(error)) throw agentNotFound(); // deleted since the check
    throw error;
  }
}

export async function listVoiceNumbers(ctx: TenantCtx, page: Page) {
  const { rows, total } = await repo.listVoiceNumbers(ctx.db, ctx.tenantId, page);
  return { data: rows.map(toVoiceNumber), total };
}

/** Label and inbound agent only: the number and its provider are fixed once registered. */
export async function updateVoiceNumber(ctx: TenantCtx, numberId: string, input: UpdateVoiceNumberBody): Promise<VoiceNumber> {
  if (input.inboundAgentId) await requireAgent(ctx, input.inboundAgentId);
  try {
    const row = await repo.updateVoiceNumber(ctx.db, ctx.tenantId, numberId, input);
    if (!row) throw numberNotFound();
    return toVoiceNumber(row);
  } catch (error) {
    if (isForeignKeyViolation(error)) throw agentNotFound();
    throw error;
  }
}

export async function deleteVoiceNumber(ctx: TenantCtx, numberId: string, numberInUse: CampaignUsage): Promise<void> {
  await withTransaction(ctx, async (txCtx) => {
    if (!(await repo.lockVoiceNumber(txCtx.db, ctx.tenantId, numberId))) throw numberNotFound();
    if (await numberInUse(txCtx, numberId)) {
      throw appError('VOICE_NUMBER_IN_USE');
    }
    await repo.deleteVoiceNumber(txCtx.db, ctx.tenantId, numberId);
  });
}

/** The tenant's voice number, or undefined (also when it belongs to another tenant). */
export async function findVoiceNumber(ctx: TenantScope, numberId: string): Promise<VoiceNumber | undefined> {
  const row = await repo.findVoiceNumber(ctx.db, ctx.tenantId, numberId);
  return row && toVoiceNumber(row);
}

/** The tenant's voice number, or 404 "Voice number not found." (also when it belongs to another tenant). */
export async function requireVoiceNumber(ctx: TenantScope, numberId: string): Promise<VoiceNumber> {
  const number = await findVoiceNumber(ctx, numberId);
  if (!number) throw numberNotFound();
  return number;
}

export const voiceNumberExists = (ctx: TenantScope, numberId: string): Promise<boolean> =>
  repo.voiceNumberExists(ctx.db, ctx.tenantId, numberId);

/** Onboarding's "has an integration" until the integrations module answers it (a number is registered), as an SQL condition on the tenant `$1`. */
export const hasVoiceNumberCondition = repo.tenantHasVoiceNumber;

/**
 * The number a call was placed to, whichever tenant holds it, for telephony callbacks. Not
 * tenant-scoped on purpose: an inbound call arrives with only the dialled number, and the number
 * (unique on the platform) is what tells which tenant and agent answer it. Undefined when the
 * number is not valid or not registered.
 */
export async function findVoiceNumberByPhone(db: Queryable, phoneNumber: string): Promise<VoiceNumber | undefined> {
  const normalized = normalizePhoneNumber(phoneNumber.trim());
  const row = normalized ? await repo.findVoiceNumberByPhone(db, normalized) : undefined;
  return row && toVoiceNumber(row);
}

/** Key rotation: every agent's tool signing secret sealed again with SECRETS_KEY, in the caller's transaction. */
export async function resealToolSecrets(db: Queryable, serverKeys: ServerKeys): Promise<number> {
  const rows = await repo.lockSealedToolSecrets(db);
  for (const row of rows)
    await repo.updateToolSecretSealed(db, row.tenant_id, row.id, serverKeys.seal(serverKeys.open(row.tool_secret_sealed)));
  return rows.length;
}

// ---------------------------------------------------------------------------------------------
// Versions (issue 41): the conversational config frozen, listed, compared and restored.

/** The fields a version freezes, taken from the agent (docs/decisions/0058-agent-versions.md). */
const configOf = (agent: Agent): AgentConfig => Object.fromEntries(VERSIONED_FIELDS.map((field) => [field, agent[field]])) as AgentConfig;

const toVersion = (row: repo.VersionRow): AgentVersion => ({
  agentId: row.agent_id,
  version: row.version,
  note: row.note,
  config: row.config,
  createdAt: row.created_at.toISOString(),
});

const versionNotFound = (agentId: string, version: number) => appError('NOT_FOUND.agentVersion', { agentId, version });

/**
 * Freezes the agent's current config as its next version, in one transaction that holds the agent
 * locked (two publishes at once get two numbers; an edit waits). A config equal to the latest
 * version's is refused: the version already exists.
 */
/** What a higher module does as a version is published, in the publishing transaction (the test suites' runs are queued). */
export type OnPublished = (txCtx: TenantCtx, agentId: string, version: number) => Promise<void>;

export async function publishVersion(
  ctx: TenantCtx,
  agentId: string,
  note: string | undefined,
  onPublished?: OnPublished,
): Promise<AgentVersion> {
  return withTransaction(ctx, async (txCtx) => {
    const row = await repo.findAgent(txCtx.db, ctx.tenantId, agentId, true);
    if (!row) throw agentNotFound();
    const config = configOf(toAgent(row));
    const latest = await repo.latestVersion(txCtx.db, ctx.tenantId, agentId);
    if (latest && diffOf(latest.config, config).length === 0) throw appError('AGENT_VERSION_UNCHANGED', { version: latest.version });
    const version = toVersion(await repo.insertVersion(txCtx.db, ctx.tenantId, agentId, config, note ?? null));
    await onPublished?.(txCtx, agentId, version.version);
    return version;
  });
}

export async function listVersions(ctx: TenantCtx, agentId: string, page: Page) {
  await requireAgent(ctx, agentId);
  const { rows, total } = await repo.listVersions(ctx.db, ctx.tenantId, agentId, page);
  return { data: rows.map(toVersion), total };
}

/** The agent's version, or 404 (also when the agent is another tenant's). */
export async function requireVersion(ctx: TenantScope, agentId: string, version: number): Promise<AgentVersion> {
  const row = await repo.findVersion(ctx.db, ctx.tenantId, agentId, version);
  if (row) return toVersion(row);
  await requireAgent(ctx, agentId);
  throw versionNotFound(agentId, version);
}

/** 404 for the first of `versions` the agent (of this tenant) does not have; `pathOf` names where each was given. */
export async function assertVersionsExist(ctx: TenantScope, agentId: string, versions: number[], pathOf: (index: number) => string) {
  const existing = await repo.existingVersions(ctx.db, ctx.tenantId, agentId, versions);
  const index = versions.findIndex((version) => !existing.has(version));
  if (index === -1) return;
  await requireAgent(ctx, agentId);
  throw appError('NOT_FOUND.agentVersion', { agentId, version: versions[index]! }, [
    { path: pathOf(index), message: `is not a published version of agent ${agentId}` },
  ]);
}

/** The fields whose values differ, in the config's order, as { field, from, to }. */
function diffOf(from: AgentConfig, to: AgentConfig): AgentVersionDiff['changes'] {
  // A version frozen before a field existed lacks it: it held that field's value of the time, null.
  return VERSIONED_FIELDS.flatMap((field) => {
    const before = from[field] ?? null;
    const after = to[field] ?? null;
    return isDeepStrictEqual(before, after) ? [] : [{ field, from: before, to: after }];
  });
}

/** What differs from `against` (a version, or the agent's current config when undefined) to `version`. */
export async function diffVersion(
  ctx: TenantCtx,
  agentId: string,
  version: number,
  against: number | undefined,
): Promise<AgentVersionDiff> {
  const target = await requireVersion(ctx, agentId, version);
  const base = against === undefined ? configOf(await requireAgent(ctx, agentId)) : (await requireVersion(ctx, agentId, against)).config;
  return { agentId, version, against: against ?? null, changes: diffOf(base, target.config) };
}

/**
 * The agent's current config becomes the version's, checked as an edit is (its knowledge bases
 * still exist, its model and speech can still run); nothing is published.
 */
export async function restoreVersion(ctx: TenantCtx, agentId: string, version: number): Promise<Agent> {
  const { config } = await requireVersion(ctx, agentId, version);
  return updateAgent(ctx, agentId, config);
}

/**
 * The agent a call converses as: the agent with the config of the version the call names (its
 * campaign pinned it, or its arm of an experiment), or as it is now when the call names none.
 * Undefined when the call has no agent (or it was deleted).
 */
export async function agentOfCall(
  ctx: TenantScope,
  call: { agent_id: string | null; agent_version?: number | null },
): Promise<Agent | undefined> {
  if (!call.agent_id) return undefined;
  const row = await repo.findAgent(ctx.db, ctx.tenantId, call.agent_id);
  if (!row) return undefined;
  const agent = toAgent(row);
  if (call.agent_version == null) return agent;
  // Versions are never deleted but with their agent: a version that is missing means a missing agent.
  const version = await repo.findVersion(ctx.db, ctx.tenantId, call.agent_id, call.agent_version);
  return version && { ...agent, ...version.config };
}
