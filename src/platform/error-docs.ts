import { STATUS_CODES } from 'node:http';
import { codeOf, errorCatalogue, type ErrorEntry, type ErrorKey } from './error-catalogue.ts';

const cell = (text: string) => text.replaceAll('|', '\\|');

/** docs/errors.md, generated from the catalogue so the list can never miss a code the API answers with. */
export function errorsMarkdown(): string {
  const entries = Object.entries(errorCatalogue) as [ErrorKey, ErrorEntry][];
  const ours = entries.filter(([key]) => !key.endsWith('.framework'));
  const framework = entries.filter(([key]) => key.endsWith('.framework'));
  const statuses = [...new Set(ours.map(([, entry]) => entry.status))].sort((a, b) => a - b);
  const row = ([key, entry]: [ErrorKey, ErrorEntry]) =>
    `| \`${codeOf(key)}\` | ${entry.status} | \`${cell(entry.message)}\` | ${cell(entry.when)} |`;
  return [
    '# Errors',
    '',
    'Every error answer has the same shape: `statusCode`, `error` (the status text), `code`, `message`,',
    '`details` (field problems, when there are any) and `requestId`. Match on `code`; `message` is a',
    'sentence for people, written as below with each `${name}` filled in. This page is generated from',
    '`src/platform/error-catalogue.ts` by `npm run docs:errors`; a test fails when it is out of date.',
    '',
    ...statuses.flatMap((status) => [
      `## ${status} ${STATUS_CODES[status]}`,
      '',
      '| Code | Status | Message | When |',
      '|---|---|---|---|',
      ...ours.filter(([, entry]) => entry.status === status).map(row),
      '',
    ]),
    '## Refused by the framework',
    '',
    'Fastify and its plugins refuse some requests before our code runs (an unknown method, a URL too long,',
    "a timeout). The code is then the status text in capitals and the message is the framework's own",
    'sentence, ending with a full stop.',
    '',
    '| Code | Status |',
    '|---|---|',
    ...framework.map(([key, entry]) => `| \`${codeOf(key)}\` | ${entry.status} |`),
    '',
  ].join('\n');
}
