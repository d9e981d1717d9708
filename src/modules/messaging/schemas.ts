import { SMS_PROVIDER_NAMES } from '../../providers/registry.ts';
import { Type, type Static } from '@sinclair/typebox';
import { PageQuery } from '../../platform/pagination.ts';
import { Nullable, PATTERN_MESSAGE, StringEnum, Timestamp, Uuid } from '../../platform/schemas.ts';

/** Seed §8: at most 20 WhatsApp template mappings. */
export const MAX_WHATSAPP_TEMPLATES = 20;
export const DEFAULT_LANGUAGE_CODE = 'en_US';

export const PROCESSES = ['INCOMING', 'OUTGOING'] as const;
export const WHATSAPP_CALL_STATUSES = ['ANSWERED', 'UNANSWERED', 'FAILED', 'BUSY'] as const;
export const SMS_CALL_STATUSES = ['ANSWERED', 'UNANSWERED'] as const;
/** SMS providers the service sends through; `senderProvider` is one of these, stored upper-case. */
export const SMS_PROVIDERS = SMS_PROVIDER_NAMES;
export type SmsProviderName = string;

const CampaignName = Type.String({ minLength: 1, maxLength: 200 });
// WhatsApp's template language codes: en, en_US, pt_BR, zh_HK, sr_Latn… (any case accepted).
const LanguageCode = Type.String({
  pattern: '^[A-Za-z]{2,3}([_-][A-Za-z0-9]{2,4})?$',
  [PATTERN_MESSAGE]: 'a language code such as en, es or en_US',
  maxLength: 12,
  description: `WhatsApp template language such as en_US or es; default ${DEFAULT_LANGUAGE_CODE}.`,
});
const PhoneNumberId = Type.String({
  pattern: '^[0-9]{1,32}$',
  [PATTERN_MESSAGE]: 'the digits of a WhatsApp phone number ID',
  description: "Sender phone number ID at WhatsApp (digits); overrides the integration's default sender.",
});
const Placeholders =
  'Placeholders {{name}}, {{phoneNumber}}, {{email}} and {{<metadata key>}} are filled from the contact; all but {{phoneNumber}} may be empty, so each needs a fallback, as in {{name|there}}.';

const TemplateMappingInput = Type.Object(
  {
    templateName: Type.String({
      minLength: 1,
      maxLength: 512,
      pattern: '^[a-z0-9_]+$',
      [PATTERN_MESSAGE]: 'a template name as WhatsApp writes them: lower-case letters, digits and underscores',
      description: 'Name of an approved template (lower-case letters, digits and underscores).',
    }),
    languageCode: Type.Optional(LanguageCode),
    process: StringEnum(PROCESSES, { description: 'The call direction: INCOMING or OUTGOING.' }),
    callStatus: StringEnum(WHATSAPP_CALL_STATUSES, { description: 'The call outcome this mapping answers.' }),
    bodyParameters: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 1024 }), {
        maxItems: 10,
        description: `Values of the template body's {{1}}, {{2}}… in order (default none). ${Placeholders}`,
      }),
    ),
  },
  { additionalProperties: false },
);

const TemplateMapping = Type.Object({
  id: Type.String({ description: 'Assigned by the service.' }),
  templateName: Type.String(),
  languageCode: Type.String(),
  process: StringEnum(PROCESSES),
  callStatus: StringEnum(WHATSAPP_CALL_STATUSES),
  bodyParameters: Type.Array(Type.String()),
});
export type TemplateMapping = Static<typeof TemplateMapping>;

const WhatsAppTemplates = Type.Array(TemplateMappingInput, {
  maxItems: MAX_WHATSAPP_TEMPLATES,
  description: `At most ${MAX_WHATSAPP_TEMPLATES}; at most one per (process, callStatus, languageCode).`,
});

