import type { FieldError } from '../../platform/errors.ts';
import { fillPlaceholders, placeholdersOf } from '../../platform/placeholders.ts';
import type { SmsTemplate, TemplateMapping } from './schemas.ts';

/** What placeholders are filled from. */
export interface Recipient {
  name: string | null;
  phoneNumber: string;
  email: string | null;
  metadata: Record<string, unknown>;
}

// Filled from every contact; its other fields and metadata may be empty.
const ALWAYS_FILLED = new Set(['phoneNumber']);
const VARIABLE = /^[A-Za-z0-9_.-]+$/;

const valueOf = (key: string, recipient: Recipient): unknown =>
  key === 'name'
    ? recipient.name
    : key === 'phoneNumber'
      ? recipient.phoneNumber
      : key === 'email'
        ? recipient.email
        : recipient.metadata[key];

/**
 * Fills `{{name}}`, `{{phoneNumber}}`, `{{email}}` and `{{<metadata key>}}` from the contact
 * (contract §6); an empty one takes its fallback (`{{name|there}}`), and with none becomes empty
 * rather than reaching the recipient as `{{…}}` (removed with the comma that joined it).
 */
export function fillContactPlaceholders(text: string, recipient: Recipient): string {
  return fillPlaceholders(text, (key) => {
    if (!VARIABLE.test(key)) return undefined;
    const value = valueOf(key, recipient);
    return value === null || value === undefined ? null : typeof value === 'object' ? JSON.stringify(value) : String(value);
  });
}

/** Each text whose placeholder may be empty for a contact and gives no fallback, with that variable. */
export function placeholdersWithoutFallback(texts: { text: string; path: string }[]): { path: string; variable: string }[] {
  return texts.flatMap(({ text, path }) => {
    const missing = placeholdersOf(text).find(
      ({ variable, fallback }) => VARIABLE.test(variable) && !ALWAYS_FILLED.has(variable) && !fallback,
    );
    return missing ? [{ path, variable: missing.variable }] : [];
  });
}

/** `es-MX`, `ES_mx` → `es_MX`; `EN` → `en`. */
export function canonicalLanguageCode(code: string): string {
  const [language, region] = code.split(/[-_]/);
  if (!region) return language!.toLowerCase();
  return `${language!.toLowerCase()}_${region.length === 2 ? region.toUpperCase() : region[0]!.toUpperCase() + region.slice(1).toLowerCase()}`;
}

/** Field errors for a second mapping of the same (process, callStatus, languageCode). */
export function duplicateMappings(templates: { process: string; callStatus: string; languageCode: string }[]): FieldError[] {
  const seen = new Map<string, number>();
  const errors: FieldError[] = [];
  templates.forEach((template, index) => {
    const key = `${template.process}/${template.callStatus}/${template.languageCode}`;
    const first = seen.get(key);
    if (first === undefined) seen.set(key, index);
    else
      errors.push({
        path: `/templates/${index}`,
        message: `repeats templates/${first}: one mapping per process, callStatus and languageCode`,
      });
  });
  return errors;
}

/** Field errors for a second SMS template of the same callStatus. */
export function duplicateSmsTemplates(templates: { callStatus: string }[]): FieldError[] {
  const seen = new Map<string, number>();
  const errors: FieldError[] = [];
  templates.forEach((template, index) => {
    const first = seen.get(template.callStatus);
    if (first === undefined) seen.set(template.callStatus, index);
    else errors.push({ path: `/templates/${index}/callStatus`, message: `repeats templates/${first}: one template per callStatus` });
  });
  return errors;
}

/**
 * Contract §6: the mapping of the call's (direction, outcome) in the contact's language, where
 * `es` matches `es_ES` and `es_MX` prefers `es_MX` over `es_ES`; else the first listed for the pair.
 */
export function chooseWhatsAppMapping(
  templates: TemplateMapping[],
  direction: string,
  outcome: string,
  contactLanguage: unknown,
): TemplateMapping | undefined {
  const candidates = templates.filter((template) => template.process === direction && template.callStatus === outcome);
  if (candidates.length === 0) return undefined;
  if (typeof contactLanguage === 'string' && /^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,4})?$/.test(contactLanguage)) {
    const wanted = canonicalLanguageCode(contactLanguage);
    const primary = wanted.split('_')[0]!;
    const exact = candidates.find((template) => canonicalLanguageCode(template.languageCode) === wanted);
    const sameLanguage = candidates.find((template) => canonicalLanguageCode(template.languageCode).split('_')[0] === primary);
    if (exact ?? sameLanguage) return exact ?? sameLanguage;
  }
  return candidates[0];
}

/** Contract §6: BUSY and FAILED calls use the UNANSWERED SMS template. */
export function chooseSmsTemplate(templates: SmsTemplate[], outcome: string): SmsTemplate | undefined {
  const callStatus = outcome === 'ANSWERED' ? 'ANSWERED' : 'UNANSWERED';
  return templates.find((template) => template.callStatus === callStatus);
}
