/**
 * A local stand-in for the WhatsApp Cloud API on Meta's Graph API (the subset callforge uses),
 * speaking Graph's wire format: bearer-token auth, JSON bodies, cursor-paginated edges
 * (`{data, paging: {cursors: {before, after}, next?}}`) and Graph's error JSON
 * (`{error: {message, type, code, error_subcode?, error_data?, fbtrace_id}}`).
 *
 * Also builds signed webhook deliveries (`X-Hub-Signature-256`) in Meta's real payload shape. The
 * signing here is written independently of src/providers/whatsapp/cloud-api.ts so the tests check
 * one implementation against the other.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { listenOnLoopback, readBody } from '../fake-server.ts';

export interface FakeWhatsAppNumber {
  id: string;
  displayPhoneNumber: string;
  verifiedName: string;
  qualityRating: string;
}

export interface FakeWhatsAppOptions {
  accessToken: string;
  businessAccountId: string;
  phoneNumbers: FakeWhatsAppNumber[];
  /** Phone numbers per page when the request gives no `limit`. Default 2, so a few numbers already paginate. */
  pageSize?: number;
  /** Recipients (digits, no '+') answered with Graph error 131030, as in a test-mode account. */
  disallowedRecipients?: string[];
}

export interface FakeWhatsAppRequest {
  method: string;
  /** Path without the query string. */
  path: string;
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  /** The JSON body, parsed; `undefined` when there was none or it was not JSON. */
  body: unknown;
  rawBody: string;
}

export interface FakeWhatsAppMessage {
  id: string;
  phoneNumberId: string;
  to: string;
  /** Null for a free-text message. */
  templateName: string | null;
  languageCode: string | null;
  bodyParameters: string[];
  /** A free-text message's body. */
  text?: string;
}

export interface FakeWhatsApp {
  /** Origin to use as the client's `baseUrl`, e.g. `http://127.0.0.1:54321`. */
  url: string;
  requests: FakeWhatsAppRequest[];
  /** Template and text messages accepted, in order. */
  messages: FakeWhatsAppMessage[];
  /**
   * The next request (whatever it is) is answered with this status and JSON body; with
   * `forMessage`, the next send whose `biz_opaque_callback_data` (callforge's message id) is that one.
   */
  failNext(status: number, body: object, forMessage?: string): void;
  close(): Promise<void>;
}

const ALL_PHONE_NUMBER_FIELDS = [
  'verified_name',
  'code_verification_status',
  'display_phone_number',
  'quality_rating',
  'platform_type',
  'throughput',
  'id',
];

function fbtraceId(): string {
  return randomBytes(12).toString('base64').replace(/[+/=]/g, 'A');
}

/** Graph's error envelope. */
export function graphError(message: string, type: string, code: number, extra: Record<string, unknown> = {}): object {
  return { error: { message, type, code, ...extra, fbtrace_id: fbtraceId() } };
}

function invalidParameter(details: string): object {
  return graphError('(#100) Invalid parameter', 'OAuthException', 100, { error_data: { messaging_product: 'whatsapp', details } });
}

function unsupportedGet(id: string, method: 'get' | 'post'): object {
  return graphError(
    `Unsupported ${method} request. Object with ID '${id}' does not exist, cannot be loaded due to missing permissions, or does not support this operation. Please read the Graph API documentation at https://developers.facebook.com/docs/graph-api`,
    'GraphMethodException',
    100,
    { error_subcode: 33 },
  );
}

