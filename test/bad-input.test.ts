import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerProblem, routesOf } from './fuzz-requests.ts';
import { bearer, createKey, signUp, startTestApp, type TestApp } from './harness.ts';

/** Input no route could store or parse answers a 4xx in the one error shape, never a 500. */
let t: TestApp;
let session: string;
let auth: { authorization: string };
let listId: string;
let baseId: string;

beforeAll(async () => {
  t = await startTestApp();
  session = (await signUp(t.app)).token;
  auth = bearer((await createKey(t.app, session)).key);
  const post = async (url: string, payload: object) => {
    const response = await t.app.inject({ method: 'POST', url, headers: auth, payload });
    expect(response.statusCode, response.body).toBe(201);
    return (response.json() as { id: string }).id;
  };
  listId = await post('/api/v1/contact-lists', { name: 'Bad input' });
  baseId = await post('/api/v1/knowledge-bases', { name: 'Bad input' });
});
afterAll(() => t.close());

type Answer = { statusCode: number; headers: Record<string, unknown>; body: string; json: () => unknown };
function expectRefusal(response: Answer, status: number, code: string): { message: string; details?: { path: string; message: string }[] } {
  expect(response.statusCode, response.body).toBe(status);
  expect(answerProblem(response.statusCode, response.headers['content-type'] as string, response.body)).toBeUndefined();
  const body = response.json() as { code: string; message: string; details?: { path: string; message: string }[] };
  expect(body.code).toBe(code);
  return body;
}

const json = (method: 'POST' | 'PATCH', url: string, payload: string) =>
  t.app.inject({ method, url, headers: { ...auth, 'content-type': 'application/json' }, payload });

describe('the NUL character (PostgreSQL text and jsonb cannot hold it)', () => {
  it('is refused in a body field with a 400 naming the field', async () => {
    const body = expectRefusal(await json('POST', '/api/v1/contact-lists', '{"name":"a\\u0000b"}'), 400, 'VALIDATION_FAILED');
    expect(body.message).toBe("Field 'name' must not contain the NUL character (\\u0000).");
    expect(body.details).toEqual([{ path: '/name', message: 'must not contain the NUL character (\\u0000)' }]);
  });

  it('is refused deep in metadata, in a value and in a property name', async () => {
    const value = await json('PATCH', `/api/v1/contact-lists/${listId}`, '{"metadata":{"crm":{"tags":["ok","x\\u0000"]}}}');
    expect(expectRefusal(value, 400, 'VALIDATION_FAILED').message).toBe(
      "Field 'metadata.crm.tags.1' must not contain the NUL character (\\u0000).",
    );
    const key = await json('POST', `/api/v1/contact-lists/${listId}/contacts`, '{"phoneNumber":"+14155550100","metadata":{"a\\u0000":1}}');
    expect(expectRefusal(key, 400, 'VALIDATION_FAILED').details).toEqual([
      { path: '/metadata/a\u0000', message: 'must not contain the NUL character (\\u0000)' },
    ]);
  });

  it('is refused in a query parameter and a path parameter', async () => {
    const query = await t.app.inject({ method: 'GET', url: '/api/v1/contact-lists?search=a%00b', headers: auth });
    expect(expectRefusal(query, 400, 'VALIDATION_FAILED').message).toBe(
      "Query parameter 'search' must not contain the NUL character (\\u0000).",
    );
    const param = await t.app.inject({ method: 'GET', url: '/api/v1/integrations/tw%00ilio', headers: bearer(session) });
    expect(expectRefusal(param, 400, 'VALIDATION_FAILED').message).toBe(
      "Path parameter 'kind' must not contain the NUL character (\\u0000).",
    );
  });

  it('is refused as half a surrogate pair alone (jsonb cannot store it), a whole pair being a character', async () => {
    const lone = await json('PATCH', `/api/v1/contact-lists/${listId}`, '{"metadata":{"note":"half \\ud800 a pair"}}');
    expect(expectRefusal(lone, 400, 'VALIDATION_FAILED').message).toBe(
      "Field 'metadata.note' must not contain half a UTF-16 surrogate pair (such as \\ud800 alone).",
    );
    const pair = await json('PATCH', `/api/v1/contact-lists/${listId}`, '{"metadata":{"note":"a pair \\ud835\\udd4f"}}');
    expect(pair.statusCode, pair.body).toBe(200);
    expect(pair.json().metadata.note).toBe('a pair 𝕏');
  });

  it('leaves the rest of unicode alone', async () => {
    const response = await json(
      'POST',
      '/api/v1/contact-lists',
      JSON.stringify({ name: 'Ünïcödé 𝕏 \u200b', metadata: { '\u00e9': '\u0001' } }),
    );
    expect(response.statusCode, response.body).toBe(201);
  });
});

