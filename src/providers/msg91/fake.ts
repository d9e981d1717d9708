/**
 * A local stand-in for MSG91's send-SMS HTTP API (https://api.msg91.com/apidoc/textsms/send-sms-v1.php):
 * `GET /api/v2/sendsms` with `authkey`, `mobiles`, `message`, `sender`, `route`, `country`,
 * `unicode`, `DLT_TE_ID` and `response` in the query string. With `response=json` it answers
 * `{"message":"<24-hex request id>","type":"success"}` or `{"type":"error","message":…,"code":"…"}`,
 * both with HTTP 200 as MSG91 does; without it, the bare request id or error text.
 * Error codes and texts follow MSG91's published table (101 missing mobile, 106 missing
 * authentication key, 202 invalid mobile, 203 invalid sender id, 207 invalid authentication key, …).
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { listenOnLoopback, readBody } from '../fake-server.ts';

export interface FakeMsg91Options {
  authKey: string;
}

export interface FakeMsg91Request {
  method: string;
  /** Path without the query string. */
  path: string;
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  /** Form fields of a form-encoded body, if any (the client sends none: everything is in the query). */
  body: Record<string, string>;
}

export interface FakeMsg91Sms {
  requestId: string;
  mobiles: string[];
  message: string;
  sender: string;
  route: string;
  country: string | null;
  unicode: boolean;
  dltTemplateId: string | null;
}

export interface FakeMsg91 {
  /** Origin to use as the client's `baseUrl`. */
  url: string;
  requests: FakeMsg91Request[];
  /** Submissions accepted, in order. */
  sent: FakeMsg91Sms[];
  /** The next request (whatever it is) is answered with this status and JSON body. */
  failNext(status: number, body: object): void;
  /** Forwards an SMS a person sent to one of the account's numbers, form-encoded as MSG91's inbound forwarding posts it; resolves with the receiver's status. */
  receiveMessage(url: string, message: { from: string; to: string; text: string }): Promise<number>;
  close(): Promise<void>;
}

function send(res: ServerResponse, status: number, body: string, contentType: string): void {
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

export async function startFakeMsg91(options: FakeMsg91Options): Promise<FakeMsg91> {
  const requests: FakeMsg91Request[] = [];
  const sent: FakeMsg91Sms[] = [];
  const failures: Array<{ status: number; body: object }> = [];

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const url = new URL(req.url ?? '/', 'http://fake');
    const contentType = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
    const body = contentType === 'application/x-www-form-urlencoded' ? Object.fromEntries(new URLSearchParams(raw)) : {};
    const query = Object.fromEntries(url.searchParams);
    requests.push({ method: req.method ?? 'GET', path: url.pathname, query, headers: req.headers, body });

    const failure = failures.shift();
    if (failure) return send(res, failure.status, JSON.stringify(failure.body), 'application/json');

    const params = { ...body, ...query };
    const json = params.response === 'json';
    const answer = (type: 'success' | 'error', message: string, code?: string) => {
      if (json) return send(res, 200, JSON.stringify(type === 'success' ? { message, type } : { type, message, code }), 'application/json');
      return send(res, 200, message, 'text/html; charset=UTF-8');
    };

    if (url.pathname !== '/api/v2/sendsms' || (req.method !== 'GET' && req.method !== 'POST')) {
      return send(res, 404, '<html><body><h1>404 Not Found</h1></body></html>', 'text/html');
    }
    if (!params.authkey) return answer('error', 'Missing Authentication Key', '106');
    if (params.authkey !== options.authKey) return answer('error', 'Invalid authentication key', '207');
    if (!params.mobiles) return answer('error', 'Missing mobile no.', '101');
    if (!params.message) return answer('error', 'Missing message', '102');
    if (!params.sender) return answer('error', 'Missing sender ID', '103');
    if (!params.route) return answer('error', 'Missing Route', '107');
    const mobiles = params.mobiles.split(',').map((m) => m.trim());
    if (mobiles.some((m) => !/^\d{10,15}$/.test(m))) return answer('error', 'Invalid mobile number', '202');
    // India DLT headers are six letters.
    if (!/^[A-Za-z]{6}$/.test(params.sender)) return answer('error', 'Invalid sender ID', '203');

    const requestId = randomBytes(12).toString('hex');
    sent.push({
      requestId,
      mobiles,
      message: params.message,
      sender: params.sender,
      route: params.route,
      country: params.country ?? null,
      unicode: params.unicode === '1',
      dltTemplateId: params.DLT_TE_ID ?? null,
    });
    return answer('success', requestId);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent)
        send(res, 500, JSON.stringify({ type: 'error', message: `Fake MSG91 crashed: ${String(error)}`, code: '601' }), 'application/json');
      else res.destroy();
    });
  });
  const listening = await listenOnLoopback(server);

  return {
    url: listening.url,
    requests,
    sent,
    failNext(status, body) {
      failures.push({ status, body });
    },
    async receiveMessage(url, message) {
      const form = new URLSearchParams({
        requestId: randomBytes(12).toString('hex'),
        number: message.from.replace(/^\+/, ''),
        inboundNumber: message.to.replace(/^\+/, ''),
        keyword: message.text.trim().split(/\s+/)[0] ?? '',
        message: message.text,
      });
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: form.toString(),
      });
      await response.arrayBuffer();
      return response.status;
    },
    close: listening.close,
  };
}
