import { updateSet, type Queryable } from '../../platform/db.ts';
import { selectPage, type Page } from '../../platform/pagination.ts';
import type {
  AgentConfig,
  AgentLlm,
  AgentRecording,
  AgentStt,
  AgentTts,
  CustomTool,
  StoredBackup,
  StoredRealtime,
  VoicePipeline,
  VoiceProvider,
} from './schemas.ts';

/** The tables this module owns: only its SQL touches them (scripts/check-table-ownership.ts holds it to that). */
export const OWNED_TABLES = ['agents', 'voice_numbers', 'agent_versions'] as const;

export interface AgentRow {
  id: string;
  tenant_id: string;
  name: string;
  description: string | null;
  language: string;
  voice: string | null;
  system_prompt: string | null;
  first_message: string | null;
  knowledge_base_ids: string[];
  tools: string[];
  custom_tools: CustomTool[];
  llm: AgentLlm | null;
  realtime: StoredRealtime | null;
  stt: AgentStt | null;
  tts: AgentTts;
  backup: StoredBackup | null;
  voice_pipeline: VoicePipeline;
  knowledge_in_context: boolean;
  transfer_number: string | null;
  recording: AgentRecording;
  tool_secret_sealed: string | null;
  metadata: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

export interface VoiceNumberRow {
  id: string;
  tenant_id: string;
  phone_number: string;
  provider: VoiceProvider;
  label: string | null;
  inbound_agent_id: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface AgentFields {
  name: string;
  description: string | null;
  language: string;
  voice: string | null;
  systemPrompt: string | null;
  firstMessage: string | null;
  knowledgeBaseIds: string[];
  tools: string[];
  customTools: CustomTool[];
  llm: AgentLlm | null;
  realtime: StoredRealtime | null;
  stt: AgentStt | null;
  tts: AgentTts;
  backup: StoredBackup | null;
  voicePipeline: VoicePipeline;
  knowledgeInContext: boolean;
  transferNumber: string | null;
  recording: AgentRecording;
  metadata: Record<string, unknown>;
}

const AGENT_COLUMNS =
  'id, tenant_id, name, description, language, voice, system_prompt, first_message, knowledge_base_ids, tools, custom_tools, llm, realtime, stt, tts, backup, voice_pipeline, knowledge_in_context, transfer_number, recording, tool_secret_sealed, metadata, created_at, updated_at';
const NUMBER_COLUMNS = 'id, tenant_id, phone_number, provider, label, inbound_agent_id, created_at, updated_at';

const likePattern = (search: string | undefined) => (search ? `%${search.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : null);

export async function insertAgent(
  db: Queryable,
  tenantId: string,
  agent: AgentFields & { id: string; toolSecretSealed: string },
): Promise<AgentRow> {
  const { rows } = await db.query<AgentRow>(
    `INSERT INTO agents (tenant_id, id, name, description, language, voice, system_prompt, first_message, knowledge_base_ids, tools, metadata,
                         custom_tools, llm, knowledge_in_context, transfer_number, tool_secret_sealed, stt, tts, recording, voice_pipeline, realtime, backup)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::uuid[], $10::text[], $11::jsonb, $12::jsonb, $13::jsonb, $14, $15, $16, $17::jsonb, $18::jsonb, $19::jsonb, $20, $21::jsonb, $22::jsonb)
     RETURNING ${AGENT_COLUMNS}`,
    [
      tenantId,
      agent.id,
      agent.name,
      agent.description,
      agent.language,
      agent.voice,
      agent.systemPrompt,
      agent.firstMessage,
      agent.knowledgeBaseIds,
      agent.tools,
      JSON.stringify(agent.metadata),
      JSON.stringify(agent.customTools),
      agent.llm && JSON.stringify(agent.llm),
      agent.knowledgeInContext,
      agent.transferNumber,
      agent.toolSecretSealed,
      agent.stt && JSON.stringify(agent.stt),
      JSON.stringify(agent.tts),
      JSON.stringify(agent.recording),
      agent.voicePipeline,
      agent.realtime && JSON.stringify(agent.realtime),
      agent.backup && JSON.stringify(agent.backup),
    ],
  );
  return rows[0]!;
}

export async function findAgent(db: Queryable, tenantId: string, agentId: string, forUpdate = false): Promise<AgentRow | undefined> {
  const { rows } = await db.query<AgentRow>(
    `SELECT ${AGENT_COLUMNS} FROM agents WHERE tenant_id = $1 AND id = $2${forUpdate ? ' FOR UPDATE' : ''}`,
    [tenantId, agentId],
  );
  return rows[0];
}

/** Several agents in one statement, by id. */
export async function findAgents(db: Queryable, tenantId: string, agentIds: string[]): Promise<Map<string, AgentRow>> {
  const { rows } = await db.query<AgentRow>(`SELECT ${AGENT_COLUMNS} FROM agents WHERE tenant_id = $1 AND id = ANY($2::uuid[])`, [
    tenantId,
    agentIds,
  ]);
  return new Map(rows.map((row) => [row.id, row]));
}

export async function agentExists(db: Queryable, tenantId: string, agentId: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM agents WHERE tenant_id = $1 AND id = $2', [tenantId, agentId]);
  return rowCount === 1;
}

/** Locks the agent until the transaction ends: a campaign cannot take it up meanwhile (its foreign key waits). */
export async function lockAgent(db: Queryable, tenantId: string, agentId: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM agents WHERE tenant_id = $1 AND id = $2 FOR UPDATE', [tenantId, agentId]);
  return rowCount === 1;
}

/** Whether the tenant whose id is the SQL expression `tenant` has an agent: a condition for a statement that asks several modules at once. */
export const tenantHasAgent = (tenant: string) => `EXISTS (SELECT 1 FROM agents WHERE tenant_id = ${tenant})`;

export async function listAgents(
  db: Queryable,
  tenantId: string,
  search: string | undefined,
  page: Page,
): Promise<{ rows: AgentRow[]; total: number }> {
  const pattern = likePattern(search);
  const where = 'tenant_id = $1 AND ($2::text IS NULL OR name ILIKE $2)';
  return selectPage<AgentRow>(
    db,
    {
      rows: `SELECT ${AGENT_COLUMNS} FROM agents WHERE ${where} ORDER BY created_at DESC, id DESC`,
      total: `SELECT count(*)::int AS n FROM agents WHERE ${where}`,
      params: [tenantId, pattern],
    },
    page,
  );
}

/** Sets the fields present in `patch`; a nullable field given as null is cleared. */
export async function updateAgent(
  db: Queryable,
  tenantId: string,
  agentId: string,
  patch: Partial<AgentFields>,
): Promise<AgentRow | undefined> {
  const { set, params } = updateSet(
    {
      name: patch.name ?? undefined,
      description: patch.description,
      language: patch.language ?? undefined,
      voice: patch.voice,
      system_prompt: patch.systemPrompt,
      first_message: patch.firstMessage,
      knowledge_base_ids: patch.knowledgeBaseIds ?? undefined,
      tools: patch.tools ?? undefined,
      custom_tools: patch.customTools && JSON.stringify(patch.customTools),
      llm: patch.llm === undefined ? undefined : patch.llm && JSON.stringify(patch.llm),
      realtime: patch.realtime === undefined ? undefined : patch.realtime && JSON.stringify(patch.realtime),
      stt: patch.stt === undefined ? undefined : patch.stt && JSON.stringify(patch.stt),
      tts: patch.tts && JSON.stringify(patch.tts),
      backup: patch.backup === undefined ? undefined : patch.backup && JSON.stringify(patch.backup),
      voice_pipeline: patch.voicePipeline,
      knowledge_in_context: patch.knowledgeInContext ?? undefined,
      transfer_number: patch.transferNumber,
      recording: patch.recording && JSON.stringify(patch.recording),
      metadata: patch.metadata && JSON.stringify(patch.metadata),
    },
    2,
  );
  const { rows } = await db.query<AgentRow>(`UPDATE agents SET ${set} WHERE tenant_id = $1 AND id = $2 RETURNING ${AGENT_COLUMNS}`, [
    tenantId,
    agentId,
    ...params,
  ]);
  return rows[0];
}

export async function agentNamesSearching(db: Queryable, tenantId: string, knowledgeBaseId: string): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(
    'SELECT name FROM agents WHERE tenant_id = $1 AND $2::uuid = ANY (knowledge_base_ids) ORDER BY name LIMIT 5',
    [tenantId, knowledgeBaseId],
  );
  return rows.map((row) => row.name);
}

export async function deleteAgent(db: Queryable, tenantId: string, agentId: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM agents WHERE tenant_id = $1 AND id = $2', [tenantId, agentId]);
  return rowCount === 1;
}

export async function insertVoiceNumber(
  db: Queryable,
  tenantId: string,
  number: { id: string; phoneNumber: string; provider: VoiceProvider; label: string | null; inboundAgentId: string | null },
): Promise<VoiceNumberRow> {
  const { rows } = await db.query<VoiceNumberRow>(
    `INSERT INTO voice_numbers (tenant_id, id, phone_number, provider, label, inbound_agent_id) VALUES ($1, $2, $3, $4, $5, $6)
     RETURNING ${NUMBER_COLUMNS}`,
    [tenantId, number.id, number.phoneNumber, number.provider, number.label, number.inboundAgentId],
  );
  return rows[0]!;
}

export async function findVoiceNumber(db: Queryable, tenantId: string, numberId: string): Promise<VoiceNumberRow | undefined> {
  const { rows } = await db.query<VoiceNumberRow>(`SELECT ${NUMBER_COLUMNS} FROM voice_numbers WHERE tenant_id = $1 AND id = $2`, [
    tenantId,
    numberId,
  ]);
  return rows[0];
}

/** The one lookup across tenants: an inbound call names only the dialled number (see the service). */
export async function findVoiceNumberByPhone(db: Queryable, phoneNumber: string): Promise<VoiceNumberRow | undefined> {
  const { rows } = await db.query<VoiceNumberRow>(`SELECT ${NUMBER_COLUMNS} FROM voice_numbers WHERE phone_number = $1`, [phoneNumber]);
  return rows[0];
}

export async function voiceNumberExists(db: Queryable, tenantId: string, numberId: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM voice_numbers WHERE tenant_id = $1 AND id = $2', [tenantId, numberId]);
  return rowCount === 1;
}

/** Locks the number until the transaction ends, like `lockAgent`. */
export async function lockVoiceNumber(db: Queryable, tenantId: string, numberId: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM voice_numbers WHERE tenant_id = $1 AND id = $2 FOR UPDATE', [tenantId, numberId]);
  return rowCount === 1;
}

/** Whether the tenant whose id is the SQL expression `tenant` has a voice number: a condition for a statement that asks several modules at once. */
export const tenantHasVoiceNumber = (tenant: string) => `EXISTS (SELECT 1 FROM voice_numbers WHERE tenant_id = ${tenant})`;

export async function listVoiceNumbers(db: Queryable, tenantId: string, page: Page): Promise<{ rows: VoiceNumberRow[]; total: number }> {
  return selectPage<VoiceNumberRow>(
    db,
    {
      rows: `SELECT ${NUMBER_COLUMNS} FROM voice_numbers WHERE tenant_id = $1 ORDER BY created_at DESC, id DESC`,
      total: 'SELECT count(*)::int AS n FROM voice_numbers WHERE tenant_id = $1',
      params: [tenantId],
    },
    page,
  );
}

export async function updateVoiceNumber(
  db: Queryable,
  tenantId: string,
  numberId: string,
  patch: { label?: string | null; inboundAgentId?: string | null },
): Promise<VoiceNumberRow | undefined> {
  const { set, params } = updateSet({ label: patch.label, inbound_agent_id: patch.inboundAgentId }, 2);
  const { rows } = await db.query<VoiceNumberRow>(
    `UPDATE voice_numbers SET ${set} WHERE tenant_id = $1 AND id = $2 RETURNING ${NUMBER_COLUMNS}`,
    [tenantId, numberId, ...params],
  );
  return rows[0];
}

export async function deleteVoiceNumber(db: Queryable, tenantId: string, numberId: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM voice_numbers WHERE tenant_id = $1 AND id = $2', [tenantId, numberId]);
  return rowCount === 1;
}

/** Names of the tenant's agents among `ids` (one read for a whole report; deleted agents are absent). */
export async function agentNamesById(db: Queryable, tenantId: string, ids: string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const { rows } = await db.query<{ id: string; name: string }>(
    'SELECT id, name FROM agents WHERE tenant_id = $1 AND id = ANY ($2::uuid[])',
    [tenantId, ids],
  );
  return new Map(rows.map((row) => [row.id, row.name]));
}

/** Every agent's sealed tool secret, locked for re-sealing with a new SECRETS_KEY. */
export async function lockSealedToolSecrets(db: Queryable): Promise<{ tenant_id: string; id: string; tool_secret_sealed: string }[]> {
  const { rows } = await db.query<{ tenant_id: string; id: string; tool_secret_sealed: string }>(
    'SELECT tenant_id, id, tool_secret_sealed FROM agents WHERE tool_secret_sealed IS NOT NULL FOR UPDATE',
  );
  return rows;
}

export async function updateToolSecretSealed(db: Queryable, tenantId: string, id: string, sealed: string): Promise<void> {
  await db.query('UPDATE agents SET tool_secret_sealed = $3 WHERE tenant_id = $1 AND id = $2', [tenantId, id, sealed]);
}

export interface VersionRow {
  agent_id: string;
  version: number;
  config: AgentConfig;
  note: string | null;
  created_at: Date;
}

const VERSION_COLUMNS = 'agent_id, version, config, note, created_at';

/** The next version of the agent, numbered after its latest; the caller holds the agent locked, so numbers never collide. */
export async function insertVersion(
  db: Queryable,
  tenantId: string,
  agentId: string,
  config: AgentConfig,
  note: string | null,
): Promise<VersionRow> {
  const { rows } = await db.query<VersionRow>(
    `INSERT INTO agent_versions (tenant_id, agent_id, version, config, note)
     SELECT $1, $2, coalesce(max(version), 0) + 1, $3::jsonb, $4 FROM agent_versions WHERE tenant_id = $1 AND agent_id = $2
     RETURNING ${VERSION_COLUMNS}`,
    [tenantId, agentId, JSON.stringify(config), note],
  );
  return rows[0]!;
}

export async function latestVersion(db: Queryable, tenantId: string, agentId: string): Promise<VersionRow | undefined> {
  const { rows } = await db.query<VersionRow>(
    `SELECT ${VERSION_COLUMNS} FROM agent_versions WHERE tenant_id = $1 AND agent_id = $2 ORDER BY version DESC LIMIT 1`,
    [tenantId, agentId],
  );
  return rows[0];
}

export async function findVersion(db: Queryable, tenantId: string, agentId: string, version: number): Promise<VersionRow | undefined> {
  const { rows } = await db.query<VersionRow>(
    `SELECT ${VERSION_COLUMNS} FROM agent_versions WHERE tenant_id = $1 AND agent_id = $2 AND version = $3`,
    [tenantId, agentId, version],
  );
  return rows[0];
}

/** Which of `versions` the agent has. */
export async function existingVersions(db: Queryable, tenantId: string, agentId: string, versions: number[]): Promise<Set<number>> {
  const { rows } = await db.query<{ version: number }>(
    'SELECT version FROM agent_versions WHERE tenant_id = $1 AND agent_id = $2 AND version = ANY ($3::int[])',
    [tenantId, agentId, versions],
  );
  return new Set(rows.map((row) => row.version));
}

export async function listVersions(
  db: Queryable,
  tenantId: string,
  agentId: string,
  page: Page,
): Promise<{ rows: VersionRow[]; total: number }> {
  const where = 'tenant_id = $1 AND agent_id = $2';
  return selectPage<VersionRow>(
    db,
    {
      rows: `SELECT ${VERSION_COLUMNS} FROM agent_versions WHERE ${where} ORDER BY version DESC`,
      total: `SELECT count(*)::int AS n FROM agent_versions WHERE ${where}`,
      params: [tenantId, agentId],
    },
    page,
  );
}
