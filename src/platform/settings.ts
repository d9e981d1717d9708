import { Type } from '@sinclair/typebox';

/*
 * The shapes of environment settings, each a schema with its default, its meaning and what it
 * accepts (`expected`, shown when a value is refused and in docs/configuration.md). Used by the
 * service's configuration and by the providers, which declare their own settings.
 */

export const Bool = (defaultValue: boolean, description: string) =>
  Type.Union([Type.Literal('1'), Type.Literal('0'), Type.Literal('true'), Type.Literal('false')], {
    default: defaultValue ? '1' : '0',
    description,
    expected: '1, 0, true or false',
  });

export const Int = (defaultValue: number, minimum: number, maximum: number, description: string) =>
  Type.String({
    default: String(defaultValue),
    pattern: '^[0-9]+$',
    minimum,
    maximum,
    description,
    expected: `an integer from ${minimum} to ${maximum}`,
  });

export const Decimal = (defaultValue: string, description: string) =>
  Type.String({
    default: defaultValue,
    pattern: '^[0-9]{1,14}(\\.[0-9]{1,4})?$',
    description,
    expected: 'a decimal amount such as 10 or 12.5',
  });

export const ApiOrigin = (defaultOrigin: string, description: string) =>
  Type.String({ default: defaultOrigin, pattern: '^https?://[^/]+$', description, expected: 'an http(s) origin without a path' });
