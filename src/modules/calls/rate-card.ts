import type { Config, RealtimeRates } from '../../config.ts';
import { formatMoney, money, type Money } from '../../platform/money.ts';

/** What one call consumed (contract §8), each figure from the component that ran: never estimated. */
export interface CallUsage {
  sttSeconds: number;
  ttsCharacters: number;
  /** Input and output together (the contract's figure). */
  llmTokens: number;
  llmInputTokens: number;
  llmOutputTokens: number;
  /** Of the input and output tokens, the audio a speech-to-speech model heard and spoke (priced apart from text). */
  llmInputAudioTokens: number;
  llmOutputAudioTokens: number;
  /** The model the tokens were spent on, which prices them; null when no model ran. */
  llmModel: string | null;
  /** The provider of each component that ran, which prices it; null when it did not run. */
  llmProvider: string | null;
  sttProvider: string | null;
  ttsProvider: string | null;
  telephonyProvider: string | null;
  telephonySeconds: number;
  /** Of the figures above, what the agent's backup ran once the call failed over to it (absent or null: it did not). */
  backup?: BackupUsage | null;
}

/** What an agent's backup model, speech-to-text and text-to-speech ran, each priced as its own. */
export interface BackupUsage {
  llmInputTokens: number;
  llmOutputTokens: number;
  llmModel: string | null;
  llmProvider: string | null;
  sttSeconds: number;
  sttProvider: string | null;
  ttsCharacters: number;
  ttsProvider: string | null;
}

export const NO_BACKUP_USAGE: BackupUsage = {
  llmInputTokens: 0,
  llmOutputTokens: 0,
  llmModel: null,
  llmProvider: null,
  sttSeconds: 0,
  sttProvider: null,
  ttsCharacters: 0,
  ttsProvider: null,
};

export interface RateCard {
  sttPerMinute: Money;
  ttsPer1kCharacters: Money;
  llmPer1kTokens: Money;
  llmModels: Map<string, { input: Money; output: Money }>;
  /** Speech-to-speech models, per million tokens of each kind. */
  realtimeModels: Map<string, RealtimeRates<Money>>;
  telephonyPerMinute: Money;
  platformFeePerMinute: Money;
  /** A provider's own rates, replacing the flat ones above for its components. */
  providers: Map<string, { sttPerMinute?: Money; ttsPer1kCharacters?: Money; telephonyPerMinute?: Money }>;
}

export interface CallCost {
  stt: string;
  tts: string;
  llm: string;
  telephony: string;
  platformFee: string;
  total: string;
}

// The rate card as decimals, made once per configuration: every call's end and chat message prices with it.
const rateCards = new WeakMap<Config['rates'], RateCard>();

export function rateCardOf(config: Config['rates']): RateCard {
  let card = rateCards.get(config);
  if (!card) rateCards.set(config, (card = decimalRateCard(config)));
  return card;
}

const decimalRateCard = (config: Config['rates']): RateCard => ({
  sttPerMinute: money(config.sttPerMinute),
  ttsPer1kCharacters: money(config.ttsPer1kCharacters),
  llmPer1kTokens: money(config.llmPer1kTokens),
  llmModels: new Map(
    Object.entries(config.llmModels).map(([model, rate]) => [model, { input: money(rate.input), output: money(rate.output) }]),
  ),
  realtimeModels: new Map(
    Object.entries(config.realtimeModels).map(([model, rate]) => [
      model,
      {
        textInput: money(rate.textInput),
        textOutput: money(rate.textOutput),
        audioInput: money(rate.audioInput),
        audioOutput: money(rate.audioOutput),
      },
    ]),
  ),
  telephonyPerMinute: money(config.telephonyPerMinute),
  platformFeePerMinute: money(config.platformFeePerMinute),
  providers: new Map(
    Object.entries(config.providers).map(([provider, rates]) => [
      provider,
      Object.fromEntries(Object.entries(rates).map(([field, rate]) => [field, money(rate)])),
    ]),
  ),
});

/** The rate of a component: its provider's own, or the flat one. */
const rateOf = (rates: RateCard, provider: string | null, field: 'sttPerMinute' | 'ttsPer1kCharacters' | 'telephonyPerMinute') =>
  (provider === null ? undefined : rates.providers.get(provider)?.[field]) ?? rates[field];

/**
 * A speech-to-speech model with its own rates is priced per text and audio token, heard and spoken;
 * a model with its own rates per input and output token; any other at the flat rate.
 */
