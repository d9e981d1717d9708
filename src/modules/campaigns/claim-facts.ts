import type { TenantCtx } from '../../platform/context.ts';
import * as calls from '../calls/service.ts';
import * as compliance from '../compliance/service.ts';
import { COUNTED_HOURS, type ClaimFacts } from './dial-verdicts.ts';
import type { CampaignRow } from './repo.ts';

/**
 * Every fact the dial verdicts weigh for these numbers at `now`, read once: the do-not-call list as
 * it is, voice consents, the calls placed to each number within the longest cap period, the
 * tenant's settings and rules. The dialer reads them for a claim (after locking the numbers); a
 * rehearsal reads the same, so it says what the dialer would decide.
 */
export async function claimFacts(ctx: TenantCtx, campaign: CampaignRow, numbers: string[], now: Date): Promise<ClaimFacts> {
  const settings = await compliance.dialSettings(ctx);
  const capHours = [
    ...COUNTED_HOURS,
    ...settings.customRules.flatMap((rule) => rule.maxCalls ?? []).map((cap) => cap.hours),
    compliance.LONGEST_STATUTORY_CAP_HOURS,
  ];
  const [barred, consented, placed] = await Promise.all([
    compliance.listedNumbers(ctx, numbers),
    compliance.consentedNumbers(ctx, numbers, 'voice'),
    calls.placedCalls(ctx, numbers, new Date(now.getTime() - Math.max(...capHours) * 3_600_000)),
  ]);
  return {
    campaign,
    settings,
    barred,
    consented,
    callTimes: placed.times,
    onCall: placed.onCall,
    rulesFor: (phoneNumber) => compliance.rulesForNumber(phoneNumber, settings.customRules),
    now,
  };
}