describe('page and limit', () => {
  it('are refused out of range on every list route with a 400 sentence', async () => {
    const openapi = (await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    const lists = routesOf(openapi).filter(
      (route) => route.method === 'GET' && route.query?.properties && 'page' in (route.query.properties as object),
    );
    expect(lists.length).toBeGreaterThanOrEqual(15);
    for (const route of lists) {
      const url = route.path.replace(/\{[^}]+\}/g, '00000000-0000-4000-8000-000000000000');
      for (const [query, message] of [
        ['page=1e18', "Query parameter 'page' must be at most 1000000000."],
        ['page=1e20', "Query parameter 'page' must be at most 1000000000."],
        ['page=9007199254740993', "Query parameter 'page' must be at most 1000000000."],
        ['page=Infinity', "Query parameter 'page' must be at most 1000000000."],
        ['page=-1', "Query parameter 'page' must be at least 1."],
        ['page=1.5', "Query parameter 'page' must be an integer."],
        ['limit=1e18', "Query parameter 'limit' must be at most 200."],
        ['limit=0', "Query parameter 'limit' must be at least 1."],
      ]) {
        const response = await t.app.inject({ method: 'GET', url: `${url}?${query}`, headers: bearer(session) });
        expect(expectRefusal(response, 400, 'VALIDATION_FAILED').message, `${route.path}?${query}`).toBe(message);
      }
    }
  });

  it('serve the highest page, empty', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/api/v1/contact-lists?page=1000000000&limit=200', headers: auth });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toMatchObject({ data: [], page: 1_000_000_000, limit: 200 });
  });
});

describe('validation details', () => {
  it('name every field at fault, the first in the message', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/v1/contact-lists',
      headers: auth,
      payload: { name: 5, metadata: 'x', color: 'red' },
    });
    const body = expectRefusal(response, 400, 'VALIDATION_FAILED');
    const details = body.details!;
    expect(details.map((detail) => detail.path).sort()).toEqual(['/color', '/metadata', '/name']);
    expect(body.message).toBe(`Field '${details[0]!.path.slice(1)}' ${details[0]!.message}.`);
  });

  it('stop at 100 for a body wrong everywhere', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/v1/contact-lists/00000000-0000-4000-8000-000000000000/contacts/delete-batch',
      headers: auth,
      payload: { contactIds: Array.from({ length: 1000 }, (_, i) => `not-a-uuid-${i}`) },
    });
    expect(expectRefusal(response, 400, 'VALIDATION_FAILED').details).toHaveLength(100);
  });

  it('say a repeated query parameter once what it must be', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/api/v1/call-logs?from=2026-11-01&from=2026-11-02', headers: auth });
    expect(expectRefusal(response, 400, 'VALIDATION_FAILED').message).toBe("Query parameter 'from' must be a string.");
  });
});

describe('deeply nested JSON', () => {
  const nested = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

  it('is refused past 64 levels, before it is parsed, also 10,000 levels deep in metadata', async () => {
    for (const payload of [`{"name":"x","metadata":${nested(64)}}`, `{"name":"x","metadata":${'['.repeat(10_000)}${']'.repeat(10_000)}}`]) {
      const body = expectRefusal(await json('POST', '/api/v1/contact-lists', payload), 400, 'INVALID_JSON');
      expect(body.message).toBe('The request body nests objects and arrays more than 64 levels deep; flatten it.');
    }
  });

  it('is accepted up to 64 levels, brackets inside strings not counted', async () => {
    const response = await json('POST', '/api/v1/contact-lists', `{"name":"[{\\"[","metadata":${nested(63)}}`);
    expect(response.statusCode, response.body).toBe(201);
  });
});