export const WhatsAppCampaign = Type.Object({
  id: Uuid,
  tenantId: Uuid,
  agentId: Uuid,
  name: Type.String(),
  phoneNumberId: Nullable(Type.String(), { description: "The sender; null: the WhatsApp integration's default sender." }),
  isActive: Type.Boolean(),
  templates: Type.Array(TemplateMapping),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type WhatsAppCampaign = Static<typeof WhatsAppCampaign>;

export const CreateWhatsAppCampaignBody = Type.Object(
  {
    agentId: Uuid,
    name: Type.Optional(CampaignName),
    phoneNumberId: Type.Optional(PhoneNumberId),
    isActive: Type.Optional(Type.Boolean({ default: true })),
    templates: WhatsAppTemplates,
  },
  { additionalProperties: false },
);
export type CreateWhatsAppCampaignBody = Static<typeof CreateWhatsAppCampaignBody>;

export const UpdateWhatsAppCampaignBody = Type.Object(
  {
    name: Type.Optional(CampaignName),
    phoneNumberId: Type.Optional(Nullable(PhoneNumberId)),
    isActive: Type.Optional(Type.Boolean()),
    templates: Type.Optional(WhatsAppTemplates),
  },
  { additionalProperties: false },
);
export type UpdateWhatsAppCampaignBody = Static<typeof UpdateWhatsAppCampaignBody>;
export type TemplateMappingInput = Static<typeof TemplateMappingInput>;

export const CampaignQuery = Type.Object({ ...PageQuery.properties, agentId: Type.Optional(Uuid) });
export type CampaignQuery = Static<typeof CampaignQuery>;

// ---------------------------------------------------------------------------------------------

const SmsTemplateInput = Type.Object(
  {
    callStatus: StringEnum(SMS_CALL_STATUSES, { description: 'ANSWERED, or UNANSWERED (also used after BUSY and FAILED calls).' }),
    messageBody: Type.String({ minLength: 1, maxLength: 1600, description: `The text. ${Placeholders}` }),
    dltSenderId: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 32 }), { description: 'DLT header / sender ID (India).' })),
    dltTemplateId: Type.Optional(
      Nullable(Type.String({ minLength: 1, maxLength: 64 }), {
        description: 'DLT template ID (India); MSG91 fails a message without one.',
      }),
    ),
  },
  { additionalProperties: false },
);
export type SmsTemplateInput = Static<typeof SmsTemplateInput>;

const SmsTemplate = Type.Object({
  id: Type.String({ description: 'Assigned by the service.' }),
  callStatus: StringEnum(SMS_CALL_STATUSES),
  messageBody: Type.String(),
  dltSenderId: Nullable(Type.String()),
  dltTemplateId: Nullable(Type.String()),
});
export type SmsTemplate = Static<typeof SmsTemplate>;

const SmsTemplates = Type.Array(SmsTemplateInput, { maxItems: SMS_CALL_STATUSES.length, description: 'At most one per callStatus.' });
const SenderNumber = Type.String({
  pattern: '^(\\+[1-9][0-9]{6,14}|[A-Za-z0-9]{3,11})$',
  [PATTERN_MESSAGE]: 'a phone number in E.164 (+14155550100) or a sender ID of 3 to 11 letters and digits',
  description: 'An E.164 number, or an alphanumeric sender ID of 3 to 11 characters.',
});
const SenderProvider = Type.String({
  minLength: 1,
  maxLength: 32,
  description: `One of ${SMS_PROVIDERS.join(', ')} (any case; stored upper-case).`,
});

