import type { Config } from '../../config.ts';
import { formatMoney, money, type Money } from '../../platform/money.ts';

/** What one call consumed (contract §8). */
export interface CallUsage {
  sttSeconds: number;
  ttsCharacters: number;
  llmTokens: number;
  telephonySeconds: number;
}

export interface RateCard {
  sttPerMinute: Money;
  ttsPer1kCharacters: Money;
  llmPer1kTokens: Money;
  telephonyPerMinute: Money;
  platformFeePerMinute: Money;
}

export interface CallCost {
  stt: string;
  tts: string;
  llm: string;
  telephony: string;
  platformFee: string;
  total: string;
}

export const rateCardOf = (config: Config['rates']): RateCard => ({
  sttPerMinute: money(config.sttPerMinute),
  ttsPer1kCharacters: money(config.ttsPer1kCharacters),
  llmPer1kTokens: money(config.llmPer1kTokens),
  telephonyPerMinute: money(config.telephonyPerMinute),
  platformFeePerMinute: money(config.platformFeePerMinute),
});

/**
 * Cost per component, billed by the second and rounded to 4 decimals (half-even) each; the total
 * is the sum of the rounded components, so the parts always add up to what the wallet is debited.
 */
export function costOf(usage: CallUsage, rates: RateCard): { cost: CallCost; total: Money } {
  const perMinute = (seconds: number, rate: Money) => money(seconds).div(60).mul(rate).toDecimalPlaces(4);
  const per1k = (units: number, rate: Money) => money(units).div(1000).mul(rate).toDecimalPlaces(4);
  const parts = {
    stt: perMinute(usage.sttSeconds, rates.sttPerMinute),
    tts: per1k(usage.ttsCharacters, rates.ttsPer1kCharacters),
    llm: per1k(usage.llmTokens, rates.llmPer1kTokens),
    telephony: perMinute(usage.telephonySeconds, rates.telephonyPerMinute),
    platformFee: perMinute(usage.telephonySeconds, rates.platformFeePerMinute),
  };
  const total = Object.values(parts).reduce((sum, part) => sum.add(part), money(0));
  return {
    cost: {
      stt: formatMoney(parts.stt),
      tts: formatMoney(parts.tts),
      llm: formatMoney(parts.llm),
      telephony: formatMoney(parts.telephony),
      platformFee: formatMoney(parts.platformFee),
      total: formatMoney(total),
    },
    total,
  };
}

export const NO_USAGE: CallUsage = { sttSeconds: 0, ttsCharacters: 0, llmTokens: 0, telephonySeconds: 0 };

/**
 * The usage of a conversation of `seconds`, from the call's length: both sides talk, the agent
 * speaks about 14 characters and its model spends about 60 tokens per second. The simulator uses
 * it, and so do provider calls until the media pipeline meters speech and tokens itself.
 */
export const conversationUsage = (seconds: number): CallUsage => ({
  sttSeconds: seconds,
  ttsCharacters: Math.round(seconds * 14),
  llmTokens: seconds * 60,
  telephonySeconds: seconds,
});
