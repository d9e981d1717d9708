import { SegmentedMessage } from 'sms-segments-calculator';

export type SmsEncoding = 'GSM-7' | 'UCS-2';

/**
 * How an SMS body will be encoded and into how many segments it will be split (what carriers
 * bill). GSM-7 fits 160 characters in one segment and 153 per segment once concatenated; GSM-7
 * extension characters (`€ { } [ ] ~ \ | ^` and form feed) take two of those. One character
 * outside GSM-7 makes the whole message UCS-2: 70 UTF-16 code units in one segment, 67 per
 * segment once concatenated (an emoji outside the BMP takes two). An empty body counts as one
 * segment. Computed by `sms-segments-calculator` (Twilio's segment calculator), without Twilio's
 * Smart Encoding substitutions.
 */
export function smsSegments(body: string): { encoding: SmsEncoding; segments: number } {
  const message = new SegmentedMessage(body, 'auto', false);
  return { encoding: message.encodingName, segments: message.segmentsCount };
}