export const SmsCampaign = Type.Object({
  id: Uuid,
  tenantId: Uuid,
  agentId: Uuid,
  name: Type.String(),
  senderNumber: Type.String(),
  senderProvider: Type.String(),
  isActive: Type.Boolean(),
  templates: Type.Array(SmsTemplate),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type SmsCampaign = Static<typeof SmsCampaign>;

export const CreateSmsCampaignBody = Type.Object(
  {
    agentId: Uuid,
    name: Type.Optional(CampaignName),
    senderNumber: SenderNumber,
    senderProvider: SenderProvider,
    isActive: Type.Optional(Type.Boolean({ default: true })),
    templates: Type.Optional(SmsTemplates),
  },
  { additionalProperties: false },
);
export type CreateSmsCampaignBody = Static<typeof CreateSmsCampaignBody>;

export const UpdateSmsCampaignBody = Type.Object(
  {
    name: Type.Optional(CampaignName),
    senderNumber: Type.Optional(SenderNumber),
    senderProvider: Type.Optional(SenderProvider),
    isActive: Type.Optional(Type.Boolean()),
    templates: Type.Optional(SmsTemplates),
  },
  { additionalProperties: false },
);
export type UpdateSmsCampaignBody = Static<typeof UpdateSmsCampaignBody>;

// ---------------------------------------------------------------------------------------------

export const CHANNELS = ['WHATSAPP', 'SMS'] as const;
export type Channel = (typeof CHANNELS)[number];
export const MESSAGE_STATUSES = ['QUEUED', 'SENDING', 'SENT', 'DELIVERED', 'READ', 'FAILED'] as const;
export type MessageStatus = (typeof MESSAGE_STATUSES)[number];

export const Message = Type.Object({
  id: Uuid,
  channel: StringEnum(CHANNELS),
  callId: Uuid,
  agentId: Nullable(Uuid),
  campaignId: Nullable(Uuid, { description: 'The WhatsApp or SMS campaign that sent it.' }),
  contactId: Nullable(Uuid),
  toNumber: Type.String(),
  sender: Nullable(Type.String()),
  provider: Type.String(),
  templateName: Nullable(Type.String()),
  languageCode: Nullable(Type.String()),
  body: Nullable(
    Type.String({
      description:
        'The text as sent: an SMS, or a WhatsApp message an agent wrote during a call; null for WhatsApp templates (see templateName and parameters).',
    }),
  ),
  parameters: Type.Array(Type.String()),
  encoding: Nullable(Type.String({ description: 'SMS: GSM-7 or UCS-2.' })),
  segments: Nullable(Type.Integer({ description: 'SMS: parts the text is sent in.' })),
  status: StringEnum(MESSAGE_STATUSES),
  providerMessageId: Nullable(Type.String()),
  failureReason: Nullable(Type.String()),
  attempts: Type.Integer(),
  sentAt: Nullable(Timestamp),
  deliveredAt: Nullable(Timestamp),
  readAt: Nullable(Timestamp),
  failedAt: Nullable(Timestamp),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type Message = Static<typeof Message>;

export const MessageQuery = Type.Object({
  ...PageQuery.properties,
  channel: Type.Optional(
    Type.String({
      pattern: '^([Ww][Hh][Aa][Tt][Ss][Aa][Pp][Pp]|[Ss][Mm][Ss])$',
      [PATTERN_MESSAGE]: 'WHATSAPP or SMS',
      description: 'WHATSAPP or SMS (any case).',
    }),
  ),
  callId: Type.Optional(Uuid),
  status: Type.Optional(StringEnum(MESSAGE_STATUSES)),
});
export type MessageQuery = Static<typeof MessageQuery>;

export const WebhookToken = Type.Object({ token: Type.String() });

export const WhatsAppSenderNumber = Type.Object({
  id: Type.String(),
  displayPhoneNumber: Type.String(),
  verifiedName: Type.String(),
  qualityRating: Type.String(),
});

export const VerifyQuery = Type.Object({
  'hub.mode': Type.Optional(Type.String()),
  'hub.verify_token': Type.Optional(Type.String()),
  'hub.challenge': Type.Optional(Type.String()),
});

export const UNCONFIRMED_POLICIES = ['FAIL', 'RESEND'] as const;

/** The tenant's messaging settings (contract: our decision where the seed is silent). */
export const MessagingSettings = Type.Object(
  {
    unconfirmedMessagePolicy: StringEnum(UNCONFIRMED_POLICIES, {
      description:
        'What becomes of a message whose worker stopped while the provider was being asked, so that whether it was sent is unknown: FAIL (the default) marks it FAILED and never sends it twice; RESEND sends it again, accepting that the recipient may get it twice. Either way a message.unconfirmed webhook tells the outcome.',
    }),
    optOutConfirmation: Type.Optional(
      Type.Object(
        {
          enabled: Type.Boolean({ description: 'Send the confirmation (default true).' }),
          text: Type.Union([Type.String({ minLength: 1, maxLength: 320 }), Type.Null()], {
            description: 'What it says; null: "You will not be contacted again. This is the last message you will receive from us."',
          }),
          dltSenderId: Type.Union([Type.String({ minLength: 1, maxLength: 20 }), Type.Null()], {
            description: 'MSG91 (India DLT): the registered header the confirmation is sent from.',
          }),
          dltTemplateId: Type.Union([Type.String({ minLength: 1, maxLength: 40 }), Type.Null()], {
            description: 'MSG91 (India DLT): the registered template of the confirmation text (MSG91 sends nothing without one).',
          }),
        },
        {
          additionalProperties: false,
          description:
            'The one message a person who opts out by a reply (STOP…) gets, on the channel they used; never a second. Not sent for Twilio SMS, which confirms opt-outs itself. Omitted on PUT: unchanged.',
        },
      ),
    ),
  },
  { additionalProperties: false },
);
export type MessagingSettings = Static<typeof MessagingSettings>;
