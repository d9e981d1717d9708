import type { Queryable } from '../../platform/db.ts';
import { selectPage, type Page } from '../../platform/pagination.ts';

/** The tables this module owns: only its SQL touches them (scripts/check-table-ownership.ts holds it to that). */
export const OWNED_TABLES = ['campaign_rehearsals'] as const;

export interface RehearsalRow {
  tenant_id: string;
  id: string;
  campaign_id: string;
  status: 'QUEUED' | 'RUNNING' | 'DONE' | 'FAILED';
  sample: number;
  from_at: Date;
  report: Record<string, unknown> | null;
  failure: string | null;
  created_at: Date;
  finished_at: Date | null;
}

export async function insertRehearsal(
  db: Queryable,
  tenantId: string,
  rehearsal: { id: string; campaignId: string; sample: number; from: Date; at: Date },
): Promise<RehearsalRow> {
  const { rows } = await db.query<RehearsalRow>(
    `INSERT INTO campaign_rehearsals (tenant_id, id, campaign_id, status, sample, from_at, created_at)
     VALUES ($1, $2, $3, 'QUEUED', $4, $5, $6) RETURNING *`,
    [tenantId, rehearsal.id, rehearsal.campaignId, rehearsal.sample, rehearsal.from, rehearsal.at],
  );
  return rows[0]!;
}

export async function findRehearsal(db: Queryable, tenantId: string, campaignId: string, id: string): Promise<RehearsalRow | undefined> {
  const { rows } = await db.query<RehearsalRow>('SELECT * FROM campaign_rehearsals WHERE tenant_id = $1 AND campaign_id = $2 AND id = $3', [
    tenantId,
    campaignId,
    id,
  ]);
  return rows[0];
}

/** The campaign's rehearsals, newest first, each without its contacts (a report may hold 500 conversations). */
export function listRehearsals(db: Queryable, tenantId: string, campaignId: string, page: Page) {
  const where = 'tenant_id = $1 AND campaign_id = $2';
  return selectPage<RehearsalRow>(
    db,
    {
      rows: `SELECT tenant_id, id, campaign_id, status, sample, from_at, report - 'contacts' AS report, failure, created_at, finished_at
             FROM campaign_rehearsals WHERE ${where} ORDER BY created_at DESC, id DESC`,
      total: `SELECT count(*)::int AS n FROM campaign_rehearsals WHERE ${where}`,
      params: [tenantId, campaignId],
    },
    page,
  );
}

/** QUEUED (or a RUNNING one whose job is retried) → RUNNING; undefined once it is finished. */
export async function startRehearsal(db: Queryable, tenantId: string, id: string): Promise<RehearsalRow | undefined> {
  const { rows } = await db.query<RehearsalRow>(
    `UPDATE campaign_rehearsals SET status = 'RUNNING' WHERE tenant_id = $1 AND id = $2 AND status IN ('QUEUED', 'RUNNING') RETURNING *`,
    [tenantId, id],
  );
  return rows[0];
}

/** Stores the report (DONE) or why there is none (FAILED), once: false when it was finished already. */
export async function finishRehearsal(
  db: Queryable,
  tenantId: string,
  id: string,
  result: { report: Record<string, unknown> } | { failure: string },
  at: Date,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE campaign_rehearsals SET status = $3, report = $4, failure = $5, finished_at = $6
     WHERE tenant_id = $1 AND id = $2 AND status = 'RUNNING'`,
    [
      tenantId,
      id,
      'report' in result ? 'DONE' : 'FAILED',
      'report' in result ? JSON.stringify(result.report) : null,
      'failure' in result ? result.failure : null,
      at,
    ],
  );
  return rowCount > 0;
}
