import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.ts';

describe('configuration from the environment', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 3000,
      dataDir: './data',
      databaseUrl: undefined,
      role: 'all',
      signupEnabled: true,
      startingCredit: '10',
      rateLimitPerMinute: 1200,
    });
  });

  it('names the bad variable and what it should be', () => {
    expect(() => loadConfig({ PORT: 'abc' })).toThrow(ConfigError);
    expect(() => loadConfig({ PORT: 'abc' })).toThrow('PORT="abc" is invalid: expected an integer from 0 to 65535.');
    expect(() => loadConfig({ PORT: '70000' })).toThrow('PORT="70000"');
    expect(() => loadConfig({ DATABASE_URL: 'mysql://x' })).toThrow(
      'DATABASE_URL="mysql://x" is invalid: expected a postgres:// or postgresql:// URL.',
    );
    expect(() => loadConfig({ SIGNUP_ENABLED: 'maybe' })).toThrow('SIGNUP_ENABLED="maybe" is invalid: expected 1, 0, true or false.');
    expect(() => loadConfig({ STARTING_CREDIT: '-1' })).toThrow('STARTING_CREDIT');
    expect(() => loadConfig({ JOBS_POLL_SECONDS: '0.1' })).toThrow('JOBS_POLL_SECONDS');
  });

  it('reads rates per provider, refusing a provider it does not know or a channel the provider does not serve', () => {
    const config = loadConfig({ RATE_PROVIDERS: '{"ESPEAK": {"ttsPer1kCharacters": "0"}, "TWILIO": {"telephonyPerMinute": "0.0085"}}' });
    expect(config.rates.providers).toEqual({ ESPEAK: { ttsPer1kCharacters: '0' }, TWILIO: { telephonyPerMinute: '0.0085' } });
    expect(loadConfig({}).rates.providers).toEqual({});
    for (const refused of [
      '{"ESPEEK": {"ttsPer1kCharacters": "0"}}', // no such provider
      '{"ESPEAK": {"sttPerMinute": "0"}}', // eSpeak does not listen
      '{"DEEPGRAM": {"sttPerMinute": "-1"}}',
      '{"DEEPGRAM": {"sttPerMinute": 0.5}}', // a number, not a decimal string
      '{"DEEPGRAM": {"perMinute": "0.5"}}',
      '["DEEPGRAM"]',
      'not json',
    ])
      expect(() => loadConfig({ RATE_PROVIDERS: refused }), refused).toThrow(
        `RATE_PROVIDERS=${JSON.stringify(refused)} is invalid: expected a JSON object of provider names`,
      );
  });

  it('listens on the loopback address on the embedded database and on every address with a PostgreSQL server, unless HOST says', () => {
    expect(loadConfig({}).host).toBe('127.0.0.1');
    expect(loadConfig({ DATABASE_URL: 'postgres://db/callforge' }).host).toBe('0.0.0.0');
    expect(loadConfig({ HOST: '0.0.0.0' }).host).toBe('0.0.0.0');
    expect(loadConfig({ HOST: '::1', DATABASE_URL: 'postgres://db/callforge' }).host).toBe('::1');
  });

  it('reads the log format', () => {
    expect(loadConfig({}).logFormat).toBe('auto');
    expect(loadConfig({ LOG_FORMAT: 'json' }).logFormat).toBe('json');
    expect(() => loadConfig({ LOG_FORMAT: 'xml' })).toThrow('LOG_FORMAT="xml" is invalid: expected auto, pretty or json.');
  });

  it('reads the proxies to trust: none by default, a list of addresses and ranges, or a hop count', () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8, loopback,2001:db8::1' }).trustProxy).toEqual(['10.0.0.0/8', 'loopback', '2001:db8::1']);
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
    for (const bad of ['true', '10.0.0.0/33', 'proxy.internal', '10.0.0.1,,10.0.0.2'])
      expect(() => loadConfig({ TRUST_PROXY: bad })).toThrow(
        `TRUST_PROXY=${JSON.stringify(bad)} is invalid: expected addresses or CIDR ranges`,
      );
  });

  it('reads booleans and numbers', () => {
    const config = loadConfig({ SIGNUP_ENABLED: 'false', PORT: '0', ALLOW_PRIVATE_URLS: '1', STARTING_CREDIT: '12.5' });
    expect(config).toMatchObject({ signupEnabled: false, port: 0, allowPrivateUrls: true, startingCredit: '12.5' });
  });
});

describe('docs/configuration.md', () => {
  it('is generated from the schema and up to date (npm run docs:config)', async () => {
    const { readFileSync } = await import('node:fs');
    const { configurationMarkdown } = await import('./config-docs.ts');
    expect(readFileSync(new URL('../docs/configuration.md', import.meta.url), 'utf8')).toBe(configurationMarkdown());
  });
});
