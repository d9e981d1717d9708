/**
 * The states of campaigns, their contacts and calls, said in words a person reads at a glance
 * (the API's enum values stay in the API; the dashboard speaks sentences).
 */
import type { Call, Campaign, CampaignContact, CampaignStatus, TestSuiteRun, TestSuiteRunDetail } from '../../src/api-types.ts';

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
      return over
        ? `${outcomeInWords(contact.lastOutcome)}, not retried (campaign ended)`
        : `${outcomeInWords(contact.lastOutcome)}, will retry`;
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

/** The service's message as a sentence on the page: capitalised, ending with a full stop. */
const sentence = (message: string) => `${message.charAt(0).toUpperCase()}${message.slice(1).replace(/\.?$/, '.')}`;

/** "Mon 09:00" in the zone; with the date when it is more than six days away. */
export function formatInZone(at: Date, timeZone: string, now: Date): string {
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

/** A contact's next attempt in the campaign's zone and from now: "Tue 09:00, in 14 h 3 min", or "due now". */
export function nextAttemptInWords(at: Date, timeZone: string, now: Date): string {
  return at.getTime() <= now.getTime() ? 'due now' : `${formatInZone(at, timeZone, now)}, ${formatWait(at.getTime() - now.getTime())}`;
}

/** "in 2 h 5 min" */
export function formatWait(ms: number): string {
  const minutes = Math.max(1, Math.round(ms / 60_000));
  const days = Math.floor(minutes / 1440);
  const hours = Math.floor((minutes % 1440) / 60);
  const rest = minutes % 60;
  return `in ${[days && `${days} d`, hours && `${hours} h`, rest && `${rest} min`].filter(Boolean).join(' ')}`;
}

/** The local weekday (1 = Monday … 7 = Sunday) and minute of the day of an instant in a zone. */
const zoneFormats = new Map<string, Intl.DateTimeFormat>();
function localTime(at: Date, timeZone: string): { weekday: number; minute: number } {
  let format = zoneFormats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', { timeZone, weekday: 'short', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
    zoneFormats.set(timeZone, format);
  }
  const parts = format.formatToParts(at);
  const part = (type: string) => parts.find((found) => found.type === type)?.value ?? '';
  const weekday = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'].indexOf(part('weekday')) + 1;
  return { weekday, minute: Number(part('hour')) * 60 + Number(part('minute')) };
}

const minutesOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/**
 * When the campaign's call window is next open: `now` when it is open, else the first minute it
 * opens within eight days (null when it never does). Minute by minute from the next whole minute,
 * jumping a whole window-less stretch at a time, so daylight saving is read from the zone as it is.
 * The service's `waiting` says this itself; this is for a service that does not send it.
 */
export function nextOpening(
  campaign: Pick<Campaign, 'timezone' | 'callWindowStart' | 'callWindowEnd' | 'callDays'>,
  now: Date,
): Date | null {
  const start = minutesOf(campaign.callWindowStart);
  const end = minutesOf(campaign.callWindowEnd);
  const open = (at: Date) => {
    const local = localTime(at, campaign.timezone);
    return campaign.callDays.includes(local.weekday) && local.minute >= start && local.minute < end;
  };
  if (open(now)) return now;
  let at = new Date(Math.ceil(now.getTime() / 60_000) * 60_000);
  const horizon = now.getTime() + 8 * 24 * 3600_000;
  while (at.getTime() <= horizon) {
    if (open(at)) return at;
    const local = localTime(at, campaign.timezone);
    // Before today's start: jump to it; after it (or a day off): to the next local midnight. Either lands at most an hour off, then steps.
    const ahead = local.minute < start && campaign.callDays.includes(local.weekday) ? start - local.minute : 1440 - local.minute;
    at = new Date(at.getTime() + Math.max(1, ahead - 60) * 60_000);
  }
  return null;
}

/**
 * Why a RUNNING campaign is not dialling now, or null when it is (or is not running). The service's
 * own `waiting` wins; without it the page works it out from the call window and the contacts' next
 * attempts.
 */
export function waitingOf(
  campaign: Campaign & { waiting?: Waiting | null },
  contacts: CampaignContact[] | undefined,
  now: Date,
): { message: string; resumesAt: Date | null } | null {
  if (campaign.status !== 'RUNNING') return null;
  if (campaign.waiting !== undefined) {
    if (campaign.waiting === null) return null;
    return {
      message: sentence(campaign.waiting.message),
      resumesAt: campaign.waiting.resumesAt ? new Date(campaign.waiting.resumesAt) : null,
    };
  }
  let opening: Date | null;
  try {
    opening = nextOpening(campaign, now);
  } catch {
    return null; // a zone the browser does not know: say nothing rather than guess
  }
  if (!opening)
    return { message: 'Waiting for the call window: it does not open in the coming week (check the call days).', resumesAt: null };
  if (opening > now) {
    return {
      message: `Waiting for the call window: opens ${formatInZone(opening, campaign.timezone, now)} ${campaign.timezone}.`,
      resumesAt: opening,
    };
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

/**
 * The knowledge query's fusion, as the API scores with it (FUSION in the knowledge service; a test
 * holds the two equal): each of the two rankings, by words and by meaning, adds 1 / (k + rank).
 */
export const FUSED_SCORE = { k: 5, rankings: 2 } as const;

/**
 * What a query result's score says. It counts ranks, not closeness: the best possible, first by
 * words and by meaning, is 2 / (k + 1); one ranking alone gives at most 1 / (k + 1), so a score
 * above that was placed near the top by both ("Strong"). Anything else was found by one ranking
 * only or lower in both ("Partial"). Shown with the score and the best possible, never as a share
 * of the page's best result (every page's first result would then say 100%).
 */
export function matchStrength(score: number): { words: 'Strong match' | 'Partial match'; detail: string } {
  const best = FUSED_SCORE.rankings / (FUSED_SCORE.k + 1);
  const oneRankingAtBest = 1 / (FUSED_SCORE.k + 1);
  const words = score > oneRankingAtBest + 1e-9 ? 'Strong match' : 'Partial match';
  return { words, detail: `score ${score.toFixed(2)} of ${best.toFixed(2)}` };
}

/** A test suite run's state, and each scenario's and assertion's verdict. */
export const SUITE_RUN_STATUS_WORDS: Record<TestSuiteRun['status'], string> = {
  QUEUED: 'Queued',
  RUNNING: 'Running',
  PASSED: 'Passed',
  FAILED: 'Failed',
};
export const VERDICT_WORDS: Record<TestSuiteRunDetail['results'][number]['status'], string> = {
  passed: 'Passed',
  failed: 'Failed',
  skipped: 'Skipped',
};

/** A rate from 0 to 1 as a percentage ("67%"), or a dash before there is one. */
export const percent = (rate: number | null) => (rate === null ? '—' : `${Math.round(rate * 100)}%`);

/** A version of an agent in words: "Version 3", or the live agent. */
export const versionInWords = (version: number | null) => (version === null ? 'The agent as it is' : `Version ${version}`);
