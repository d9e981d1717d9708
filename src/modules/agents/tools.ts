/**
 * The tools an agent may use during a call (contract §3). One fixed catalogue: an agent's `tools`
 * name entries of it, `GET /analytics/tools` lists it, and the model is given each tool's
 * description and the JSON Schema of its arguments, which are checked before the tool runs.
 */
export interface AgentTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  /** Offered to every agent's model whatever its `tools` say: a person's right that no setting turns off. */
  alwaysOffered?: boolean;
}

const object = (properties: Record<string, unknown>, required: string[] = []) => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
});
const reason = { type: 'string', maxLength: 300, description: 'Why, in a few words.' };
const notes = { type: 'string', maxLength: 500, description: 'Anything the person added.' };
const message = { type: 'string', minLength: 1, maxLength: 1000, description: 'The message, in the language of the conversation.' };

export const AGENT_TOOLS: readonly AgentTool[] = [
  {
    name: 'end_call',
    description: 'Ends the call politely when the conversation is over. Say goodbye first, in the same reply.',
    parameters: object({ reason }),
  },
  {
    name: 'transfer_call',
    description:
      "Transfers the caller to a human at the agent's transfer number, when they ask for a person or need one. Tell the caller first, in the same reply.",
    parameters: object({
      reason,
      summary: {
        type: 'string',
        maxLength: 500,
        description:
          'For the person taking the call, who hears it before being connected: who is calling and what they need, in one or two sentences.',
      },
    }),
  },
  {
    name: 'knowledge_search',
    description: "Looks up answers in the agent's knowledge bases. Use it before answering a factual question.",
    parameters: object({ query: { type: 'string', minLength: 1, maxLength: 500, description: 'What to look up, as a short question.' } }, [
      'query',
    ]),
  },
  {
    name: 'send_sms',
    description: 'Sends the contact an SMS during or after the call (a link, an address, a confirmation).',
    parameters: object({ text: message }, ['text']),
  },
  {
    name: 'send_whatsapp',
    description: 'Sends the contact a WhatsApp message during or after the call.',
    parameters: object({ text: message }, ['text']),
  },
  {
    name: 'book_appointment',
    description: 'Books an appointment at a time agreed with the contact.',
    parameters: object(
      {
        start: {
          type: 'string',
          format: 'date-time',
          description: 'When it starts, ISO-8601 with its UTC offset, such as 2026-12-01T10:30:00+01:00.',
        },
        durationMinutes: { type: 'integer', minimum: 5, maximum: 480, description: 'How long, in minutes.' },
        notes,
      },
      ['start'],
    ),
  },
  {
    name: 'collect_payment_promise',
    description: 'Records the amount and date a contact promises to pay.',
    parameters: object(
      {
        amount: { type: 'number', exclusiveMinimum: 0, description: 'The amount promised.' },
        currency: { type: 'string', pattern: '^[A-Z]{3}$', description: 'ISO 4217 code, such as USD.' },
        date: { type: 'string', format: 'date', description: 'The day they will pay, YYYY-MM-DD.' },
        notes,
      },
      ['amount', 'date'],
    ),
  },
  {
    name: 'press_digits',
    description:
      'Presses keys on the phone, when a phone menu answered ("press 1 for…"): the digits of the option that reaches the person or department needed. Say nothing to the menu.',
    parameters: object(
      {
        digits: {
          type: 'string',
          pattern: '^[0-9*#w]{1,32}$',
          description: "The keys, in order: 0-9, * and #; w waits half a second between keys (an extension: '1w2w3').",
        },
      },
      ['digits'],
    ),
  },
  {
    name: 'opt_out',
    description:
      'Puts the person on the do-not-call list when they ask not to be called or contacted again; no call or message of any campaign reaches them afterwards. Confirm it and say goodbye in the same reply: the call then ends.',
    parameters: object({}),
    alwaysOffered: true,
  },
];

const TOOL_NAMES = new Set(AGENT_TOOLS.map((tool) => tool.name));

export const isAgentTool = (name: string): boolean => TOOL_NAMES.has(name);
