/**
 * The tools a conversation runs for its model: the agent's built-in tools and its custom HTTP
 * tools. Every call's arguments are parsed and checked against the tool's JSON Schema before
 * anything runs; a refusal or a failure goes back to the model as the tool's answer (ok: false),
 * so it can say something sensible, and never ends the process or the call silently.
 */
import { storableText } from '../../platform/input.ts';
import { signedWebhookHeaders } from '../../platform/webhook-signature.ts';
import { tenantCtx, type Deps } from '../../platform/context.ts';
import { newId } from '../../platform/ids.ts';
import { safeFetch } from '../../platform/safe-fetch.ts';
import { compileArgumentsSchema } from '../../platform/validation.ts';
import type { ChatTool, ChatToolCall } from '../../providers/types.ts';
import * as agents from '../agents/service.ts';
import type { Agent, CustomTool } from '../agents/schemas.ts';
import * as calls from '../calls/service.ts';
import * as messaging from '../messaging/service.ts';
import type { Passage } from '../knowledge/service.ts';
import { CONTEXT_PASSAGES, passagesForModel, type Toolbox, type ToolResult } from './engine.ts';

const CUSTOM_TOOL_TIMEOUT_MS = 10_000;
const CUSTOM_TOOL_MAX_BYTES = 64 * 1024;
/** What the model reads of a custom tool's answer, at most. */
const CUSTOM_TOOL_MAX_CHARACTERS = 4000;

/** A tool's answer a test suite's scenario gives in place of the tool's own. */
export interface ToolMock {
  tool: string;
  /** Text, or an object sent as its JSON text. */
  answer: string | Record<string, unknown>;
  ok?: boolean;
}

/**
 * Where the conversation happens: a call (its outcomes are stored and announced), a test chat
 * (nothing leaves it), or a test suite's scenario (nothing leaves it either, and mocked tools
 * answer with the scenario's answers).
 */
export type Venue =
  { kind: 'call'; call: calls.CallRow } | { kind: 'chat'; chatId: string } | { kind: 'suite'; runId: string; mocks: readonly ToolMock[] };

/** Tools that end the conversation when they answer ok, mocked or not: the end is the engine's, not the tool's answer. */
const ENDS: Partial<Record<string, ToolResult['end']>> = { end_call: 'agent_ended', opt_out: 'opted_out', transfer_call: 'transferred' };

export interface ToolboxSetup {
  deps: Deps;
  tenantId: string;
  agent: Agent;
  venue: Venue;
  search(query: string): Promise<Passage[]>;
}

const refused = (content: string): ToolResult => ({ ok: false, content });

