import { insertValues, updateSet, type Queryable } from '../../platform/db.ts';
import { selectPage, type Page } from '../../platform/pagination.ts';
import type { Channel, MessageStatus, SmsTemplate, TemplateMapping } from './schemas.ts';

/** The tables this module owns: only its SQL touches them (scripts/check-table-ownership.ts holds it to that). */
export const OWNED_TABLES = [
  'whatsapp_campaigns',
  'sms_campaigns',
  'whatsapp_webhook_tokens',
  'messages',
  'messaging_settings',
  'opt_out_confirmations',
] as const;

// ---------------------------------------------------------------------------------------------
// WhatsApp and SMS campaigns: one table each, same shape of statements.

export interface WhatsAppCampaignRow {
  tenant_id: string;
  id: string;
  agent_id: string;
  name: string;
  phone_number_id: string | null;
  is_active: boolean;
  templates: TemplateMapping[];
  created_at: Date;
  updated_at: Date;
}

export interface SmsCampaignRow {
  tenant_id: string;
  id: string;
  agent_id: string;
  name: string;
  sender_number: string;
  sender_provider: string;
  is_active: boolean;
  templates: SmsTemplate[];
  created_at: Date;
  updated_at: Date;
}

export type CampaignTable = 'whatsapp_campaigns' | 'sms_campaigns';
type RowOf<T extends CampaignTable> = T extends 'whatsapp_campaigns' ? WhatsAppCampaignRow : SmsCampaignRow;

// Template lists are jsonb, not SQL arrays.
const toSql = (values: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(values).map(([column, value]) => [column, Array.isArray(value) ? JSON.stringify(value) : value]));

/** Inserts a campaign from column values (never user-chosen column names). */
export async function insertCampaign<T extends CampaignTable>(db: Queryable, table: T, values: Record<string, unknown>): Promise<RowOf<T>> {
  const { columns, placeholders, params } = insertValues(toSql(values));
  const { rows } = await db.query<RowOf<T>>(`INSERT INTO ${table} (${columns}) VALUES (${placeholders}) RETURNING *`, params);
  return rows[0]!;
}

export async function updateCampaign<T extends CampaignTable>(
  db: Queryable,
  table: T,
  tenantId: string,
  id: string,
  values: Record<string, unknown>,
): Promise<RowOf<T> | undefined> {
  const { set, params } = updateSet(toSql(values), 2);
  const { rows } = await db.query<RowOf<T>>(`UPDATE ${table} SET ${set} WHERE tenant_id = $1 AND id = $2 RETURNING *`, [
    tenantId,
    id,
    ...params,
  ]);
  return rows[0];
}

export async function findCampaign<T extends CampaignTable>(
  db: Queryable,
  table: T,
  tenantId: string,
  id: string,
): Promise<RowOf<T> | undefined> {
  const { rows } = await db.query<RowOf<T>>(`SELECT * FROM ${table} WHERE tenant_id = $1 AND id = $2`, [tenantId, id]);
  return rows[0];
}

export async function campaignOfAgent<T extends CampaignTable>(
  db: Queryable,
  table: T,
  tenantId: string,
  agentId: string,
): Promise<RowOf<T> | undefined> {
  const { rows } = await db.query<RowOf<T>>(`SELECT * FROM ${table} WHERE tenant_id = $1 AND agent_id = $2`, [tenantId, agentId]);
  return rows[0];
}

/** campaignOfAgent of several agents in one statement, in order. */
export async function campaignsOfAgents<T extends CampaignTable>(
  db: Queryable,
  table: T,
  tenantId: string,
  agentIds: string[],
): Promise<(RowOf<T> | undefined)[]> {
  const { rows } = await db.query<RowOf<T>>(`SELECT * FROM ${table} WHERE tenant_id = $1 AND agent_id = ANY($2::uuid[])`, [
    tenantId,
    agentIds,
  ]);
  const byAgent = new Map(rows.map((row) => [row.agent_id, row]));
  return agentIds.map((agentId) => byAgent.get(agentId));
}