describe('multipart uploads', () => {
  const upload = (url: string, contentType: string, payload: string) =>
    t.app.inject({ method: 'POST', url, headers: { ...auth, 'content-type': contentType }, payload });

  it('without a boundary are a 400 on both upload routes', async () => {
    for (const url of [`/api/v1/contact-lists/${listId}/upload`, `/api/v1/knowledge-bases/${baseId}/sources`]) {
      const body = expectRefusal(await upload(url, 'multipart/form-data', 'phone\n+14155550100\n'), 400, 'INVALID_MULTIPART');
      expect(body.message).toContain('needs its boundary in the Content-Type header');
    }
  });

  it('a source with no body and no content type is a 400, not a 500', async () => {
    const response = await t.app.inject({ method: 'POST', url: `/api/v1/knowledge-bases/${baseId}/sources`, headers: auth });
    expect(expectRefusal(response, 400, 'VALIDATION_FAILED').message).toBe(
      'The request body is required: JSON for a text or url source, multipart/form-data for a file.',
    );
  });

  it('cut short are a 400 on both upload routes, not a 500 nor an answer that never comes', async () => {
    const cut = '--b0\r\nContent-Disposition: form-data; name="file"; filename="a.csv"\r\nContent-Type: text/csv\r\n\r\nphone\n+1415';
    for (const url of [`/api/v1/contact-lists/${listId}/upload`, `/api/v1/knowledge-bases/${baseId}/sources`]) {
      const body = expectRefusal(await upload(url, 'multipart/form-data; boundary=b0', cut), 400, 'INVALID_MULTIPART');
      expect(body.message).toBe(
        'The multipart/form-data body is malformed (it ends before its closing boundary, or holds more than 10 fields); send it as a browser or curl -F would.',
      );
    }
  });

  it('with more fields than an upload takes are a 400 that says so on every upload route', async () => {
    const part = (name: string, value: string, filename?: string) =>
      `--b1\r\nContent-Disposition: form-data; name="${name}"${filename ? `; filename="${filename}"\r\nContent-Type: text/csv` : ''}\r\n\r\n${value}\r\n`;
    const fields = (count: number) => Array.from({ length: count }, (_, i) => part(`field${i}`, 'x')).join('');
    const file = part('file', 'phone\n+14155550100\n', 'a.csv');
    for (const url of [`/api/v1/contact-lists/${listId}/upload`, '/api/v1/dnc/import', `/api/v1/knowledge-bases/${baseId}/sources`])
      for (const count of [11, 25]) {
        const body = expectRefusal(
          await upload(url, 'multipart/form-data; boundary=b1', `${fields(count)}${file}--b1--\r\n`),
          400,
          'INVALID_MULTIPART',
        );
        // Where the parser stops, before the file or inside it, says which of the two sentences comes back.
        expect([
          'The multipart/form-data body holds more than 10 fields or 20 parts; send the one file with at most 10 fields beside it.',
          'The multipart/form-data body is malformed (it ends before its closing boundary, or holds more than 10 fields); send it as a browser or curl -F would.',
        ]).toContain(body.message);
      }
  });
});

describe('a value outside a set of choices', () => {
  it('is refused with one sentence naming every choice, in the query and in the body', async () => {
    const status = expectRefusal(
      await t.app.inject({ method: 'GET', url: '/api/v1/campaigns?status=running', headers: auth }),
      400,
      'VALIDATION_FAILED',
    );
    expect(status.message).toBe("Query parameter 'status' must be one of DRAFT, SCHEDULED, RUNNING, PAUSED, COMPLETED, CANCELLED.");
    expect(status.details).toHaveLength(1);

    const campaign = await t.app.inject({ method: 'POST', url: '/api/v1/campaigns', headers: auth, payload: { name: 'Choices' } });
    expect(campaign.statusCode, campaign.body).toBe(201);
    const agent = expectRefusal(
      await json('PATCH', `/api/v1/campaigns/${campaign.json().id}`, '{"agentId":"nope"}'),
      400,
      'VALIDATION_FAILED',
    );
    expect(agent.message).toBe("Field 'agentId' must be a valid uuid or null.");
    expect(agent.details).toEqual([{ path: '/agentId', message: 'must be a valid uuid or null' }]);
  });
});

