import { describe, expect, it } from 'vitest';
import { renderTemplate, templateVariables, unknownVariable, variableWithoutFallback, type TemplateValues } from './prompt-template.ts';
import { fillContactPlaceholders } from '../messaging/templates.ts';

const values: TemplateValues = {
  name: 'Ana',
  phone: '+34600000001',
  email: null,
  metadata: { plan: 'gold', visits: 3, nested: { a: 1 } },
  campaignName: 'Renewals',
  agentName: 'Reminder',
  now: new Date('2026-03-29T00:30:00.000Z'), // 01:30 CET → 02:30… Madrid jumped to CEST at 02:00 that night
  timezone: 'Europe/Madrid',
};

describe('prompt templates', () => {
  it('names each variable once, in order, whatever the spacing', () => {
    expect(templateVariables('Hi {{ name }}, plan {{metadata.plan}}; {{name}} again, {{ now}}')).toEqual(['name', 'metadata.plan', 'now']);
  });

  it('refuses a variable outside the fixed set, and accepts metadata keys of any field', () => {
    expect(unknownVariable('Hello {{name}} from {{campaign.name}} at {{time}}')).toBeUndefined();
    expect(unknownVariable('{{metadata.account_id}} {{metadata.plan-2}}')).toBeUndefined();
    expect(unknownVariable('Hello {{first_name}}')).toBe('first_name');
    expect(unknownVariable('{{metadata.}} and {{name}}')).toBe('metadata.');
    expect(unknownVariable('{{campaign.id}}')).toBe('campaign.id');
  });

  it("fills the contact, the campaign and the time in the contact's zone", () => {
    const text = renderTemplate(
      '{{name}}|{{phone}}|{{email}}|{{metadata.plan}}|{{metadata.visits}}|{{metadata.missing}}|{{campaign.name}}',
      values,
    );
    expect(text).toBe('Ana|+34600000001||gold|3||Renewals');
    expect(renderTemplate('{{date}} {{time}} {{timezone}}', values)).toBe('2026-03-29 01:30 Europe/Madrid');
    expect(renderTemplate('{{now}}', { ...values, now: new Date('2026-03-29T01:30:00.000Z') })).toBe('Sunday, 29 March 2026 at 03:30');
    expect(renderTemplate('{{metadata.nested}}', values)).toBe('{"a":1}');
  });

  it('says the fallback of an empty variable, and names a variable that may be empty without one', () => {
    const nameless = { ...values, name: null, metadata: {} };
    expect(renderTemplate('Hi {{name|there}}, your {{ metadata.plan | usual }} plan; {{email}}.', nameless)).toBe(
      'Hi there, your usual plan.',
    );
    expect(renderTemplate('Hi {{name|there}}', values)).toBe('Hi Ana');
    expect(templateVariables('{{name|there}} {{ now }}')).toEqual(['name', 'now']);
    expect(variableWithoutFallback('{{agent.name}} at {{time}} on {{date}} ({{timezone}}), {{now}}')).toBeUndefined();
    expect(variableWithoutFallback('Hi {{name|there}} from {{campaign.name}}')).toBe('campaign.name');
    expect(variableWithoutFallback('Hi {{name|}}')).toBe('name');
  });

  it('fills an SMS from the contact the same way', () => {
    const contact = { name: null, phoneNumber: '+34600000001', email: null, metadata: { plan: 'gold' } };
    expect(fillContactPlaceholders('Thanks, {{name|there}} ({{plan|basic}}, {{phoneNumber}}).', contact)).toBe(
      'Thanks, there (gold, +34600000001).',
    );
  });
});
