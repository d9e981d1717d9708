/**
 * Issue 41, item 3: a campaign's experiment compared arm by arm. Each arm's contacts, calls,
 * outcomes, tool outcomes, durations and cost come from the campaign and its calls as they are; each
 * arm after the first is tested against the first (the control) for its success rate.
 */
import type { TenantCtx } from '../../platform/context.ts';
import { appError } from '../../platform/errors.ts';
import { formatMoney, money } from '../../platform/money.ts';
import * as calls from '../calls/service.ts';
import * as campaigns from '../campaigns/service.ts';
import * as identity from '../identity/service.ts';
import type { ExperimentArm, ExperimentQuery, ExperimentReport, SuccessKind } from './schemas.ts';
import { compareProportions } from './significance.ts';

const DEFAULT_SUCCESS: SuccessKind[] = ['appointment', 'payment_promise'];
const ALPHA = 0.05;

const round = (value: number, digits: number) => Math.round(value * 10 ** digits) / 10 ** digits;
const percent = (rate: number | null) => (rate === null ? 'no contact called' : `${(rate * 100).toFixed(1)}%`);

export async function campaignExperiment(ctx: TenantCtx, campaignId: string, query: ExperimentQuery): Promise<ExperimentReport> {
  const campaign = await campaigns.findCampaign(ctx, campaignId);
  if (!campaign) throw appError('NOT_FOUND', { what: 'Campaign' });
  const success = query.success ? ([...new Set(query.success.split(','))] as SuccessKind[]) : DEFAULT_SUCCESS;
  const [tallies, contacts, wallet] = await Promise.all([
    calls.versionTallies(ctx, campaignId, { answered: success.includes('answered'), types: success.filter((kind) => kind !== 'answered') }),
    campaigns.contactsPerVersion(ctx, campaignId),
    identity.walletBalance(ctx),
  ]);
  const armsOf = campaign.experiment?.arms ?? [{ version: campaign.agentVersion ?? null, weight: null }];
  const arms = armsOf.map(({ version, weight }) =>
    armOf(
      version,
      weight,
      contacts.get(version) ?? 0,
      tallies.find((tally) => tally.version === version),
    ),
  );
  const comparisons = arms.slice(1);
  const alpha = comparisons.length > 1 ? ALPHA / comparisons.length : ALPHA;
  return {
    campaignId,
    agentId: campaign.agentId,
    currency: wallet.currency,
    success,
    alpha,
    arms,
    comparisons: comparisons.map((arm) => compare(arm, arms[0]!, alpha)),
  };
}

function armOf(version: number | null, weight: number | null, contacts: number, tally: calls.VersionTally | undefined): ExperimentArm {
  const cost = money(tally?.cost ?? '0');
  const successes = tally?.successes ?? 0;
  const contactsCalled = tally?.contacts_called ?? 0;
  return {
    version,
    weight,
    contacts,
    contactsCalled,
    calls: tally?.calls ?? 0,
    answered: tally?.answered ?? 0,
    outcomes: {
      ANSWERED: tally?.answered ?? 0,
      UNANSWERED: tally?.unanswered ?? 0,
      BUSY: tally?.busy ?? 0,
      FAILED: tally?.failed ?? 0,
    },
    toolOutcomes: {
      appointment: tally?.appointment ?? 0,
      payment_promise: tally?.payment_promise ?? 0,
      opt_out: tally?.opt_out ?? 0,
      transfer: tally?.transfer ?? 0,
    },
    successes,
    successRate: contactsCalled === 0 ? null : round(successes / contactsCalled, 4),
    durationSec: {
      mean: tally?.mean_duration == null ? null : round(tally.mean_duration, 1),
      median: tally?.median_duration ?? null,
    },
    cost: formatMoney(cost),
    costPerSuccess: successes === 0 ? null : formatMoney(cost.div(successes)),
  };
}

function compare(arm: ExperimentArm, control: ExperimentArm, alpha: number): ExperimentReport['comparisons'][number] {
  const version = arm.version!;
  const against = control.version!;
  const result = compareProportions(
    { successes: arm.successes, trials: arm.contactsCalled },
    { successes: control.successes, trials: control.contactsCalled },
  );
  const rates = `${percent(arm.successRate)} of contacts called succeeded with version ${version}, ${percent(control.successRate)} with version ${against}`;
  if (!result) {
    const waiting = arm.contactsCalled === 0 ? version : against;
    return {
      version,
      against,
      difference: null,
      pValue: null,
      test: null,
      significant: false,
      message: `Not comparable yet: no contact of version ${waiting} has been called.`,
    };
  }
  const pValue = Number(result.pValue.toPrecision(4));
  const significant = result.pValue < alpha;
  return {
    version,
    against,
    difference: round(arm.successRate! - control.successRate!, 4),
    pValue,
    test: result.test,
    significant,
    message: significant
      ? `Significant: ${rates} (p = ${pValue} < ${alpha}).`
      : `Not yet significant: ${rates} (p = ${pValue}, needs below ${alpha}); keep calling.`,
  };
}
