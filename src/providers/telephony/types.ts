/** The final result of one call attempt (contract §3 `outcome`). */
export type CallOutcome = 'ANSWERED' | 'UNANSWERED' | 'BUSY' | 'FAILED';

export interface DialRequest {
  /** Our call id; providers echo it back (simulator) or we find the call by the provider's id. */
  callId: string;
  from: string;
  to: string;
  /** Seconds the provider lets the phone ring before giving up (campaign `dialTimeout`). */
  dialTimeoutSec: number;
  /** Where the provider posts status changes (Twilio `StatusCallback`). */
  statusCallbackUrl: string;
}

export interface DialResult {
  providerCallId: string;
}

/**
 * What the dialer needs from a telephony provider. A dial that throws `PermanentDialError`
 * (an invalid number, a refused account) is not retried; any other throw is a FAILED attempt
 * that the campaign's redial rules may retry.
 */
export interface TelephonyProvider {
  dial(request: DialRequest): Promise<DialResult>;
  hangup(providerCallId: string): Promise<void>;
}

export class PermanentDialError extends Error {}
