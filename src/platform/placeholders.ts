/**
 * The one placeholder syntax of every text the service fills per person (an agent's prompts and
 * first message, a voicemail, SMS bodies, WhatsApp parameters): `{{variable}}`, or
 * `{{variable|fallback}}`, whose fallback is used when the variable has no value, so
 * "Hi {{name|there}}" never reaches anyone as "Hi ,".
 */
const PLACEHOLDER = /\{\{\s*([^{}|]*?)\s*(?:\|([^{}]*))?\}\}/g;

export interface Placeholder {
  variable: string;
  /** What stands in for an empty value; undefined when the placeholder gives none. */
  fallback: string | undefined;
}

/** Every placeholder of `text`, in order. */
export const placeholdersOf = (text: string): Placeholder[] =>
  [...text.matchAll(PLACEHOLDER)].map((match) => ({ variable: match[1]!, fallback: match[2]?.trim() }));

/**
 * `text` with each placeholder filled: `valueOf` answers a variable's value (null or '' when it has
 * none, then the fallback or nothing is used), or undefined for a name that is no variable, whose
 * placeholder is left as written.
 */
export function fillPlaceholders(text: string, valueOf: (variable: string) => string | null | undefined): string {
  return text.replace(PLACEHOLDER, (whole, variable: string, fallback: string | undefined) => {
    const value = valueOf(variable);
    if (value === undefined) return whole;
    return value === null || value === '' ? (fallback?.trim() ?? '') : value;
  });
}
