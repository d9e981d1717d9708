/**
 * An experiment's split: which arm (version of the agent) each contact of a campaign is called
 * with. Deterministic: a hash of the campaign and contact ids, read as a point in the sum of the
 * weights, so a contact lands in the same arm however often it is asked (a retry, a restart,
 * another worker), and each arm gets its weight's share of the contacts.
 */
import { createHash } from 'node:crypto';
import type { Experiment } from './schemas.ts';

/** 48 bits of SHA-256: the remainder's bias against any total of weights (at most 10,000) is below 1e-10. */
const POINT_BYTES = 6;

/** The version of the arm the contact falls in. */
export function armOf(experiment: Experiment, campaignId: string, contactId: string): number {
  const total = experiment.arms.reduce((sum, arm) => sum + arm.weight, 0);
  const digest = createHash('sha256').update(`${campaignId}:${contactId}`).digest();
  let point = digest.readUIntBE(0, POINT_BYTES) % total;
  for (const arm of experiment.arms) {
    if (point < arm.weight) return arm.version;
    point -= arm.weight;
  }
  throw new Error('unreachable: the point lies inside the sum of the weights');
}
