import { Type } from '@sinclair/typebox';
import { ApiOrigin } from '../../platform/settings.ts';
import { Credential, PATTERN_MESSAGE } from '../../platform/schemas.ts';
import type { Provider } from '../types.ts';
import { twilioConversationRelay } from './conversation-relay.ts';
import { twilioMediaStream } from './media-stream.ts';
import { twilioSms } from './sms.ts';
import { twilioTelephony } from './telephony.ts';

/** Twilio: calls (Programmable Voice) and SMS (Programmable Messaging) with one account. */
export const twilio: Provider = {
  name: 'TWILIO',
  title: 'Twilio',
  integration: {
    kind: 'twilio',
    body: Type.Object(
      {
        accountSid: Type.String({
          pattern: '^AC[0-9a-fA-F]{32}$',
          [PATTERN_MESSAGE]: 'a Twilio Account SID: AC and 32 hexadecimal digits',
          description: 'Twilio Account SID (AC followed by 32 hex digits).',
        }),
        authToken: Credential({ minLength: 16, maxLength: 128, description: 'Twilio Auth Token; stored encrypted, never returned.' }),
      },
      { additionalProperties: false },
    ),
    secrets: ['authToken'],
    summary: 'Connect Twilio (Account SID and Auth Token) for calls and SMS',
  },
  settings: { TWILIO_API_URL: ApiOrigin('https://api.twilio.com', "Base URL of Twilio's REST API (a local fake in tests).") },
  telephony: { ...twilioTelephony, mediaStream: twilioMediaStream, conversationRelay: twilioConversationRelay },
  sms: twilioSms,
};
