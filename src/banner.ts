import { resolve } from 'node:path';
import type { Config } from './config.ts';

/** Which database a process uses, in words, never with its password: for the banner and the CLI. */
export function describeDatabase(config: Pick<Config, 'databaseUrl' | 'dataDir'>): string {
  if (!config.databaseUrl) return `embedded PostgreSQL (PGlite) in ${resolve(config.dataDir, 'pg')}`;
  const url = new URL(config.databaseUrl);
  const host = url.hostname || url.searchParams.get('host') || 'localhost';
  const database = decodeURIComponent(url.pathname.replace(/^\//, '')) || decodeURIComponent(url.username) || 'postgres';
  const user = url.username ? `, user ${decodeURIComponent(url.username)}` : '';
  return `PostgreSQL database "${database}" on ${host}:${url.port || '5432'}${user}`;
}

/** The loopback addresses: a server bound to one is reachable from this machine only. */
const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

/**
 * What a person starting the service needs first: where the dashboard and the API docs are,
 * which database it uses and where its data lives, and who can reach it.
 */
export function describeStart(config: Config, port: number): string {
  const base = `http://localhost:${port}`;
  const reach = LOOPBACK.has(config.host)
    ? 'this machine only (set HOST=0.0.0.0 to let others in)'
    : 'every machine that can reach this one';
  return [
    '',
    `  callforge is running`,
    `  Dashboard:  ${base}/`,
    `  API docs:   ${base}/docs`,
    `  Database:   ${describeDatabase(config)}`,
    ...(config.databaseUrl ? [] : [`  Data dir:   ${resolve(config.dataDir)}`]),
    `  Listening:  ${config.host}:${port}, ${reach}`,
    `  Sign-up:    ${config.signupEnabled ? 'open to anyone who reaches the dashboard' : 'closed (SIGNUP_ENABLED=0); create tenants with npx callforge tenant create'}`,
    '',
  ].join('\n');
}
