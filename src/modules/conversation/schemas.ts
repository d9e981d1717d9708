import { Type, type Static } from '@sinclair/typebox';
import { Nullable, StringEnum, Timestamp, Uuid } from '../../platform/schemas.ts';
import {
  CallCostSchema as CallCost,
  CallUsageSchema as CallUsage,
  END_REASONS,
  TranscriptTurnSchema as TranscriptTurn,
} from '../calls/service.ts';

export const TestChat = Type.Object({
  id: Uuid,
  agentId: Uuid,
  status: StringEnum(['OPEN', 'ENDED'], {
    description: 'ENDED once the agent ended the conversation, or the browser call it was spoken on is over; a new chat starts over.',
  }),
  endReason: Nullable(StringEnum(END_REASONS)),
  brain: Type.String({
    description:
      "Who answers: 'model:<name>' (a language model) or 'retrieval-agent' (no model is configured: answers come from knowledge).",
  }),
  transcript: Type.Array(TranscriptTurn),
  usage: CallUsage,
  cost: Type.Object(
    { ...CallCost.properties },
    { description: "What the chat's model use cost so far (a test cost, debited from the wallet like a call's)." },
  ),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type TestChat = Static<typeof TestChat>;

/** Who the agent believes it talks to in a test (a chat, a test suite's scenario): fills the prompt's {{name}}, {{metadata.*}}… */
export const TestContact = Type.Object(
  {
    name: Type.Optional(Type.String({ maxLength: 200 })),
    phoneNumber: Type.Optional(Type.String({ maxLength: 40 })),
    email: Type.Optional(Type.String({ maxLength: 320 })),
    metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { additionalProperties: false, description: "Who the agent believes it talks to: fills the prompt's {{name}}, {{metadata.*}}…" },
);

export const CreateTestChatBody = Type.Object({ agentId: Uuid, contact: Type.Optional(TestContact) }, { additionalProperties: false });
export type CreateTestChatBody = Static<typeof CreateTestChatBody>;

export const TestChatMessageBody = Type.Object(
  { text: Type.String({ minLength: 1, maxLength: 2000, description: 'What the person says to the agent.' }) },
  { additionalProperties: false },
);
export type TestChatMessageBody = Static<typeof TestChatMessageBody>;
