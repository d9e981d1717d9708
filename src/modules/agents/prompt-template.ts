/**
 * An agent's system prompt and first message are templates: `{{name}}`, `{{metadata.plan}}`,
 * `{{campaign.name}}`, `{{now}}`… filled per call. The variables are a fixed set, so a template
 * is checked when the agent is saved and an unknown variable never reaches a live call.
 */
import { fillPlaceholders, placeholdersOf } from '../../platform/placeholders.ts';

/** The variables a template may use, with what each holds (the API docs and the dashboard list them). */
export const TEMPLATE_VARIABLES: readonly { name: string; description: string }[] = [
  { name: 'name', description: "The contact's name (empty when unknown)." },
  { name: 'phone', description: "The contact's phone number, E.164." },
  { name: 'email', description: "The contact's email (empty when unknown)." },
  { name: 'metadata.<key>', description: "A field of the contact's metadata, such as metadata.plan (empty when absent)." },
  {
    name: 'variables.<key>',
    description: "A variable the campaign's pre-dial webhook gave for this call, such as variables.offer (empty when absent).",
  },
  { name: 'campaign.name', description: 'The campaign that placed the call (empty for inbound calls and test chats).' },
  { name: 'agent.name', description: "The agent's own name." },
  { name: 'now', description: "The current date and time in the contact's time zone, such as 'Tuesday, 24 November 2026 at 15:04'." },
  { name: 'date', description: "Today's date in the contact's time zone, YYYY-MM-DD." },
  { name: 'time', description: "The current time in the contact's time zone, HH:MM." },
  { name: 'timezone', description: "The contact's time zone, such as Europe/Madrid." },
];

const PLAIN = new Set(['name', 'phone', 'email', 'campaign.name', 'agent.name', 'now', 'date', 'time', 'timezone']);
// The variables every call and chat fills; the others (the contact's fields, metadata, pre-dial
// variables, the campaign) may be empty, so a text said to the person needs a fallback for them.
const ALWAYS_FILLED = new Set(['agent.name', 'now', 'date', 'time', 'timezone']);
// Metadata keys as the CSV import and the API store them: letters, digits, _ and -.
const METADATA = /^metadata\.[A-Za-z0-9_-]{1,64}$/;
// Pre-dial variables, named as the webhook may name them.
const VARIABLES = /^variables\.[A-Za-z0-9_-]{1,64}$/;

/** The variables a template names, in order, each once. */
export function templateVariables(template: string): string[] {
  return [...new Set(placeholdersOf(template).map((placeholder) => placeholder.variable))];
}

/** The first variable of `template` that may be empty on a call and has no fallback, or undefined. */
export const variableWithoutFallback = (template: string): string | undefined =>
  placeholdersOf(template).find(({ variable, fallback }) => !ALWAYS_FILLED.has(variable) && !fallback)?.variable;

export const isTemplateVariable = (variable: string): boolean => PLAIN.has(variable) || METADATA.test(variable) || VARIABLES.test(variable);

/** The first variable of `template` that is not one of TEMPLATE_VARIABLES, or undefined. */
export const unknownVariable = (template: string): string | undefined => templateVariables(template).find((v) => !isTemplateVariable(v));

/** What the variables hold for one call or chat. */
export interface TemplateValues {
  name: string | null;
  phone: string | null;
  email: string | null;
  metadata: Record<string, unknown>;
  /** The pre-dial webhook's variables for this call (none outside such a campaign). */
  variables?: Record<string, string>;
  campaignName: string | null;
  agentName: string;
  now: Date;
  timezone: string;
}

function valueOf(variable: string, values: TemplateValues): string {
  const local = (options: Intl.DateTimeFormatOptions) =>
    new Intl.DateTimeFormat('en-GB', { timeZone: values.timezone, ...options }).format(values.now);
  switch (variable) {
    case 'name':
      return values.name ?? '';
    case 'phone':
      return values.phone ?? '';
    case 'email':
      return values.email ?? '';
    case 'campaign.name':
      return values.campaignName ?? '';
    case 'agent.name':
      return values.agentName;
    case 'timezone':
      return values.timezone;
    case 'now':
      return local({
        weekday: 'long',
        day: 'numeric',
        month: 'long',
        year: 'numeric',
        hour: '2-digit',
        minute: '2-digit',
        hourCycle: 'h23',
      });
    case 'date':
      return new Intl.DateTimeFormat('en-CA', { timeZone: values.timezone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(
        values.now,
      );
    case 'time':
      return local({ hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
  }
  if (variable.startsWith('variables.')) return values.variables?.[variable.slice('variables.'.length)] ?? '';
  const field = values.metadata[variable.slice('metadata.'.length)];
  if (field === undefined || field === null) return '';
  return typeof field === 'string' ? field : JSON.stringify(field);
}

/** The template with every variable filled, an empty one by its fallback. */
export const renderTemplate = (template: string, values: TemplateValues): string =>
  fillPlaceholders(template, (variable) => (isTemplateVariable(variable) ? valueOf(variable, values) : undefined));
