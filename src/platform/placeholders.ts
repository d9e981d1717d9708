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

// Stands where an empty placeholder without a fallback was, until the text around it is tidied.
const EMPTY = '\uE000';

/**
 * `text` with each placeholder filled: `valueOf` answers a variable's value (null or '' when it has
 * none, then the fallback is used), or undefined for a name that is no variable, whose placeholder
 * is left as written. An empty placeholder with no fallback goes with the space and comma (or
 * semicolon, colon) that joined it to the sentence ("Hi {{name}}, this is…" → "Hi, this is…"; "Thanks, {{name}}." →
 * "Thanks."), so a person never reads "Hi , …".
 */
export function fillPlaceholders(text: string, valueOf: (variable: string) => string | null | undefined): string {
  const filled = text.replace(PLACEHOLDER, (whole, variable: string, fallback: string | undefined) => {
    const value = valueOf(variable);
    if (value === undefined) return whole;
    return value === null || value === '' ? (fallback?.trim() ?? EMPTY) : value;
  });
  if (!filled.includes(EMPTY)) return filled;
  return filled.replace(/[ \t]*[,;:]?[ \t]*\uE000(?=[.,!?;:])/g, '').replace(/^\uE000[ \t]*|[ \t]*\uE000/gm, '');
}