// Graph spells its charset in upper case; the shared sendJson does not.
function sendJson(res: ServerResponse, status: number, body: object, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function wamid(): string {
  return `wamid.${randomBytes(30).toString('base64')}`;
}

function cursor(index: number): string {
  return Buffer.from(`cursor:${index}`).toString('base64').replace(/=+$/, '');
}

function cursorIndex(value: string): number | undefined {
  const match = /^cursor:(\d+)$/.exec(Buffer.from(value, 'base64').toString('utf8'));
  return match ? Number(match[1]) : undefined;
}

export async function startFakeWhatsApp(options: FakeWhatsAppOptions): Promise<FakeWhatsApp> {
  const { accessToken, businessAccountId } = options;
  const pageSize = options.pageSize ?? 2;
  const disallowed = new Set(options.disallowedRecipients ?? []);
  const requests: FakeWhatsAppRequest[] = [];
  const messages: FakeWhatsAppMessage[] = [];
  const failures: Array<{ status: number; body: object; forMessage?: string }> = [];
  let origin = '';

  function phoneNumberJson(number: FakeWhatsAppNumber, fields: string[]): Record<string, unknown> {
    const all: Record<string, unknown> = {
      verified_name: number.verifiedName,
      code_verification_status: 'VERIFIED',
      display_phone_number: number.displayPhoneNumber,
      quality_rating: number.qualityRating,
      platform_type: 'CLOUD_API',
      throughput: { level: 'STANDARD' },
      id: number.id,
    };
    // Graph returns just the fields asked for, plus `id`.
    return Object.fromEntries(Object.entries(all).filter(([name]) => name === 'id' || fields.includes(name)));
  }

  function listPhoneNumbers(res: ServerResponse, query: URLSearchParams, pathname: string): void {
    const fieldsParam = query.get('fields');
    const fields = fieldsParam === null ? ALL_PHONE_NUMBER_FIELDS : fieldsParam.split(',').map((f) => f.trim());
    const unknown = fields.filter((f) => !ALL_PHONE_NUMBER_FIELDS.includes(f));
    if (unknown.length > 0) {
      return sendJson(
        res,
        400,
        graphError(
          `(#100) Tried accessing nonexisting field (${unknown[0]}) on node type (WhatsAppBusinessPhoneNumber)`,
          'OAuthException',
          100,
        ),
      );
    }
    const limit = query.get('limit') === null ? pageSize : Number(query.get('limit'));
    if (!Number.isInteger(limit) || limit < 1)
      return sendJson(res, 400, graphError('(#100) Param limit must be a positive integer', 'OAuthException', 100));
    const after = query.get('after');
    // A cursor names an item; `after` asks for the items following it.
    const afterIndex = after === null ? -1 : cursorIndex(after);
    if (afterIndex === undefined) return sendJson(res, 400, graphError('(#100) The after cursor is invalid', 'OAuthException', 100));

    const start = afterIndex + 1;
    const page = options.phoneNumbers.slice(start, start + limit);
    const body: Record<string, unknown> = { data: page.map((n) => phoneNumberJson(n, fields)) };
    if (page.length > 0) {
      const last = start + page.length - 1;
      const paging: Record<string, unknown> = { cursors: { before: cursor(start), after: cursor(last) } };
      if (start + page.length < options.phoneNumbers.length) {
        const next = new URLSearchParams(query);
        next.set('limit', String(limit));
        next.set('after', cursor(last));
        paging.next = `${origin}${pathname}?${next.toString()}`;
      }
      body.paging = paging;
    }
    return sendJson(res, 200, body);
  }

  function sendMessage(res: ServerResponse, phoneNumberId: string, contentType: string | undefined, body: unknown): void {
    if (!options.phoneNumbers.some((n) => n.id === phoneNumberId)) return sendJson(res, 400, unsupportedGet(phoneNumberId, 'post'));
    if (contentType !== 'application/json')
      return sendJson(res, 400, invalidParameter('Request body must be JSON (content-type application/json)'));
    const message = body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
    if (!message) return sendJson(res, 400, invalidParameter('Request body is not a JSON object'));
    if (message.messaging_product !== 'whatsapp') {
      return sendJson(res, 400, graphError('(#100) The parameter messaging_product is required.', 'OAuthException', 100));
    }
    if (message.recipient_type !== undefined && message.recipient_type !== 'individual') {
      return sendJson(
        res,
        400,
        graphError('(#131009) Parameter value is not valid', 'OAuthException', 131009, {
          error_data: { messaging_product: 'whatsapp', details: 'Invalid recipient_type' },
        }),
      );
    }
    if (typeof message.to !== 'string' || message.to === '')
      return sendJson(res, 400, graphError('(#100) The parameter to is required.', 'OAuthException', 100));
    const digitsOf = (to: string) => to.replace(/\D/g, '');
    if (message.type === 'text') {
      const text = message.text !== null && typeof message.text === 'object' ? (message.text as Record<string, unknown>) : undefined;
      if (!text || typeof text.body !== 'string' || text.body === '')
        return sendJson(res, 400, graphError('(#100) The parameter text[body] is required.', 'OAuthException', 100));
      const id = wamid();
      messages.push({ id, phoneNumberId, to: message.to, templateName: null, languageCode: null, bodyParameters: [], text: text.body });
      return sendJson(res, 200, {
        messaging_product: 'whatsapp',
        contacts: [{ input: message.to, wa_id: digitsOf(message.to) }],
        messages: [{ id }],
      });
    }
    if (message.type !== 'template')
      return sendJson(
        res,
        400,
        invalidParameter(`This fake only accepts template and text messages, got type ${JSON.stringify(message.type)}`),
      );
    const template =
      message.template !== null && typeof message.template === 'object' ? (message.template as Record<string, unknown>) : undefined;
    if (!template || typeof template.name !== 'string' || template.name === '') {
      return sendJson(res, 400, graphError('(#100) The parameter template[name] is required.', 'OAuthException', 100));
    }
    const language =
      template.language !== null && typeof template.language === 'object' ? (template.language as Record<string, unknown>) : undefined;
    if (!language || typeof language.code !== 'string' || language.code === '') {
      return sendJson(res, 400, graphError('(#100) The parameter template[language][code] is required.', 'OAuthException', 100));
    }
    const bodyParameters: string[] = [];
    if (template.components !== undefined) {
      if (!Array.isArray(template.components)) return sendJson(res, 400, invalidParameter('template[components] must be an array'));
      for (const component of template.components as unknown[]) {
        const c = component !== null && typeof component === 'object' ? (component as Record<string, unknown>) : {};
        if (!['header', 'body', 'button'].includes(String(c.type)))
          return sendJson(res, 400, invalidParameter(`Invalid component type ${JSON.stringify(c.type)}`));
        if (!Array.isArray(c.parameters))
          return sendJson(res, 400, invalidParameter(`template[components][${String(c.type)}][parameters] must be an array`));
        for (const parameter of c.parameters as unknown[]) {
          const p = parameter !== null && typeof parameter === 'object' ? (parameter as Record<string, unknown>) : {};
          if (p.type !== 'text' || typeof p.text !== 'string')
            return sendJson(res, 400, invalidParameter('Each text parameter needs type "text" and a string text'));
          if (p.text.trim() === '') {
            return sendJson(
              res,
              400,
              graphError('(#131008) Required parameter is missing', 'OAuthException', 131008, {
                error_data: { messaging_product: 'whatsapp', details: 'Parameter text cannot be empty' },
              }),
            );
          }
          if (c.type === 'body') bodyParameters.push(p.text);
        }
      }
    }
    const digits = message.to.replace(/\D/g, '');
    if (disallowed.has(digits)) {
      return sendJson(
        res,
        400,
        graphError('(#131030) Recipient phone number not in allowed list', 'OAuthException', 131030, {
          error_data: {
            messaging_product: 'whatsapp',
            details: 'Recipient phone number not in allowed list: Add recipient phone number to recipient list and try again.',
          },
        }),
      );
    }
    const id = wamid();
    messages.push({ id, phoneNumberId, to: message.to, templateName: template.name, languageCode: language.code, bodyParameters });
    return sendJson(res, 200, {
      messaging_product: 'whatsapp',
      contacts: [{ input: message.to, wa_id: digits }],
      messages: [{ id, message_status: 'accepted' }],
    });
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const rawBody = await readBody(req);
    const url = new URL(req.url ?? '/', 'http://fake');
    const contentType = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
    let body: unknown;
    if (rawBody !== '') {
      try {
        body = JSON.parse(rawBody) as unknown;
      } catch {
        body = undefined;
      }
    }
    requests.push({
      method: req.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: req.headers,
      body,
      rawBody,
    });

    const about = (body as { biz_opaque_callback_data?: unknown } | undefined)?.biz_opaque_callback_data;
    const failing = failures.findIndex((failure) => failure.forMessage === undefined || failure.forMessage === about);
    if (failing >= 0) {
      const [failure] = failures.splice(failing, 1);
      return sendJson(res, failure!.status, failure!.body);
    }

    const authorization = req.headers.authorization;
    if (authorization !== `Bearer ${accessToken}`) {
      const message =
        authorization === undefined
          ? 'An active access token must be used to query information about the current user.'
          : 'Invalid OAuth access token - Cannot parse access token';
      return sendJson(res, 401, graphError(message, 'OAuthException', authorization === undefined ? 2500 : 190), {
        'www-authenticate': `OAuth "Facebook Platform" "invalid_token" "${message}"`,
      });
    }
    if (rawBody !== '' && body === undefined) {
      return sendJson(
        res,
        400,
        graphError('(#100) Invalid parameter', 'OAuthException', 100, {
          error_data: { messaging_product: 'whatsapp', details: 'Unexpected token in JSON body' },
        }),
      );
    }

    const match = /^\/(v\d+\.\d+)\/([^/]+)\/([a-z_]+)$/.exec(url.pathname);
    if (!match) return sendJson(res, 400, graphError('Unknown path components: ' + url.pathname, 'OAuthException', 2500));
    const [, , nodeId = '', edge] = match;

    if (edge === 'phone_numbers' && req.method === 'GET') {
      if (nodeId !== businessAccountId) return sendJson(res, 400, unsupportedGet(nodeId, 'get'));
      return listPhoneNumbers(res, url.searchParams, url.pathname);
    }
    if (edge === 'messages' && req.method === 'POST') return sendMessage(res, nodeId, contentType, body);
    return sendJson(res, 400, unsupportedGet(nodeId, req.method === 'POST' ? 'post' : 'get'));
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, 500, graphError(`Fake WhatsApp crashed: ${String(error)}`, 'OAuthException', 1));
      else res.destroy();
    });
  });
  const listening = await listenOnLoopback(server);
  origin = listening.url;

  return {
    url: origin,
    requests,
    messages,
    failNext(status, body, forMessage) {
      failures.push({ status, body, ...(forMessage === undefined ? {} : { forMessage }) });
    },
    close: listening.close,
  };
}

