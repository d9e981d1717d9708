/**
 * The states of campaigns, their contacts and calls, said in words a person reads at a glance
 * (the API's enum values stay in the API; the dashboard speaks sentences).
 */
import type { Call, Campaign, CampaignContact, CampaignStatus } from '../../src/api-types.ts';
import { isInsideCallWindow, nextWindowOpening, type CallWindow } from '../../src/modules/campaigns/call-window.ts';

export const CAMPAIGN_STATUS_WORDS: Record<CampaignStatus, string> = {
  DRAFT: 'Draft',
  SCHEDULED: 'Scheduled',
  RUNNING: 'Running',
  PAUSED: 'Paused',
  COMPLETED: 'Completed',
  CANCELLED: 'Cancelled',
};

const OUTCOME_WORDS: Record<string, string> = {
  ANSWERED: 'Answered',
  UNANSWERED: 'No answer',
  BUSY: 'Busy',
  FAILED: 'Failed',
};
export const outcomeInWords = (outcome: string | null) => (outcome ? (OUTCOME_WORDS[outcome] ?? outcome) : '—');

const SKIP_WORDS: Record<string, string> = { dnc: 'on the do-not-call list' };

/** A campaign contact's dial state: "Not called yet", "Busy, will retry", "No answer after 3 attempts", … */
export function contactStateInWords(contact: CampaignContact, campaign: Pick<Campaign, 'status' | 'maxAttempts'>): string {
  const over = campaign.status === 'COMPLETED' || campaign.status === 'CANCELLED';
  switch (contact.status) {
    case 'PENDING':
      if (contact.attempts === 0) return over ? 'Never called' : 'Not called yet';
      return over ? `${outcomeInWords(contact.lastOutcome)}, not retried (campaign ended)` : `${outcomeInWords(contact.lastOutcome)}, will retry`;
    case 'IN_PROGRESS':
      return 'In a call';
    case 'ANSWERED':
      return 'Answered';
    case 'SKIPPED':
      return `Skipped: ${contact.skipReason ? (SKIP_WORDS[contact.skipReason] ?? contact.skipReason) : 'not dialled'}`;
    default: {
      const words = outcomeInWords(contact.status);
      return contact.attempts > 1 ? `${words} after ${contact.attempts} attempts` : words;
    }
  }
}

/** A call's state: live ("Ringing", "In a call") or its outcome ("Busy"), with "will retry" when its contact is waiting to be called again. */
export function callStateInWords(call: Call, retrying = false): string {
  switch (call.status) {
    case 'QUEUED':
      return 'Queued';
    case 'RINGING':
      return 'Ringing';
    case 'IN_PROGRESS':
      return 'In a call';
    default: {
      const words = call.outcome ? outcomeInWords(call.outcome) : 'Ended';
      return retrying && call.outcome !== 'ANSWERED' ? `${words}, will retry` : words;
    }
  }
}

/** Why a running campaign is not dialling right now, as the service says it (`waiting`), when it does. */
export interface Waiting {
  reason: string;
  message: string;
  resumesAt: string | null;
  contacts?: unknown;
}

/** "Mon 09:00" in the zone; with the date when it is more than six days away. */
export function formatInZone(at: Date, timeZone: string, now = new Date()): string {
  const far = at.getTime() - now.getTime() > 6 * 24 * 3600_000;
  return new Intl.DateTimeFormat('en-GB', {
    timeZone,
    weekday: 'short',
    ...(far ? { day: 'numeric', month: 'short' } : {}),
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  })
    .format(at)
    .replace(',', '');
}

/** "in 2 h 5 min" */
export function formatWait(ms: number): string {
  const minutes = Math.max(1, Math.round(ms / 60_000));
  const days = Math.floor(minutes / 1440);
  const hours = Math.floor((minutes % 1440) / 60);
  const rest = minutes % 60;
  return `in ${[days && `${days} d`, hours && `${hours} h`, rest && `${rest} min`].filter(Boolean).join(' ')}`;
}

/**
 * Why a RUNNING campaign is not dialling now, or null when it is (or is not running). The service's
 * own `waiting` wins; without it the page works it out from the call window and the contacts' next
 * attempts, with the very rules the dialer uses (call-window.ts).
 */
export function waitingOf(
  campaign: Campaign & { waiting?: Waiting | null },
  contacts: CampaignContact[] | undefined,
  now = new Date(),
): { message: string; resumesAt: Date | null } | null {
  if (campaign.status !== 'RUNNING') return null;
  if (campaign.waiting !== undefined) {
    if (campaign.waiting === null) return null;
    return { message: campaign.waiting.message, resumesAt: campaign.waiting.resumesAt ? new Date(campaign.waiting.resumesAt) : null };
  }
  const window: CallWindow = {
    timezone: campaign.timezone,
    start: campaign.callWindowStart,
    end: campaign.callWindowEnd,
    days: campaign.callDays,
  };
  try {
    if (!isInsideCallWindow(now, window)) {
      const opening = nextWindowOpening(now, window);
      if (!opening) return { message: 'Waiting for the call window: no call day is chosen, so it never opens.', resumesAt: null };
      return {
        message: `Waiting for the call window: opens ${formatInZone(opening, campaign.timezone, now)} ${campaign.timezone}.`,
        resumesAt: opening,
      };
    }
  } catch {
    return null; // a window the browser cannot read (an unknown zone): say nothing rather than guess
  }
  const stats = campaign.stats;
  if (!stats || stats.inProgress > 0 || stats.pending === 0 || !contacts) return null;
  const next = contacts
    .filter((contact) => contact.status === 'PENDING' && contact.nextAttemptAt)
    .map((contact) => new Date(contact.nextAttemptAt!))
    .sort((a, b) => a.getTime() - b.getTime())[0];
  if (!next || next <= now) return null;
  return {
    message: `Waiting to call again: the next attempt is ${formatInZone(next, campaign.timezone, now)} ${campaign.timezone}.`,
    resumesAt: next,
  };
}
