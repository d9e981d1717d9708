import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, signUp, startTestApp, type TestApp } from './harness.ts';

// The address rule is on (no ALLOW_PRIVATE_URLS): a URL the service fetches later is refused when
// it is saved. Knowledge sources and custom tools are covered in their own files.
let t: TestApp;
let owner: Awaited<ReturnType<typeof signUp>>;
beforeAll(async () => {
  t = await startTestApp();
  owner = await signUp(t.app);
});
afterAll(() => t?.close());

const post = (url: string, payload: Record<string, unknown>, method: 'POST' | 'PUT' | 'PATCH' = 'POST') =>
  t.app.inject({ method, url: `/api/v1${url}`, headers: bearer(owner.token), payload });

describe('URLs refused when they are saved', () => {
  it.each([
    ['http://10.0.0.7/hooks', '10.0.0.7 is a private address'],
    ['https://[::ffff:127.0.0.1]/hooks', '::ffff:7f00:1 is a loopback address (IPv4-mapped 127.0.0.1)'],
    ['https://[::127.0.0.1]/hooks', '::7f00:1 is a loopback address (IPv4-compatible 127.0.0.1)'],
    ['https://2130706433/hooks', '127.0.0.1 is a loopback address'],
    ['https://[fd00:ec2::254]/', 'fd00:ec2::254 is a cloud metadata address'],
    ['https://[2002:a00:1::1]/hooks', '2002:a00:1::1 is a private address (6to4 10.0.0.1)'],
    ['http://localhost:9000/hooks', 'localhost is this machine (a loopback address)'],
  ])("an API key's webhookUrl %s", async (webhookUrl, problem) => {
    const response = await post('/api-keys', { name: 'CRM', webhookUrl });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({
      statusCode: 400,
      code: 'VALIDATION_FAILED',
      message: `Field 'webhookUrl' cannot be fetched by this service: ${problem}. Give an address on the public internet (to reach this machine or a private network while testing, start the service with ALLOW_PRIVATE_URLS=1).`,
      details: [{ path: '/webhookUrl', message: problem }],
    });
  });

  it("an API key's webhookUrl changed to localhost, naming the setting that allows it", async () => {
    const key = (await post('/api-keys', { name: 'CRM', webhookUrl: 'https://93.184.216.34/hooks' })).json();
    const response = await post(`/api-keys/${key.id}`, { webhookUrl: 'http://localhost:8080/hooks' }, 'PATCH');
    expect(response.statusCode).toBe(400);
    expect(response.json().message).toContain('ALLOW_PRIVATE_URLS=1');
  });

  it("a model server's apiUrl", async () => {
    const response = await post('/integrations/llm', { apiUrl: 'http://169.254.169.254/v1', apiKey: 'sk-test' }, 'PUT');
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: [{ path: '/apiUrl', message: '169.254.169.254 is a cloud metadata address' }],
    });
  });

  it('accepts public addresses, and names that do not resolve now (delivery checks again)', async () => {
    expect((await post('/api-keys', { name: 'CRM', webhookUrl: 'https://93.184.216.34/hooks' })).statusCode).toBe(201);
    expect((await post('/api-keys', { name: 'CRM', webhookUrl: 'https://crm.invalid/hooks' })).statusCode).toBe(201);
    expect((await post('/integrations/llm', { apiUrl: 'https://[2606:2800:220:1::1]/v1' }, 'PUT')).statusCode).toBe(200);
  });
});