describe('a value that does not match a pattern', () => {
  it('is refused with what the pattern wants in words, not the pattern', async () => {
    const language = expectRefusal(
      await json('POST', '/api/v1/agents', '{"name":"Patterned","language":"en_US"}'),
      400,
      'VALIDATION_FAILED',
    );
    expect(language.message).toBe("Field 'language' must be a BCP-47 language tag such as en-US, es or pt-BR.");
    const window = expectRefusal(
      await json('POST', '/api/v1/campaigns', '{"name":"Patterned","callWindowStart":"9am"}'),
      400,
      'VALIDATION_FAILED',
    );
    expect(window.details).toEqual([{ path: '/callWindowStart', message: 'must be a time as HH:mm, such as 09:00' }]);
  });

  it('has its words in every schema of the API that has a pattern', async () => {
    const openapi = (await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json() as object;
    const without: string[] = [];
    const visit = (node: unknown, where: string) => {
      if (Array.isArray(node)) node.forEach((child, i) => visit(child, `${where}/${i}`));
      else if (node && typeof node === 'object') {
        const record = node as Record<string, unknown>;
        if (typeof record.pattern === 'string' && typeof record['x-pattern-message'] !== 'string') without.push(where);
        for (const [key, child] of Object.entries(record)) visit(child, `${where}/${key}`);
      }
    };
    visit(openapi, '');
    expect(without).toEqual([]);
  });
});

describe("the router's and Node's own refusals", () => {
  it('answer a path parameter over 100 characters with 414 in the error shape', async () => {
    const response = await t.app.inject({ method: 'GET', url: `/api/v1/contact-lists/${'x'.repeat(101)}`, headers: auth });
    expect(expectRefusal(response, 414, 'URI_TOO_LONG').message).toBe(
      'A path parameter is longer than 100 characters; ids are 36-character UUIDs.',
    );
  });

  it('answer a broken %-escape in the path with 400 in the error shape', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/api/v1/contact-lists/%zz', headers: auth });
    expect(expectRefusal(response, 400, 'BAD_REQUEST').message).toBe(
      'The path /api/v1/contact-lists/%zz is not valid percent-encoding; encode reserved characters as %XX.',
    );
  });

  it("answer headers over Node's limit (431) and a broken request line (400) in the error shape, over a real socket", async () => {
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const port = Number(new URL(address).port);
    const raw = (request: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () => socket.end(request));
        let answer = '';
        socket.on('data', (chunk) => (answer += chunk.toString('utf8')));
        socket.on('close', () => resolve(answer));
        socket.on('error', reject);
      });
    const parse = (answer: string) => {
      const [head, body] = answer.split('\r\n\r\n') as [string, string];
      return { status: Number(head.split(' ')[1]), type: /content-type: ([^\r]+)/i.exec(head)?.[1], body };
    };

    const huge = parse(await raw(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`));
    expect(huge.status).toBe(431);
    expect(answerProblem(huge.status, huge.type, huge.body)).toBeUndefined();
    expect(JSON.parse(huge.body)).toMatchObject({
      code: 'REQUEST_HEADER_FIELDS_TOO_LARGE',
      message: expect.stringContaining('16384 bytes'),
    });

    const longUrl = parse(await raw(`GET /api/v1/contact-lists?search=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`));
    expect(longUrl.status).toBe(431);

    const broken = parse(await raw('GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n'));
    expect(broken.status).toBe(400);
    expect(answerProblem(broken.status, broken.type, broken.body)).toBeUndefined();
    expect(JSON.parse(broken.body).code).toBe('BAD_REQUEST');

    const healthy = await fetch(`${address}/healthz`);
    expect(healthy.status).toBe(200);
  });
});

describe('values later sent to providers', () => {
  it('refuse a credential that cannot travel in an HTTP header when it is saved', async () => {
    const response = await t.app.inject({
      method: 'PUT',
      url: '/api/v1/integrations/whatsapp',
      headers: bearer(session),
      payload: {
        businessAccountId: '1234567890',
        accessToken: 'EAAG😀0123456789abcdef',
        appSecret: '0123456789abcdef',
        phoneNumberId: '1098765432',
      },
    });
    expect(expectRefusal(response, 400, 'VALIDATION_FAILED').details?.[0]?.path).toBe('/accessToken');
  });

  it('answer the voices of a provider with no key configured with a 400, not a 502', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/api/v1/voices?provider=ELEVENLABS', headers: auth });
    expect(expectRefusal(response, 400, 'SPEECH_NOT_CONFIGURED').details).toEqual([
      { path: '/provider', message: 'no server is configured for this provider' },
    ]);
  });
});
