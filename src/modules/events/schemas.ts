import { Type, type Static } from '@sinclair/typebox';
import { PageQuery } from '../../platform/pagination.ts';
import { StringEnum, Timestamp, Uuid } from '../../platform/schemas.ts';

/** Contract §9: the event types posted to webhooks. */
export const EVENT_TYPES = [
  'call.completed',
  'campaign.status_changed',
  'knowledge_source.processed',
  'wallet.low_balance',
  'appointment.booked',
  'payment_promise.recorded',
  'message.unconfirmed',
  'call.scorecard_failed',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
export const DELIVERY_STATUSES = ['PENDING', 'DELIVERED', 'FAILED'] as const;

const Attempt = Type.Object({
  attempt: Type.Integer(),
  at: Timestamp,
  statusCode: Type.Union([Type.Integer(), Type.Null()], { description: "The receiver's HTTP status; null when no answer came." }),
  error: Type.Union([Type.String(), Type.Null()]),
  durationMs: Type.Integer(),
});

export const Delivery = Type.Object({
  id: Uuid,
  eventId: Uuid,
  eventType: StringEnum(EVENT_TYPES),
  apiKeyId: Uuid,
  url: Type.String(),
  status: StringEnum(DELIVERY_STATUSES),
  attemptCount: Type.Integer(),
  lastStatusCode: Type.Union([Type.Integer(), Type.Null()]),
  lastError: Type.Union([Type.String(), Type.Null()]),
  deliveredAt: Type.Union([Timestamp, Type.Null()]),
  payload: Type.Object(
    { type: Type.String(), timestamp: Timestamp, data: Type.Record(Type.String(), Type.Unknown()) },
    { description: 'The body posted (Standard Webhooks structure).' },
  ),
  attempts: Type.Array(Attempt),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type Delivery = Static<typeof Delivery>;

export const DeliveryQuery = Type.Object({
  ...PageQuery.properties,
  status: Type.Optional(StringEnum(DELIVERY_STATUSES)),
  eventType: Type.Optional(StringEnum(EVENT_TYPES)),
});
export type DeliveryQuery = Static<typeof DeliveryQuery>;