export async function listCampaigns<T extends CampaignTable>(
  db: Queryable,
  table: T,
  tenantId: string,
  agentId: string | undefined,
  page: Page,
): Promise<{ rows: RowOf<T>[]; total: number }> {
  const where = 'tenant_id = $1 AND ($2::uuid IS NULL OR agent_id = $2)';
  return selectPage<RowOf<T>>(
    db,
    {
      rows: `SELECT * FROM ${table} WHERE ${where} ORDER BY created_at DESC, id DESC`,
      total: `SELECT count(*)::int AS n FROM ${table} WHERE ${where}`,
      params: [tenantId, agentId ?? null],
    },
    page,
  );
}

export async function deleteCampaign(db: Queryable, table: CampaignTable, tenantId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM ${table} WHERE tenant_id = $1 AND id = $2`, [tenantId, id]);
  return rowCount === 1;
}

// ---------------------------------------------------------------------------------------------
// Webhook tokens.

/** The tenant's token: the one stored, or `candidate` stored now (one statement, so concurrent calls agree). */
export async function webhookToken(db: Queryable, tenantId: string, candidate: string): Promise<{ token: string; created: boolean }> {
  // DO UPDATE (to itself) returns the row a concurrent first call inserted; xmax = 0 only on an insert.
  const { rows } = await db.query<{ token: string; created: boolean }>(
    `INSERT INTO whatsapp_webhook_tokens (tenant_id, token) VALUES ($1, $2)
     ON CONFLICT (tenant_id) DO UPDATE SET token = whatsapp_webhook_tokens.token
     RETURNING token, (xmax = 0) AS created`,
    [tenantId, candidate],
  );
  return rows[0]!;
}

export async function tokenExists(db: Queryable, token: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM whatsapp_webhook_tokens WHERE token = $1', [token]);
  return rowCount > 0;
}

// ---------------------------------------------------------------------------------------------
// Messages.

export interface MessageRow {
  tenant_id: string;
  id: string;
  channel: Channel;
  call_id: string;
  agent_id: string | null;
  campaign_id: string | null;
  contact_id: string | null;
  to_number: string;
  sender: string | null;
  provider: string;
  template_name: string | null;
  language_code: string | null;
  body: string | null;
  parameters: string[];
  dlt_sender_id: string | null;
  dlt_template_id: string | null;
  encoding: string | null;
  segments: number | null;
  status: MessageStatus;
  provider_message_id: string | null;
  failure_reason: string | null;
  attempts: number;
  sent_at: Date | null;
  delivered_at: Date | null;
  read_at: Date | null;
  failed_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export type NewMessage = Pick<
  MessageRow,
  | 'id'
  | 'channel'
  | 'call_id'
  | 'agent_id'
  | 'campaign_id'
  | 'contact_id'
  | 'to_number'
  | 'sender'
  | 'provider'
  | 'template_name'
  | 'language_code'
  | 'body'
  | 'parameters'
  | 'dlt_sender_id'
  | 'dlt_template_id'
  | 'encoding'
  | 'segments'
>;

/** Records the messages a call decided; a channel already recorded for the call is left alone. Returns the new ids. */
export async function insertMessages(db: Queryable, tenantId: string, messages: NewMessage[]): Promise<string[]> {
  if (messages.length === 0) return [];
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO messages (tenant_id, id, channel, call_id, agent_id, campaign_id, contact_id, to_number, sender, provider, template_name, language_code, body,
                           parameters, dlt_sender_id, dlt_template_id, encoding, segments, status)
     SELECT $1, m.id, m.channel, m.call_id, m.agent_id, m.campaign_id, m.contact_id, m.to_number, m.sender, m.provider, m.template_name, m.language_code, m.body,
            coalesce(m.parameters, '[]'), m.dlt_sender_id, m.dlt_template_id, m.encoding, m.segments, 'QUEUED'
     FROM jsonb_to_recordset($2::jsonb) AS m(id uuid, channel text, call_id uuid, agent_id uuid, campaign_id uuid, contact_id uuid, to_number text, sender text,
       provider text, template_name text, language_code text, body text, parameters jsonb, dlt_sender_id text, dlt_template_id text, encoding text, segments int)
     ON CONFLICT (tenant_id, call_id, channel) WHERE tool_call_id IS NULL DO NOTHING
     RETURNING id`,
    [tenantId, JSON.stringify(messages)],
  );
  return rows.map((row) => row.id);
}