/** The tools this agent's model is offered, and how each runs. */
export function toolboxFor(setup: ToolboxSetup): Toolbox {
  const builtIns = agents.AGENT_TOOLS.filter((tool) => tool.alwaysOffered || setup.agent.tools.includes(tool.name));
  const custom = new Map(setup.agent.customTools.map((tool) => [tool.name, tool]));
  const schemas = new Map<string, Record<string, unknown>>([
    ...builtIns.map((tool) => [tool.name, tool.parameters] as const),
    ...setup.agent.customTools.map((tool) => [tool.name, tool.parameters] as const),
  ]);
  const definitions: ChatTool[] = [
    ...builtIns.map(({ name, description, parameters }) => ({ name, description, parameters })),
    ...setup.agent.customTools.map(({ name, description, parameters }) => ({ name, description, parameters })),
  ];

  async function run(call: ChatToolCall): Promise<ToolResult> {
    const schema = schemas.get(call.name);
    if (!schema) return refused(`There is no tool named ${call.name}; use one of: ${[...schemas.keys()].join(', ') || 'none'}.`);
    let args: unknown;
    try {
      args = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
    } catch {
      return refused(`The arguments of ${call.name} are not valid JSON; send a JSON object.`);
    }
    const problem = compileArgumentsSchema(schema)(args);
    if (problem) return refused(`Invalid arguments for ${call.name}: ${problem}.`);
    if (setup.venue.kind === 'suite') {
      const mock = setup.venue.mocks.find((candidate) => candidate.tool === call.name);
      if (mock) {
        const ok = mock.ok ?? true;
        const content = typeof mock.answer === 'string' ? mock.answer : JSON.stringify(mock.answer);
        return { ok, content, ...(ok && ENDS[call.name] ? { end: ENDS[call.name] } : {}) };
      }
      if (custom.has(call.name)) return refused(`${call.name} is not mocked in this test scenario; nothing was called.`);
    }
    try {
      const customTool = custom.get(call.name);
      if (customTool) return await callCustomTool(setup, customTool, call.id, args as Record<string, unknown>);
      return await runBuiltIn(setup, call.name, call.id, args as Record<string, unknown>);
    } catch (error) {
      return refused(`${call.name} failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  return { definitions, run };
}

async function runBuiltIn(setup: ToolboxSetup, name: string, toolCallId: string, args: Record<string, unknown>): Promise<ToolResult> {
  const { venue } = setup;
  const aTest = venue.kind === 'chat' ? 'A test chat' : 'A test scenario';
  switch (name) {
    case 'end_call':
      return { ok: true, content: 'The call ends after this turn.', end: 'agent_ended' };
    case 'opt_out':
      // The number goes on the do-not-call list as the call ends with this reason (endCallConversation).
      if (venue.kind !== 'call')
        return {
          ok: true,
          content: `${aTest} lists no one; on a call the person would now be on the do-not-call list.`,
          end: 'opted_out',
        };
      return { ok: true, content: 'The person is on the do-not-call list; the call ends after this turn.', end: 'opted_out' };
    case 'knowledge_search': {
      const passages = (await setup.search(String(args.query))).slice(0, CONTEXT_PASSAGES);
      if (passages.length === 0) return { ok: true, content: 'Nothing in the knowledge bases matches.' };
      return { ok: true, content: passagesForModel(passages), sources: passages };
    }
    case 'transfer_call': {
      const to = setup.agent.transferNumber;
      if (!to) return refused('No transfer number is configured for this agent; offer that someone will call back instead.');
      const data = { to, reason: args.reason ?? null, summary: args.summary ?? null };
      await recordOutcome(setup, { type: 'transfer', toolCallId, data });
      return { ok: true, content: `Transferring the caller to ${to}.`, end: 'transferred' };
    }
    case 'book_appointment': {
      const start = new Date(String(args.start));
      if (Number.isNaN(start.getTime())) return refused('Invalid arguments for book_appointment: start is not a real instant.');
      const data = { start: start.toISOString(), durationMinutes: args.durationMinutes ?? null, notes: args.notes ?? null };
      await recordOutcome(setup, { type: 'appointment', toolCallId, data }, 'appointment.booked');
      return {
        ok: true,
        content: `Booked for ${data.start}${venue.kind === 'call' ? '' : venue.kind === 'chat' ? ' (a test chat: recorded in the chat only)' : ' (a test scenario: recorded in its transcript only)'}.`,
      };
    }
    case 'send_sms':
    case 'send_whatsapp': {
      const label = name === 'send_sms' ? 'SMS' : 'WhatsApp message';
      if (venue.kind !== 'call') return { ok: true, content: `${aTest} sends nothing; the ${label} would say: ${String(args.text)}` };
      const ctx = tenantCtx(setup.deps, setup.tenantId);
      const channel = name === 'send_sms' ? 'SMS' : 'WHATSAPP';
      const { to, created } = await messaging.sendDuringCall(ctx, { call: venue.call, channel, text: String(args.text), toolCallId });
      return { ok: true, content: created ? `The ${label} is on its way to ${to}.` : `The ${label} was already sent to ${to}.` };
    }
    case 'press_digits': {
      const digits = String(args.digits);
      if (venue.kind !== 'call') return { ok: true, content: `${aTest} presses nothing; on a call the menu would hear ${digits}.` };
      const pressed = await calls.pressKeys(tenantCtx(setup.deps, setup.tenantId), venue.call.id, digits);
      if (!pressed) return refused("This call's line cannot press keys; end the call instead.");
      return { ok: true, content: `Pressed ${digits}. Listen for what the menu says next.` };
    }
    case 'collect_payment_promise': {
      const data = { amount: args.amount, currency: args.currency ?? null, date: args.date, notes: args.notes ?? null };
      await recordOutcome(setup, { type: 'payment_promise', toolCallId, data }, 'payment_promise.recorded');
      return {
        ok: true,
        content: `Recorded a promise to pay ${String(args.amount)}${args.currency ? ` ${String(args.currency)}` : ''} on ${String(args.date)}.`,
      };
    }
  }
  return refused(`${name} cannot run here.`);
}

/** On a call the outcome is stored once per tool call and announced; a test keeps it to its transcript. */
async function recordOutcome(
  setup: ToolboxSetup,
  outcome: { type: calls.CallOutcomeRecord['type']; toolCallId: string; data: Record<string, unknown> },
  event?: 'appointment.booked' | 'payment_promise.recorded',
): Promise<void> {
  if (setup.venue.kind !== 'call') return;
  const ctx = tenantCtx(setup.deps, setup.tenantId);
  await calls.recordOutcome(ctx, setup.venue.call, { ...outcome, at: ctx.clock.now().toISOString() }, event);
}

/**
 * A tenant's HTTP tool: the arguments POSTed to its URL through the client that refuses private
 * addresses, signed the Standard Webhooks way with the agent's tool signing secret, within a timeout.
 */
async function callCustomTool(
  setup: ToolboxSetup,
  tool: CustomTool,
  toolCallId: string,
  args: Record<string, unknown>,
): Promise<ToolResult> {
  const { deps, venue } = setup;
  const secret = await agents.toolSigningSecret(tenantCtx(deps, setup.tenantId), setup.agent.id);
  if (!secret) return refused(`${tool.name} cannot be signed: the agent has no tool signing secret.`);
  const body = JSON.stringify({
    tool: tool.name,
    toolCallId,
    arguments: args,
    agentId: setup.agent.id,
    ...(venue.kind === 'call'
      ? { callId: venue.call.id, campaignId: venue.call.campaign_id, contactId: venue.call.contact_id, test: false }
      : venue.kind === 'chat'
        ? { chatId: venue.chatId, test: true }
        : { testSuiteRunId: venue.runId, test: true }),
  });
  const id = `msg_${newId()}`;
  const at = deps.clock.now();
  const response = await safeFetch(tool.url, {
    allowPrivate: deps.config.allowPrivateUrls,
    method: 'POST',
    headers: signedWebhookHeaders(secret, id, at, body, 'callforge-tools/1'),
    body,
    timeoutMs: CUSTOM_TOOL_TIMEOUT_MS,
    maxBytes: CUSTOM_TOOL_MAX_BYTES,
  });
  // Cleaned after the cut, which may fall between the halves of a surrogate pair.
  const text = storableText(response.body.toString('utf8').slice(0, CUSTOM_TOOL_MAX_CHARACTERS));
  if (response.status < 200 || response.status >= 300) return refused(`${tool.name} answered HTTP ${response.status}: ${text}`);
  return { ok: true, content: text || '(no content)' };
}
