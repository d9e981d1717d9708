import type { TSchema } from '@sinclair/typebox';
import { EnvSchema } from './config.ts';

/** The configuration table of the docs, generated from the schema that validates it. */
export function configurationMarkdown(): string {
  const rows = (Object.entries(EnvSchema.properties) as [string, TSchema & { expected?: string }][]).map(([name, schema]) => {
    const fallback = schema.default === undefined ? '(unset)' : `\`${String(schema.default)}\``;
    return `| \`${name}\` | ${fallback} | ${schema.expected ?? 'text'} | ${schema.description ?? ''} |`;
  });
  return [
    '# Configuration',
    '',
    'Every setting is an environment variable, validated when a process starts: a bad value stops the',
    'process with a message naming the variable and what it should be. This page is generated from',
    '`src/config.ts` by `npm run docs:config`; a test fails when it is out of date.',
    '',
    '| Variable | Default | Accepted values | Meaning |',
    '|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}