// ---------------------------------------------------------------------------------------------
// Webhook deliveries
// ---------------------------------------------------------------------------------------------

/**
 * A webhook delivery as Meta sends it: the JSON body exactly as it goes on the wire, and headers
 * including `X-Hub-Signature-256` (HMAC-SHA256 of those bytes under the app secret, hex, `sha256=`).
 */
export function signedWhatsAppWebhook(appSecret: string, payload: unknown): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify(payload);
  const mac = createHmac('sha256', Buffer.from(appSecret, 'utf8'));
  mac.update(Buffer.from(body, 'utf8'));
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'user-agent': 'facebookexternalua',
      'x-hub-signature-256': 'sha256=' + mac.digest().toString('hex'),
    },
  };
}

export type WhatsAppDeliveryStatus = 'sent' | 'delivered' | 'read' | 'failed';

export interface StatusWebhookEntry {
  /** The `wamid.` id the send returned. */
  id: string;
  status: WhatsAppDeliveryStatus;
  /** The recipient's WhatsApp id (digits, no '+'); a leading '+' is dropped. */
  recipientId: string;
  /** When it happened: a Date, epoch milliseconds, or Meta's own string of epoch seconds. */
  timestamp: Date | number | string;
  /** For `failed`: Meta's error objects, e.g. `{ code: 131026, title: 'Message undeliverable' }`. */
  errors?: Array<{ code: number; title: string; message?: string; details?: string }>;
}

