import { describe, expect, it } from 'vitest';
import { fillPlaceholders, placeholdersOf } from './placeholders.ts';

const contact = (values: Record<string, string | null>) => (variable: string) => (variable in values ? values[variable] : undefined);

describe('placeholders', () => {
  it('fills a value, else the fallback', () => {
    expect(fillPlaceholders('Hi {{name|there}}!', contact({ name: 'Ana' }))).toBe('Hi Ana!');
    expect(fillPlaceholders('Hi {{name|there}}!', contact({ name: null }))).toBe('Hi there!');
    expect(fillPlaceholders('Hi {{ name | there }}!', contact({ name: '' }))).toBe('Hi there!');
  });

  it('leaves a name that is no variable as written', () => {
    expect(fillPlaceholders('Code {{unknown}}', contact({}))).toBe('Code {{unknown}}');
  });

  it('removes an empty placeholder without a fallback with the space and comma that joined it', () => {
    const empty = contact({ name: null, city: '' });
    expect(fillPlaceholders('Hi {{name}}, this is Acme.', empty)).toBe('Hi, this is Acme.');
    expect(fillPlaceholders('Thanks for confirming, {{name}}. See you soon!', empty)).toBe('Thanks for confirming. See you soon!');
    expect(fillPlaceholders('Hello {{name}}!', empty)).toBe('Hello!');
    expect(fillPlaceholders('{{name}} your visit in {{city}} is booked.', empty)).toBe('your visit in is booked.');
    expect(fillPlaceholders('Hi {{name}}\nSee you', empty)).toBe('Hi\nSee you');
  });

  it('lists placeholders with their fallbacks', () => {
    expect(placeholdersOf('{{name|there}} {{email}}')).toEqual([
      { variable: 'name', fallback: 'there' },
      { variable: 'email', fallback: undefined },
    ]);
  });
});