/**
 * Records a message a tool call of a conversation sends; a second record of the same tool call
 * (a retried step) is refused. Returns the message's id and whether this call created it.
 */
export async function insertToolMessage(
  db: Queryable,
  tenantId: string,
  message: NewMessage & { tool_call_id: string },
): Promise<{ id: string; created: boolean }> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO messages (tenant_id, id, channel, call_id, agent_id, campaign_id, contact_id, to_number, sender, provider, body, parameters,
                           encoding, segments, tool_call_id, status)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, '[]', $12, $13, $14, 'QUEUED')
     ON CONFLICT (tenant_id, call_id, tool_call_id) WHERE tool_call_id IS NOT NULL DO NOTHING
     RETURNING id`,
    [
      tenantId,
      message.id,
      message.channel,
      message.call_id,
      message.agent_id,
      message.campaign_id,
      message.contact_id,
      message.to_number,
      message.sender,
      message.provider,
      message.body,
      message.encoding,
      message.segments,
      message.tool_call_id,
    ],
  );
  if (rows[0]) return { id: rows[0].id, created: true };
  const existing = await db.query<{ id: string }>('SELECT id FROM messages WHERE tenant_id = $1 AND call_id = $2 AND tool_call_id = $3', [
    tenantId,
    message.call_id,
    message.tool_call_id,
  ]);
  return { id: existing.rows[0]!.id, created: false };
}

export async function findMessage(db: Queryable, tenantId: string, id: string): Promise<MessageRow | undefined> {
  const { rows } = await db.query<MessageRow>('SELECT * FROM messages WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
  return rows[0];
}

/** QUEUED → SENDING, counted as an attempt and committed before the provider is asked. */
export async function claimForSending(db: Queryable, tenantId: string, id: string): Promise<MessageRow | undefined> {
  return (await claimManyForSending(db, tenantId, [id]))[0];
}

/** claimForSending of several messages in one statement; the claimed row of each id, in order (undefined: not QUEUED). */
export async function claimManyForSending(db: Queryable, tenantId: string, ids: string[]): Promise<(MessageRow | undefined)[]> {
  const { rows } = await db.query<MessageRow>(
    `UPDATE messages SET status = 'SENDING', attempts = attempts + 1, updated_at = now()
     WHERE tenant_id = $1 AND id = ANY($2::uuid[]) AND status = 'QUEUED' RETURNING *`,
    [tenantId, ids],
  );
  const byId = new Map(rows.map((row) => [row.id, row]));
  return ids.map((id) => byId.get(id));
}

export interface Sent {
  id: string;
  providerMessageId: string;
  at: Date;
}

/** Records what providers took, several messages in one statement. */
export async function markSent(db: Queryable, tenantId: string, sent: Sent[]): Promise<void> {
  // A delivery callback may have arrived first (reconciled by our id); never move a status back.
  await db.query(
    `UPDATE messages m SET provider_message_id = s.provider_message_id, sent_at = coalesce(m.sent_at, s.at), failure_reason = NULL,
       updated_at = now(), status = CASE WHEN m.status IN ('DELIVERED', 'READ') THEN m.status ELSE 'SENT' END
     FROM unnest($2::uuid[], $3::text[], $4::timestamptz[]) AS s (id, provider_message_id, at)
     WHERE m.tenant_id = $1 AND m.id = s.id`,
    [tenantId, sent.map((one) => one.id), sent.map((one) => one.providerMessageId), sent.map((one) => one.at)],
  );
}

export async function markFailed(db: Queryable, tenantId: string, id: string, reason: string, at: Date): Promise<void> {
  await db.query(
    `UPDATE messages SET status = 'FAILED', failure_reason = $3, failed_at = $4, updated_at = now() WHERE tenant_id = $1 AND id = $2 AND status IN ('QUEUED', 'SENDING')`,
    [tenantId, id, reason, at],
  );
}

export type UnconfirmedPolicy = 'FAIL' | 'RESEND';

/** The tenant's policy for messages left SENDING by a worker that died; FAIL when never set. */
export async function unconfirmedPolicy(db: Queryable, tenantId: string): Promise<UnconfirmedPolicy> {
  const { rows } = await db.query<{ unconfirmed_policy: UnconfirmedPolicy }>(
    'SELECT unconfirmed_policy FROM messaging_settings WHERE tenant_id = $1',
    [tenantId],
  );
  return rows[0]?.unconfirmed_policy ?? 'FAIL';
}

export async function setUnconfirmedPolicy(db: Queryable, tenantId: string, policy: UnconfirmedPolicy): Promise<void> {
  await db.query(
    `INSERT INTO messaging_settings (tenant_id, unconfirmed_policy) VALUES ($1, $2)
     ON CONFLICT (tenant_id) DO UPDATE SET unconfirmed_policy = EXCLUDED.unconfirmed_policy, updated_at = now()`,
    [tenantId, policy],
  );
}

/** SENDING → QUEUED after a provider error worth retrying. */
export async function requeue(db: Queryable, tenantId: string, id: string, reason: string): Promise<void> {
  await db.query(
    `UPDATE messages SET status = 'QUEUED', failure_reason = $3, updated_at = now() WHERE tenant_id = $1 AND id = $2 AND status = 'SENDING'`,
    [tenantId, id, reason],
  );
}

const STATUS_RANK: Record<string, number> = { QUEUED: 0, SENDING: 1, SENT: 2, DELIVERED: 3, READ: 4, FAILED: 5 };

/**
 * A provider's delivery status for its message id, or for our id when the send's answer was never
 * recorded (a worker that died mid-send). Statuses only move forward: a late `sent` after `read`
 * changes nothing. Returns whether a message changed.
 */
export async function recordDeliveryStatus(
  db: Queryable,
  tenantId: string,
  provider: string,
  ids: { providerMessageId: string; ourId: string | null },
  status: 'SENT' | 'DELIVERED' | 'READ' | 'FAILED',
  at: Date,
  reason: string | null,
): Promise<boolean> {
  const column = { SENT: 'sent_at', DELIVERED: 'delivered_at', READ: 'read_at', FAILED: 'failed_at' }[status];
  const { rowCount } = await db.query(
    `UPDATE messages SET status = $5, ${column} = coalesce(${column}, $6), provider_message_id = $3,
       failure_reason = CASE WHEN $5 = 'FAILED' THEN $7 ELSE failure_reason END, updated_at = now()
     WHERE tenant_id = $1 AND provider = $2 AND (provider_message_id = $3 OR (provider_message_id IS NULL AND id = $4::uuid))
       AND ((CASE status ${Object.entries(STATUS_RANK)
         .map(([name, rank]) => `WHEN '${name}' THEN ${rank}`)
         .join(' ')} END) < $8
            -- Failed for want of the provider's answer, yet the provider reports it: it was sent.
            OR (status = 'FAILED' AND provider_message_id IS NULL))`,
    [tenantId, provider, ids.providerMessageId, ids.ourId, status, at, reason, STATUS_RANK[status]],
  );
  return rowCount > 0;
}

export interface MessageFilter {
  channel?: Channel;
  callId?: string;
  status?: MessageStatus;
}

export async function listMessages(
  db: Queryable,
  tenantId: string,
  filter: MessageFilter,
  page: Page,
): Promise<{ rows: MessageRow[]; total: number }> {
  const where =
    'tenant_id = $1 AND ($2::text IS NULL OR channel = $2) AND ($3::uuid IS NULL OR call_id = $3) AND ($4::text IS NULL OR status = $4)';
  const params = [tenantId, filter.channel ?? null, filter.callId ?? null, filter.status ?? null];
  return selectPage<MessageRow>(
    db,
    {
      rows: `SELECT * FROM messages WHERE ${where} ORDER BY created_at DESC, id DESC`,
      total: `SELECT count(*)::int AS n FROM messages WHERE ${where}`,
      params,
    },
    page,
  );
}

// ---------------------------------------------------------------------------------------------
// Opt-out confirmations: at most one per number and tenant, ever.

export interface OptOutConfirmationSettings {
  enabled: boolean;
  text: string | null;
  dltSenderId: string | null;
  dltTemplateId: string | null;
}

export async function optOutConfirmationSettings(db: Queryable, tenantId: string): Promise<OptOutConfirmationSettings> {
  const { rows } = await db.query<{ enabled: boolean; text: string | null; dlt_sender_id: string | null; dlt_template_id: string | null }>(
    `SELECT opt_out_confirmation_enabled AS enabled, opt_out_confirmation_text AS text,
       opt_out_confirmation_dlt_sender_id AS dlt_sender_id, opt_out_confirmation_dlt_template_id AS dlt_template_id
     FROM messaging_settings WHERE tenant_id = $1`,
    [tenantId],
  );
  const row = rows[0];
  return {
    enabled: row?.enabled ?? true,
    text: row?.text ?? null,
    dltSenderId: row?.dlt_sender_id ?? null,
    dltTemplateId: row?.dlt_template_id ?? null,
  };
}

export async function setOptOutConfirmationSettings(db: Queryable, tenantId: string, settings: OptOutConfirmationSettings): Promise<void> {
  await db.query(
    `INSERT INTO messaging_settings (tenant_id, opt_out_confirmation_enabled, opt_out_confirmation_text,
       opt_out_confirmation_dlt_sender_id, opt_out_confirmation_dlt_template_id) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (tenant_id) DO UPDATE SET opt_out_confirmation_enabled = $2, opt_out_confirmation_text = $3,
       opt_out_confirmation_dlt_sender_id = $4, opt_out_confirmation_dlt_template_id = $5, updated_at = now()`,
    [tenantId, settings.enabled, settings.text, settings.dltSenderId, settings.dltTemplateId],
  );
}

export interface OptOutConfirmationRow {
  phone_number: string;
  channel: Channel;
  provider: string;
  sender: string | null;
  body: string;
  dlt_sender_id: string | null;
  dlt_template_id: string | null;
  status: 'QUEUED' | 'SENDING' | 'SENT' | 'FAILED';
  attempts: number;
  provider_message_id: string | null;
  failure_reason: string | null;
}

/** Records the confirmation of a number unless it has one; whether this added it. */
export async function insertOptOutConfirmation(
  db: Queryable,
  tenantId: string,
  row: Pick<OptOutConfirmationRow, 'phone_number' | 'channel' | 'provider' | 'sender' | 'body' | 'dlt_sender_id' | 'dlt_template_id'>,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO opt_out_confirmations (tenant_id, phone_number, channel, provider, sender, body, dlt_sender_id, dlt_template_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (tenant_id, phone_number) DO NOTHING`,
    [tenantId, row.phone_number, row.channel, row.provider, row.sender, row.body, row.dlt_sender_id, row.dlt_template_id],
  );
  return rowCount === 1;
}

