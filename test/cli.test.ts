import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EnvSchema } from '../src/config.ts';
import { createTestDatabase } from './harness.ts';

/**
 * The `callforge` CLI run as the operator runs it: `node bin/callforge.js …` in child processes,
 * against a database of its own (a fresh database on $DATABASE_URL's server, else a fresh
 * embedded data directory).
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = join(ROOT, 'bin', 'callforge.js');
const SLOW = 120_000; // one CLI process opening the database; a fresh embedded directory runs initdb first

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment of the test run without any callforge setting, so only what a test passes counts. */
function baseEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) if (value !== undefined) env[name] = value;
  for (const name of [...Object.keys(EnvSchema.properties), 'NODE_OPTIONS']) delete env[name];
  return env;
}

function cli(args: string[], env: Record<string, string>, cwd = ROOT): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { cwd, env: { ...baseEnv(), ...env }, timeout: SLOW }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** Runs a command that must succeed with --json and returns its one JSON object. */
async function cliJson<T = Record<string, unknown>>(args: string[], env: Record<string, string>): Promise<T> {
  const run = await cli([...args, '--json'], env);
  // stderr says only which database the command opened; stdout is the one JSON object.
  expect(run.stderr).toMatch(
    /^Database: (embedded PostgreSQL \(PGlite\) in \S+\/pg|PostgreSQL database "\w+" on [\w.]+:\d+(, user \w+)?)\n$/,
  );
  expect(run.stderr).not.toMatch(/password|:\/\//i);
  expect(run.code).toBe(0);
  expect(run.stdout.trim().split('\n')).toHaveLength(1);
  return JSON.parse(run.stdout) as T;
}

interface CreatedKey {
  id: string;
  key: string;
  keyPrefix: string;
  status: string;
  expiresAt: string | null;
  webhookUrl: string | null;
  webhookSecret?: string;
}

describe('callforge CLI', () => {
  let env: Record<string, string>;
  let cleanup: () => Promise<void>;

  beforeAll(async () => {
    const common = { LOG_LEVEL: 'silent', DEMO_BOOTSTRAP: '0', STARTING_CREDIT: '10' };
    const database = await createTestDatabase('callforge_cli');
    if (database) {
      env = { ...common, DATABASE_URL: database.url, SECRETS_KEY: randomBytes(32).toString('base64') };
      cleanup = database.drop;
    } else {
      const dataDir = mkdtempSync(join(tmpdir(), 'callforge-cli-'));
      env = { ...common, DATA_DIR: dataDir };
      cleanup = async () => rmSync(dataDir, { recursive: true, force: true });
    }
  });

  afterAll(async () => {
    await cleanup?.();
  });

  let tenantId: string;
  let firstKey: CreatedKey;

  it(
    'migrate applies the migrations once',
    async () => {
      const first = await cliJson<{ applied: string[] }>(['migrate'], env);
      expect(first.applied).toContain('001_identity.sql');
      expect(first.applied).toEqual([...first.applied].sort());
      const again = await cli(['migrate'], env);
      expect(again.code).toBe(0);
      expect(again.stdout).toMatch(/up to date/);
    },
    SLOW * 2,
  );

  it(
    'tenant create makes a tenant with its owner',
    async () => {
      const email = `owner-${randomBytes(4).toString('hex')}@example.com`;
      const created = await cliJson<{ tenantId: string; userId: string; email: string }>(
        ['tenant', 'create', '--name', 'Acme CLI', '--email', email, '--password', 'correct horse'],
        env,
      );
      expect(created.tenantId).toMatch(/^[0-9a-f-]{36}$/);
      expect(created.userId).toMatch(/^[0-9a-f-]{36}$/);
      expect(created.email).toBe(email);
      tenantId = created.tenantId;
    },
    SLOW,
  );

  it(
    'tenant list shows every tenant with its owner and wallet',
    async () => {
      const list = await cliJson<{
        data: { id: string; name: string; ownerEmail: string; balance: string; currency: string }[];
        total: number;
      }>(['tenant', 'list', '--limit', '200'], env);
      expect(list.total).toBeGreaterThanOrEqual(1);
      expect(list.data.find((t) => t.id === tenantId)).toMatchObject({
        name: 'Acme CLI',
        balance: '10.0000',
        currency: 'USD',
        status: 'ACTIVE',
      });
      const text = await cli(['tenant', 'list'], env);
      expect(text.code).toBe(0);
      expect(text.stdout).toMatch(new RegExp(`^${list.total} tenants?:\n`));
      expect(text.stdout).toContain(`${tenantId}  ACTIVE`);
    },
    SLOW,
  );

  it(
    'key create --tenant returns the key, shown once',
    async () => {
      firstKey = await cliJson<CreatedKey>(['key', 'create', '--tenant', tenantId, '--name', 'ci'], env);
      expect(firstKey.key).toMatch(/^aok_[A-Za-z0-9_-]{43}$/);
      expect(firstKey.keyPrefix).toBe(firstKey.key.slice(0, 12));
      expect(firstKey.keyPrefix).toMatch(/^aok_.{8}$/);
      expect(firstKey.status).toBe('ACTIVE');
      expect(firstKey.expiresAt).toBeNull();
      expect(firstKey).not.toHaveProperty('webhookSecret');
    },
    SLOW,
  );

  it(
    'key create accepts an expiry in the past (backfill) and a webhook',
    async () => {
      const key = await cliJson<CreatedKey>(
        [
          'key',
          'create',
          '--tenant',
          tenantId,
          '--name',
          'old',
          '--expires-at',
          '2020-01-01',
          '--webhook-url',
          'https://hooks.example.com/calls',
        ],
        env,
      );
      expect(key.status).toBe('EXPIRED');
      expect(key.expiresAt).toBe('2020-01-02T00:00:00.000Z'); // a bare date means the end of that day
      expect(key.webhookUrl).toBe('https://hooks.example.com/calls');
      expect(key.webhookSecret).toMatch(/^whsec_/);
    },
    SLOW,
  );

  it(
    'key create --platform makes a key of no tenant',
    async () => {
      const key = await cliJson<CreatedKey>(
        ['key', 'create', '--platform', '--name', 'platform ops', '--expires-at', '2999-12-31T23:00:00+01:00'],
        env,
      );
      expect(key.key).toMatch(/^aok_/);
      expect(key.status).toBe('ACTIVE');
      expect(key.expiresAt).toBe('2999-12-31T22:00:00.000Z');
    },
    SLOW,
  );

  it(
    'key create needs exactly one of --tenant and --platform',
    async () => {
      const [both, neither] = await Promise.all([
        cli(['key', 'create', '--tenant', randomUUID(), '--platform', '--name', 'x'], env),
        cli(['key', 'create', '--name', 'x', '--json'], env),
      ]);
      for (const run of [both, neither]) {
        expect(run.code).toBe(2);
        expect(run.stderr).toMatch(/exactly one of --tenant .* or --platform/);
      }
      expect(both.stdout).toBe('');
      expect(JSON.parse(neither.stdout)).toEqual({ error: { code: 'USAGE', message: expect.stringMatching(/--platform/) } });
    },
    SLOW,
  );

  it(
    'refuses bad option values, naming the option, before opening the database',
    async () => {
      const runs = await Promise.all([
        cli(['wallet', 'credit', '--tenant', randomUUID(), '--amount', '12,5'], env),
        cli(['wallet', 'credit', '--tenant', randomUUID(), '--amount', '-3'], env),
        cli(['key', 'create', '--platform', '--name', 'x', '--expires-at', 'next tuesday'], env),
        cli(['key', 'create', '--platform', '--name', 'x', '--expires-at', '2026-02-30'], env),
        cli(['key', 'create', '--tenant', 'acme', '--name', 'x'], env),
        cli(['tenant', 'create', '--name', 'N', '--email', 'not-an-email', '--password', 'long enough'], env),
        cli(['tenant', 'create', '--name', 'N', '--email', 'a@example.com', '--password', 'short'], env),
        cli(['wallet', 'credit', '--tenant', randomUUID()], env),
      ]);
      const options = ['--amount', '--amount', '--expires-at', '--expires-at', '--tenant', '--email', '--password', '--amount'];
      runs.forEach((run, i) => {
        expect(run.code, run.stderr).toBe(2);
        expect(run.stderr).toContain(options[i]);
        expect(run.stdout).toBe('');
      });
    },
    SLOW,
  );

  it(
    'an unknown tenant is a clear error',
    async () => {
      const unknown = randomUUID();
      const run = await cli(['key', 'create', '--tenant', unknown, '--name', 'x', '--json'], env);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(`No tenant with id ${unknown}`);
      expect(JSON.parse(run.stdout)).toEqual({ error: { code: 'NOT_FOUND', message: `No tenant with id ${unknown}.` } });
    },
    SLOW,
  );

  it(
    'wallet credit adds exactly',
    async () => {
      const wallet = await cliJson<{ walletId: string; balance: string; currency: string }>(
        ['wallet', 'credit', '--tenant', tenantId, '--amount', '2.5'],
        env,
      );
      expect(wallet).toEqual({ walletId: expect.stringMatching(/^[0-9a-f-]{36}$/), balance: '12.5000', currency: 'USD' });
    },
    SLOW,
  );

  it(
    'key revoke revokes a key, and key list shows it',
    async () => {
      const revoked = await cli(['key', 'revoke', firstKey.id], env);
      expect(revoked.code).toBe(0);
      expect(revoked.stdout).toBe(`Revoked API key ${firstKey.id}.\n`);
      const list = await cliJson<{ data: { id: string; status: string; name: string }[]; total: number }>(
        ['key', 'list', '--tenant', tenantId],
        env,
      );
      expect(list.total).toBe(2);
      expect(Object.fromEntries(list.data.map((k) => [k.name, k.status]))).toEqual({ ci: 'REVOKED', old: 'EXPIRED' });
      expect(JSON.stringify(list)).not.toContain(firstKey.key);
    },
    SLOW * 2,
  );

  it(
    'key revoke of an unknown key fails',
    async () => {
      const run = await cli(['key', 'revoke', randomUUID(), '--json'], env);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/API key not found/);
      expect(JSON.parse(run.stdout).error.code).toBe('NOT_FOUND');
    },
    SLOW,
  );

  it(
    'demo creates a tenant with a key, a login and a running simulator campaign',
    async () => {
      const demo = await cliJson<{
        tenantId: string;
        email: string;
        password: string;
        apiKey: string;
        campaignId: string;
        server: { url: string; running: boolean };
      }>(['demo'], { ...env, PORT: '3999' });
      expect(demo.campaignId).toMatch(/^[0-9a-f-]{36}$/);
      expect(demo.apiKey).toMatch(/^aok_/);
      expect(demo.email).toMatch(/@/);
      expect(demo.password.length).toBeGreaterThanOrEqual(8);
      expect(demo.tenantId).not.toBe(tenantId);
      // No server answers on this port: the demo says so, never that it dials, with the port given.
      expect(demo.server).toEqual({ url: 'http://localhost:3999', running: false });
      const text = await cli(['demo', '--url', 'http://127.0.0.1:3998/'], env);
      expect(text.code).toBe(0);
      expect(text.stdout).toContain('nothing answers at http://127.0.0.1:3998, so nothing dials yet. Start the server (npm start)');
      expect(text.stdout).not.toMatch(/dialling the simulator now|localhost:3000/);
      expect(text.stdout).toContain('http://127.0.0.1:3998/api/v1/call-logs');
      // Two demo tenants are told apart by name.
      const names = (await cliJson<{ data: { name: string }[] }>(['tenant', 'list', '--limit', '200'], env)).data
        .map((tenant) => tenant.name)
        .filter((name) => name.startsWith('Demo'));
      expect(names).toHaveLength(2);
      expect(new Set(names).size).toBe(2);
    },
    SLOW,
  );

  it(
    'secrets reseal seals every integration secret again with the current key',
    async () => {
      const out = await cliJson<{ integrations: number; webhookSecrets: number; toolSecrets: number }>(['secrets', 'reseal'], env);
      // The key made above with --webhook-url, and the two demos' agents.
      expect(out).toEqual({ integrations: 0, webhookSecrets: 1, toolSecrets: 2 });
    },
    SLOW,
  );

  it(
    'bad configuration is reported, exit 1',
    async () => {
      const run = await cli(['migrate'], { ...env, STARTING_CREDIT: 'lots' });
      expect(run.code).toBe(1);
      expect(run.stderr).toContain('STARTING_CREDIT');
    },
    SLOW,
  );

  it('prints its version and its own help, also through npx in the project', async () => {
    const version = await cli(['--version'], env);
    expect(version.stdout).toBe(`${JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version}\n`);
    const help = await new Promise<string>((done) =>
      execFile('npx', ['--no-install', 'callforge', '--help'], { cwd: ROOT, env: baseEnv(), timeout: SLOW }, (_error, stdout) =>
        done(stdout),
      ),
    );
    expect(help).toContain('Usage: callforge [options] [command]');
    for (const command of ['migrate', 'tenant', 'key', 'wallet', 'demo']) expect(help).toMatch(new RegExp(`\\n  ${command}\\b`));
  });

  it(
    'says which directory it opens when DATA_DIR is unset, and names the server that holds it',
    async () => {
      const cwd = mkdtempSync(join(tmpdir(), 'callforge-cli-cwd-'));
      try {
        mkdirSync(join(cwd, 'data'));
        writeFileSync(join(cwd, 'data', 'callforge.lock'), `${process.pid}\nthe callforge server`); // this test runner: alive
        const run = await cli(['tenant', 'list'], { LOG_LEVEL: 'silent' }, cwd);
        expect(run.stderr).toContain(
          `Database: embedded PostgreSQL (PGlite) in ${join(realpathSync(cwd), 'data', 'pg')} (DATA_DIR is not set: ./data in the current directory)`,
        );
        expect(run.code).toBe(1);
        expect(run.stderr).toContain(`held by process ${process.pid} (the callforge server)`);
        expect(existsSync(join(cwd, 'data', 'pg'))).toBe(false);
      } finally {
        rmSync(cwd, { recursive: true, force: true });
      }
    },
    SLOW,
  );

  it(
    'refuses at once when another process holds the embedded data directory',
    async () => {
      // The lock exists only in embedded mode, so this runs on a data directory of its own either way.
      const dataDir = mkdtempSync(join(tmpdir(), 'callforge-cli-held-'));
      try {
        writeFileSync(join(dataDir, 'callforge.lock'), String(process.pid)); // this test runner: alive
        const heldEnv = { LOG_LEVEL: 'silent', DEMO_BOOTSTRAP: '0', DATA_DIR: dataDir };
        const runs = await Promise.all([
          cli(['migrate'], heldEnv),
          cli(['tenant', 'create', '--name', 'N', '--email', 'held@example.com', '--password', 'long enough', '--json'], heldEnv),
        ]);
        for (const run of runs) {
          expect(run.code).toBe(1);
          expect(run.stderr).toContain(`held by process ${process.pid}`);
          expect(run.stderr).toMatch(/DATABASE_URL/);
        }
        expect(JSON.parse(runs[1]!.stdout).error.code).toBe('DATA_DIR_BUSY');
        expect(existsSync(join(dataDir, 'pg'))).toBe(false); // nothing written before the lock
        expect(existsSync(join(dataDir, 'secrets.key'))).toBe(false);
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
    SLOW,
  );
});
