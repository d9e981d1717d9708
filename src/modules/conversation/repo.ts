import type { Queryable } from '../../platform/db.ts';

/** The tables this module owns: only its SQL touches them (scripts/check-table-ownership.ts holds it to that). */
export const OWNED_TABLES = ['test_chats'] as const;

export interface TestChatRow {
  tenant_id: string;
  id: string;
  agent_id: string;
  brain: string;
  history: unknown[];
  transcript: unknown[];
  usage: Record<string, unknown>;
  cost: Record<string, string>;
  cost_total: string;
  end_reason: string | null;
  version: number;
  created_at: Date;
  updated_at: Date;
}

export interface TestChatState {
  brain: string;
  history: unknown[];
  transcript: unknown[];
  usage: object;
  cost: object;
  costTotal: string;
  endReason: string | null;
}

/** The state's values in the order of the statements below ($4 to $10). */
const stateParams = (chat: TestChatState) => [
  chat.brain,
  JSON.stringify(chat.history),
  JSON.stringify(chat.transcript),
  JSON.stringify(chat.usage),
  JSON.stringify(chat.cost),
  chat.costTotal,
  chat.endReason,
];

export async function insertTestChat(
  db: Queryable,
  tenantId: string,
  chat: TestChatState & { id: string; agentId: string; at: Date },
): Promise<TestChatRow> {
  const { rows } = await db.query<TestChatRow>(
    `INSERT INTO test_chats (tenant_id, id, agent_id, brain, history, transcript, usage, cost, cost_total, end_reason, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11) RETURNING *`,
    [tenantId, chat.id, chat.agentId, ...stateParams(chat), chat.at],
  );
  return rows[0]!;
}

export async function findTestChat(db: Queryable, tenantId: string, id: string): Promise<TestChatRow | undefined> {
  const { rows } = await db.query<TestChatRow>('SELECT * FROM test_chats WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
  return rows[0];
}

/** Saves the chat as of `version`; undefined when another message changed it meanwhile. */
export async function updateTestChat(
  db: Queryable,
  tenantId: string,
  id: string,
  version: number,
  chat: TestChatState & { at: Date },
): Promise<TestChatRow | undefined> {
  const { rows } = await db.query<TestChatRow>(
    `UPDATE test_chats SET brain = $4, history = $5, transcript = $6, usage = $7, cost = $8, cost_total = $9, end_reason = $10, updated_at = $11,
       version = version + 1
     WHERE tenant_id = $1 AND id = $2 AND version = $3 RETURNING *`,
    [tenantId, id, version, ...stateParams(chat), chat.at],
  );
  return rows[0];
}
