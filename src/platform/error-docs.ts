import { STATUS_CODES } from 'node:http';
import { maxHeaderSize } from 'node:http';
import { codeOf, errorCatalogue, type ErrorEntry, type ErrorKey } from './error-catalogue.ts';
import { MAX_PARAM_LENGTH } from './errors.ts';
import { MAX_JSON_DEPTH } from './input.ts';
import { MAX_LIMIT, MAX_PAGE } from './pagination.ts';

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
    '## Limits every request meets',
    '',
    'Input no route could store or parse is refused before any route runs, always with a 4xx in the shape',
    'above (never a 500), and the connection stays usable unless the HTTP request itself was unreadable.',
    '',
    '| Limit | Answer |',
    '|---|---|',
    `| JSON bodies nest objects and arrays at most ${MAX_JSON_DEPTH} levels deep (checked before parsing) | 400 \`INVALID_JSON\` |`,
    "| No string anywhere (body value or property name, query parameter, path parameter) holds the NUL character U+0000 or half a UTF-16 surrogate pair alone (`\\ud800`), which PostgreSQL cannot store (text from outside the API, a model's reply, a recogniser's transcript, a tool's or a provider webhook's text, a fetched or uploaded document, is not refused: those characters become U+FFFD) | 400 `VALIDATION_FAILED` naming the field |",
    `| Lists: \`page\` is an integer from 1 to ${MAX_PAGE} (beyond the last page the list is empty), \`limit\` from 1 to ${MAX_LIMIT} (default 25) | 400 \`VALIDATION_FAILED\` |`,
    '| A body is at most 1 MiB (a contacts CSV upload 5 MB, a knowledge source 10 MB) | 413 `PAYLOAD_TOO_LARGE` |',
    "| A body is JSON (`application/json`), or `multipart/form-data` on the two upload routes (providers' callbacks may be form-encoded) | 415 `UNSUPPORTED_MEDIA_TYPE` |",
    '| A `multipart/form-data` body names its boundary in `Content-Type` and ends with it | 400 `INVALID_MULTIPART` |',
    `| A path parameter is at most ${MAX_PARAM_LENGTH} characters | 414 \`URI_TOO_LONG\` |`,
    `| The request line and headers together are at most ${maxHeaderSize} bytes (Node's limit) | 431 \`REQUEST_HEADER_FIELDS_TOO_LARGE\`, then the connection is closed |`,
    '| The request is well-formed HTTP/1.1 (request line, header syntax, `Content-Length`) | 400 `BAD_REQUEST` or `INVALID_CONTENT_LENGTH` |',
    '| Provider credentials (API keys, tokens) are printable ASCII without spaces, as HTTP headers need | 400 `VALIDATION_FAILED` |',
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