/**
 * Meta's webhook payload for message status changes
 * (https://developers.facebook.com/docs/whatsapp/cloud-api/webhooks/payload-examples#message-status-updates).
 */
export function statusWebhookPayload(input: {
  phoneNumberId: string;
  wabaId: string;
  /** The sending number as shown (digits). Default `15550001234`. */
  displayPhoneNumber?: string;
  statuses: StatusWebhookEntry[];
}): object {
  return notification(input, { statuses: input.statuses.map((s) => statusJson(s)) });
}

/** Meta's envelope: one entry for the business account, one `messages` change for the number, carrying `value`. */
function notification(input: { phoneNumberId: string; wabaId: string; displayPhoneNumber?: string }, value: object): object {
  const metadata = { display_phone_number: input.displayPhoneNumber ?? '15550001234', phone_number_id: input.phoneNumberId };
  return {
    object: 'whatsapp_business_account',
    entry: [{ id: input.wabaId, changes: [{ value: { messaging_product: 'whatsapp', metadata, ...value }, field: 'messages' }] }],
  };
}

/** A webhook notification carrying messages people sent to the business, as Meta posts them. */
export function incomingMessagesPayload(input: {
  phoneNumberId: string;
  wabaId: string;
  messages: { id: string; from: string; timestamp: Date; text?: string; button?: string }[];
}): object {
  const digits = (number: string) => number.replace(/^\+/, '');
  return notification(input, {
    contacts: input.messages.map((m) => ({ profile: { name: 'Customer' }, wa_id: digits(m.from) })),
    messages: input.messages.map((m) => ({
      from: digits(m.from),
      id: m.id,
      timestamp: epochSeconds(m.timestamp),
      ...(m.button === undefined
        ? { type: 'text', text: { body: m.text ?? '' } }
        : { type: 'button', button: { text: m.button, payload: m.button } }),
    })),
  });
}

function epochSeconds(timestamp: Date | number | string): string {
  if (typeof timestamp === 'string') return timestamp;
  const ms = timestamp instanceof Date ? timestamp.getTime() : timestamp;
  return String(Math.floor(ms / 1000));
}

function statusJson(s: StatusWebhookEntry): Record<string, unknown> {
  const timestamp = epochSeconds(s.timestamp);
  const json: Record<string, unknown> = { id: s.id, status: s.status, timestamp, recipient_id: s.recipientId.replace(/^\+/, '') };
  if (s.status === 'sent' || s.status === 'delivered') {
    json.conversation = {
      id: createHash('sha256').update(`conversation:${s.recipientId}`).digest('hex').slice(0, 32),
      ...(s.status === 'sent' ? { expiration_timestamp: String(Number(timestamp) + 24 * 3600) } : {}),
      origin: { type: 'marketing' },
    };
    json.pricing = { billable: true, pricing_model: 'CBP', category: 'marketing' };
  }
  if (s.errors !== undefined || s.status === 'failed') {
    json.errors = (s.errors ?? [{ code: 131000, title: 'Something went wrong' }]).map((e) => ({
      code: e.code,
      title: e.title,
      message: e.message ?? e.title,
      error_data: { details: e.details ?? e.title },
      href: 'https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/',
    }));
  }
  return json;
}
