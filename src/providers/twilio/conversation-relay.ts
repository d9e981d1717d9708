/**
 * Twilio ConversationRelay (`<Connect><ConversationRelay>`): Twilio listens (its speech-to-text)
 * and speaks (its text-to-speech) on the call, and carries only text over a WebSocket it opens to
 * us: JSON messages `setup` (the call and our custom parameters), `prompt` (the caller's words;
 * `last` once the utterance is complete), `interrupt` (the caller spoke over the agent, with what
 * was heard until then), `dtmf` and `error`. We answer with `text` tokens (`last` closes a reply)
 * and `end`. The upgrade is signed with `X-Twilio-Signature` over the relay URL, like a media stream.
 * https://www.twilio.com/docs/voice/twiml/connect/conversationrelay
 * https://www.twilio.com/docs/voice/conversationrelay/websocket-messages
 */
import { storableText } from '../../platform/input.ts';
import { ProviderError } from '../errors.ts';
import type { ConversationRelayEvent, ConversationRelayWire } from '../types.ts';
import { parseMessage, textParameters } from '../media-messages.ts';
import { twilioMediaStream } from './media-stream.ts';

const malformed = (why: string) => new ProviderError(`Twilio ConversationRelay: ${why}`, { retryable: false });

function read(message: string): ConversationRelayEvent {
  const parsed = parseMessage(message, malformed);
  switch (parsed.type) {
    case 'setup': {
      if (typeof parsed.callSid !== 'string' || parsed.callSid === '') throw malformed('a setup message without its callSid.');
      return { type: 'setup', providerCallId: parsed.callSid, parameters: textParameters(parsed.customParameters) };
    }
    case 'prompt':
      if (typeof parsed.voicePrompt !== 'string') throw malformed('a prompt message without its voicePrompt.');
      return { type: 'prompt', text: storableText(parsed.voicePrompt), last: parsed.last !== false };
    case 'interrupt':
      return {
        type: 'interrupt',
        heard: typeof parsed.utteranceUntilInterrupt === 'string' ? storableText(parsed.utteranceUntilInterrupt) : '',
      };
    case 'dtmf':
      if (typeof parsed.digit !== 'string' || !/^[0-9*#A-D]$/.test(parsed.digit)) throw malformed('a dtmf message without a key.');
      return { type: 'dtmf', digit: parsed.digit };
    case 'error':
      return { type: 'error', description: typeof parsed.description === 'string' ? parsed.description : JSON.stringify(parsed) };
    case 'info':
    case 'debug':
      return { type: 'other' };
    default:
      throw malformed(`an unknown message type ${JSON.stringify(String(parsed.type)).slice(0, 40)}.`);
  }
}

export const twilioConversationRelay: ConversationRelayWire = {
  signatureHeader: twilioMediaStream.signatureHeader,
  // Signed as a media stream's upgrade is: over the URL we gave, with no parameters.
  verifyUpgrade: twilioMediaStream.verifyUpgrade,
  read,
  text: (token, last) => JSON.stringify({ type: 'text', token, last }),
  end: (handoff) => JSON.stringify({ type: 'end', handoffData: handoff }),
};
