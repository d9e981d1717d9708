import { signedWebhookHeaders } from '../../platform/webhook-signature.ts';
import { tenantCtx, type Deps } from '../../platform/context.ts';
import { newId } from '../../platform/ids.ts';
import { safeFetch } from '../../platform/safe-fetch.ts';
import { storableText } from '../../platform/input.ts';
import * as agents from '../agents/service.ts';
import { isInsideCallWindow, windowOf } from './call-window.ts';
import * as repo from './repo.ts';

/**
 * The pre-dial webhook: before a contact's attempt is claimed, the campaign's server is asked
 * whether to call and with which variables. Asked outside any transaction (the request may take up
 * to its timeout), and its answer recorded on the contact for that attempt: `skip` ends the contact
 * SKIPPED (`pre_dial_skip`), `call` lets the dialer claim it, its variables filling the agent's
 * `{{variables.*}}` on that call. A timeout, an error or an unreadable answer means the campaign's
 * onError. Signed the Standard Webhooks way with the agent's tool signing secret, like its custom tools.
 */
const MAX_ANSWER_BYTES = 16 * 1024;
const MAX_VARIABLES = 50;

type Verdict = { action: 'call'; variables: Record<string, string> } | { action: 'skip' };

/** The answer `{action: "call" | "skip", variables?: {name: string | number | boolean}}`, or undefined when it is not one. */
function verdictOf(text: string): Verdict | undefined {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof body !== 'object' || body === null) return undefined;
  const { action, variables } = body as { action?: unknown; variables?: unknown };
  if (action === 'skip') return { action: 'skip' };
  if (action !== 'call') return undefined;
  if (variables === undefined || variables === null) return { action: 'call', variables: {} };
  if (typeof variables !== 'object' || Array.isArray(variables)) return undefined;
  const entries = Object.entries(variables as Record<string, unknown>);
  if (entries.length > MAX_VARIABLES) return undefined;
  const kept: Record<string, string> = {};
  for (const [name, value] of entries) {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(name)) return undefined;
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') return undefined;
    kept[name] = storableText(String(value).slice(0, 1000));
  }
  return { action: 'call', variables: kept };
}

/** Asks the campaign's webhook about its due contacts not yet asked for their next attempt; returns how many answers it recorded. */
export async function askPreDial(deps: Deps, tenantId: string, campaignId: string, now: Date): Promise<number> {
  const ctx = tenantCtx(deps, tenantId);
  const campaign = await repo.findCampaign(ctx.db, tenantId, campaignId);
  const hook = campaign?.pre_dial_webhook;
  if (!campaign || !hook || campaign.status !== 'RUNNING' || !campaign.agent_id || !isInsideCallWindow(now, windowOf(campaign))) return 0;
  const waiting = await repo.awaitingPreDial(ctx.db, tenantId, campaignId, now, campaign.max_concurrent_calls);
  if (waiting.length === 0) return 0;
  const secret = await agents.toolSigningSecret(ctx, campaign.agent_id);
  const ask = async (contact: repo.PreDialCandidate): Promise<Verdict> => {
    const fallback: Verdict = hook.onError === 'SKIP' ? { action: 'skip' } : { action: 'call', variables: {} };
    if (!secret) return fallback;
    const attempt = contact.attempts + 1;
    const body = JSON.stringify({
      type: 'campaign.pre_dial',
      campaign: { id: campaign.id, name: campaign.name, agentId: campaign.agent_id },
      contact: {
        id: contact.contact_id,
        phoneNumber: contact.phone_number,
        name: contact.name,
        email: contact.email,
        metadata: contact.metadata,
      },
      attempt,
    });
    const id = `msg_${newId()}`;
    const at = deps.clock.now();
    try {
      const response = await safeFetch(hook.url, {
        allowPrivate: deps.config.allowPrivateUrls,
        method: 'POST',
        headers: signedWebhookHeaders(secret, id, at, body, 'callforge-pre-dial/1'),
        body,
        timeoutMs: hook.timeoutMs,
        maxBytes: MAX_ANSWER_BYTES,
      });
      if (response.status < 200 || response.status >= 300) return fallback;
      return verdictOf(response.body.toString('utf8')) ?? fallback;
    } catch {
      return fallback;
    }
  };
  const verdicts = await Promise.all(waiting.map(async (contact) => ({ contact, verdict: await ask(contact) })));
  const skipped = verdicts.filter(({ verdict }) => verdict.action === 'skip').map(({ contact }) => contact.contact_id);
  if (skipped.length > 0) await repo.skipContacts(ctx.db, tenantId, campaignId, skipped, 'pre_dial_skip');
  for (const { contact, verdict } of verdicts)
    if (verdict.action === 'call')
      await repo.recordPreDialCall(ctx.db, tenantId, campaignId, contact.contact_id, contact.attempts + 1, verdict.variables);
  return verdicts.length;
}