function llmCost(usage: CallUsage, rates: RateCard, per1k: (units: number, rate: Money) => Money): Money {
  const realtime = usage.llmModel === null ? undefined : rates.realtimeModels.get(usage.llmModel);
  if (realtime) {
    const audioIn = usage.llmInputAudioTokens;
    const audioOut = usage.llmOutputAudioTokens;
    return money(usage.llmInputTokens - audioIn)
      .mul(realtime.textInput)
      .add(money(audioIn).mul(realtime.audioInput))
      .add(money(usage.llmOutputTokens - audioOut).mul(realtime.textOutput))
      .add(money(audioOut).mul(realtime.audioOutput))
      .div(1_000_000)
      .toDecimalPlaces(4);
  }
  const rate = usage.llmModel === null ? undefined : rates.llmModels.get(usage.llmModel);
  if (!rate) return per1k(usage.llmTokens, rates.llmPer1kTokens);
  return money(usage.llmInputTokens).mul(rate.input).add(money(usage.llmOutputTokens).mul(rate.output)).div(1000).toDecimalPlaces(4);
}

/** What a call's speech used, each part's provider named (null: it did not run); `backup`: the agent's backup's share of it. */
export interface SpeechFigures {
  sttSeconds: number;
  ttsCharacters: number;
  sttProvider: string | null;
  ttsProvider: string | null;
  backup?: Pick<BackupUsage, 'sttSeconds' | 'ttsCharacters' | 'sttProvider' | 'ttsProvider'>;
}

/** A conversation's usage with what its speech used, the backup's share of speech beside its model's. */
export function withSpeech(usage: CallUsage, speech: SpeechFigures): CallUsage {
  const { backup, ...own } = speech;
  const ran = backup && (backup.sttSeconds > 0 || backup.ttsCharacters > 0);
  return { ...usage, ...own, ...(ran && { backup: { ...NO_BACKUP_USAGE, ...usage.backup, ...backup } }) };
}

/** The call's own usage and its backup's, apart: the backup's share taken out of the totals, each priced at its own rates. */
function splitByBackup(usage: CallUsage): CallUsage[] {
  const backup = usage.backup;
  if (!backup) return [usage];
  const own: CallUsage = {
    ...usage,
    sttSeconds: usage.sttSeconds - backup.sttSeconds,
    ttsCharacters: usage.ttsCharacters - backup.ttsCharacters,
    llmTokens: usage.llmTokens - backup.llmInputTokens - backup.llmOutputTokens,
    llmInputTokens: usage.llmInputTokens - backup.llmInputTokens,
    llmOutputTokens: usage.llmOutputTokens - backup.llmOutputTokens,
    backup: null,
  };
  const backups: CallUsage = {
    ...NO_USAGE,
    ...backup,
    llmTokens: backup.llmInputTokens + backup.llmOutputTokens,
  };
  return [own, backups];
}

/**
 * Cost per component, billed by the second and rounded to 4 decimals (half-even) each; the total
 * is the sum of the rounded components, so the parts always add up to what the wallet is debited.
 * What an agent's backup ran is priced at its own provider's and model's rates, and added in.
 */
export function costOf(usage: CallUsage, rates: RateCard): { cost: CallCost; total: Money } {
  const perMinute = (seconds: number, rate: Money) => money(seconds).div(60).mul(rate).toDecimalPlaces(4);
  const per1k = (units: number, rate: Money) => money(units).div(1000).mul(rate).toDecimalPlaces(4);
  const [own, backup] = splitByBackup(usage);
  const speech = (part: CallUsage) => ({
    stt: perMinute(part.sttSeconds, rateOf(rates, part.sttProvider, 'sttPerMinute')),
    tts: per1k(part.ttsCharacters, rateOf(rates, part.ttsProvider, 'ttsPer1kCharacters')),
    llm: llmCost(part, rates, per1k),
  });
  const ownParts = speech(own!);
  const backupParts = backup ? speech(backup) : undefined;
  const parts = {
    stt: backupParts ? ownParts.stt.add(backupParts.stt) : ownParts.stt,
    tts: backupParts ? ownParts.tts.add(backupParts.tts) : ownParts.tts,
    llm: backupParts ? ownParts.llm.add(backupParts.llm) : ownParts.llm,
    telephony: perMinute(usage.telephonySeconds, rateOf(rates, usage.telephonyProvider, 'telephonyPerMinute')),
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

export const NO_USAGE: CallUsage = {
  sttSeconds: 0,
  ttsCharacters: 0,
  llmTokens: 0,
  llmInputTokens: 0,
  llmOutputTokens: 0,
  llmInputAudioTokens: 0,
  llmOutputAudioTokens: 0,
  llmModel: null,
  llmProvider: null,
  sttProvider: null,
  ttsProvider: null,
  telephonyProvider: null,
  telephonySeconds: 0,
};
