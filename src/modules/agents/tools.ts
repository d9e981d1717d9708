/**
 * The tools an agent may use during a call (contract §3). One fixed catalogue: an agent's `tools`
 * name entries of it, and `GET /analytics/tools` lists it.
 */
export interface AgentTool {
  name: string;
  description: string;
}

export const AGENT_TOOLS: readonly AgentTool[] = [
  { name: 'end_call', description: 'Ends the call politely when the conversation is over.' },
  { name: 'transfer_call', description: 'Transfers the caller to a human at a configured number.' },
  { name: 'knowledge_search', description: "Looks up answers in the agent's knowledge bases." },
  { name: 'send_sms', description: 'Sends the contact an SMS during or after the call.' },
  { name: 'send_whatsapp', description: 'Sends the contact a WhatsApp message during or after the call.' },
  { name: 'book_appointment', description: 'Books an appointment at a time agreed with the contact.' },
  { name: 'collect_payment_promise', description: 'Records the amount and date a contact promises to pay.' },
];

const TOOL_NAMES = new Set(AGENT_TOOLS.map((tool) => tool.name));

export const isAgentTool = (name: string): boolean => TOOL_NAMES.has(name);
