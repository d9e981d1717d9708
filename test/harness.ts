import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { pino } from 'pino';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import type { Clock } from '../src/platform/clock.ts';
import type { Queryable } from '../src/platform/db.ts';
import { createLogger, type Logger } from '../src/platform/logger.ts';
import { generateSecretsKey } from '../src/platform/secrets.ts';
import { IN_MEMORY, openRuntime, type Runtime } from '../src/runtime.ts';

/**
 * The one test harness: a real app on a real database. Embedded PGlite in memory by default;
 * with DATABASE_URL set, a database of its own on that server, dropped afterwards.
 */
export interface TestApp {
  app: FastifyInstance;
  runtime: Runtime;
  databaseUrl: string | undefined;
  close(): Promise<void>;
}

const PROTECTED_DATABASES = new Set(['test', 'root', 'postgres', 'template0', 'template1']);

export async function createTestDatabase(prefix = 'callforge_test'): Promise<{ url: string; drop(): Promise<void> } | undefined> {
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) return undefined;
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      if (PROTECTED_DATABASES.has(name)) throw new Error(`refusing to drop ${name}`);
      const client = new pg.Client({ connectionString: serverUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

/** `log`: a logger to read what the service logs (silent by default). */
export async function startTestApp(options: { env?: Record<string, string>; clock?: Clock; log?: Logger } = {}): Promise<TestApp> {
  const database = await createTestDatabase();
  const config = loadConfig({
    DATA_DIR: IN_MEMORY,
    LOG_LEVEL: 'silent',
    DEMO_BOOTSTRAP: '0',
    JOBS_POLL_SECONDS: '0.5',
    SECRETS_KEY: generateSecretsKey(),
    ...(database ? { DATABASE_URL: database.url } : {}),
    ...options.env,
  });
  const runtime = await openRuntime(config, {
    log: options.log ?? createLogger(config.logLevel),
    clock: options.clock,
    superviseJobs: true,
  });
  const app = await buildApp(runtime);
  await app.ready();
  return {
    app,
    runtime,
    databaseUrl: database?.url,
    async close() {
      await app.close();
      await runtime.close();
      await database?.drop();
    },
  };
}

/** A logger at `level` that keeps what it writes, one parsed JSON entry each, for a test to read. */
export function capturedLog(level = 'debug'): { log: Logger; entries: Record<string, unknown>[] } {
  const entries: Record<string, unknown>[] = [];
  const log = pino({ level }, { write: (line: string) => void entries.push(JSON.parse(line) as Record<string, unknown>) });
  return { log, entries };
}

/** Polls `probe` every 50 ms until it answers something truthy, which it returns; fails after `ms`. */
export async function until<T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Polls (PostgreSQL) until a session of this database waits for a lock of the kind `waitEvent`
 * (pg_stat_activity's wait_event: `advisory`, `transactionid`, …): the other side of a race a test
 * holds open in its own transaction. `db` must not be that transaction: its view would not change.
 */
export const untilWaitingForLock = (db: Queryable, what: string, waitEvent: string) =>
  until(
    what,
    async () =>
      (
        await db.query(
          "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = $1",
          [waitEvent],
        )
      ).rowCount! > 0,
    10_000,
  );

/**
 * A real database fault a test installs: until the returned function drops it, a trigger refuses
 * each `event` on `table` whose row `when` holds for (an SQL condition on NEW), raising `message`.
 */
export async function refusedWrites(
  db: Queryable,
  table: string,
  event: 'INSERT' | 'UPDATE',
  when: string,
  message: string,
): Promise<() => Promise<void>> {
  const name = `test_refuses_${randomBytes(4).toString('hex')}`;
  await db.query(
    `CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION '${message.replaceAll("'", "''")}'; END $$`,
  );
  await db.query(`CREATE TRIGGER ${name} BEFORE ${event} ON ${table} FOR EACH ROW WHEN (${when}) EXECUTE FUNCTION ${name}()`);
  return async () => {
    await db.query(`DROP TRIGGER ${name} ON ${table}`);
    await db.query(`DROP FUNCTION ${name}()`);
  };
}

let counter = 0;

/** Signs up a new tenant over HTTP and returns its session token. */
export async function signUp(app: FastifyInstance, overrides: Record<string, unknown> = {}) {
  counter++;
  const email = `owner-${counter}-${randomBytes(4).toString('hex')}@example.com`;
  const response = await app.inject({
    method: 'POST',
    url: '/api/v1/auth/signup',
    payload: { tenantName: `Tenant ${counter}`, email, password: 'correct horse battery', ...overrides },
  });
  if (response.statusCode !== 201) throw new Error(`signup failed: ${response.statusCode} ${response.body}`);
  const body = response.json() as { accessToken: string; user: { id: string; tenantId: string; email: string } };
  return { token: body.accessToken, user: body.user, tenantId: body.user.tenantId, email, password: 'correct horse battery' };
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** Creates an API key through the dashboard route. */
export async function createKey(app: FastifyInstance, sessionToken: string, body: Record<string, unknown> = {}) {
  const response = await app.inject({
    method: 'POST',
    url: '/api/v1/api-keys',
    headers: bearer(sessionToken),
    payload: { name: 'test key', ...body },
  });
  if (response.statusCode !== 201) throw new Error(`key creation failed: ${response.statusCode} ${response.body}`);
  return response.json() as {
    id: string;
    key: string;
    keyPrefix: string;
    webhookSecret?: string;
    status: string;
    expiresAt: string | null;
  };
}

/** An API key for each of two fresh tenants: the caller's and another tenant's, for isolation checks. */
export async function twoTenantKeys(app: FastifyInstance) {
  const key = (await createKey(app, (await signUp(app)).token)).key;
  const otherKey = (await createKey(app, (await signUp(app)).token)).key;
  return { key, otherKey };
}

/** A file in a multipart/form-data body, as a browser uploads it. */
export function multipart(content: string | Buffer, field = 'file', filename = 'contacts.csv') {
  const boundary = `----callforge${randomBytes(12).toString('hex')}`;
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="${filename}"\r\nContent-Type: text/csv\r\n\r\n`;
  const body = Buffer.concat([
    Buffer.from(head),
    Buffer.isBuffer(content) ? content : Buffer.from(content),
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}

/**
 * POSTs `body` over a real connection in pieces of `pieceBytes`, letting the server's event loop
 * turn between pieces, as a slow network delivers an upload. Resolves with the answer, or with
 * `undefined` when none came within `deadlineMs` (the request is then dropped).
 */
export function postInPieces(
  url: string,
  headers: Record<string, string>,
  body: Buffer,
  { pieceBytes = 1024, deadlineMs = 20_000 } = {},
): Promise<{ status: number; body: string } | undefined> {
  return new Promise((resolve) => {
    const request = http.request(url, { method: 'POST', headers: { ...headers, 'content-length': String(body.length) } }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode!, body: text }));
    });
    const deadline = setTimeout(() => {
      request.destroy();
      resolve(undefined);
    }, deadlineMs);
    request.on('close', () => clearTimeout(deadline));
    request.on('error', () => resolve(undefined));
    let offset = 0;
    const writeNext = () => {
      if (offset >= body.length) return void request.end();
      request.write(body.subarray(offset, (offset += pieceBytes)));
      setImmediate(writeNext);
    };
    writeNext();
  });
}