export async function findOptOutConfirmation(db: Queryable, tenantId: string, phoneNumber: string) {
  const { rows } = await db.query<OptOutConfirmationRow>('SELECT * FROM opt_out_confirmations WHERE tenant_id = $1 AND phone_number = $2', [
    tenantId,
    phoneNumber,
  ]);
  return rows[0];
}

export async function claimOptOutConfirmation(db: Queryable, tenantId: string, phoneNumber: string) {
  const { rows } = await db.query<OptOutConfirmationRow>(
    `UPDATE opt_out_confirmations SET status = 'SENDING', attempts = attempts + 1, updated_at = now()
     WHERE tenant_id = $1 AND phone_number = $2 AND status = 'QUEUED' RETURNING *`,
    [tenantId, phoneNumber],
  );
  return rows[0];
}

/** SENDING → SENT, FAILED or (a retryable provider error) QUEUED. */
export async function settleOptOutConfirmation(
  db: Queryable,
  tenantId: string,
  phoneNumber: string,
  result: { status: 'SENT' | 'FAILED' | 'QUEUED'; providerMessageId?: string; failureReason?: string },
): Promise<void> {
  await db.query(
    `UPDATE opt_out_confirmations SET status = $3, provider_message_id = $4, failure_reason = $5, updated_at = now()
     WHERE tenant_id = $1 AND phone_number = $2 AND status = 'SENDING'`,
    [tenantId, phoneNumber, result.status, result.providerMessageId ?? null, result.failureReason ?? null],
  );
}
