import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, type Config } from './config.ts';
import { startApiKeyCache } from './platform/api-key-cache.ts';
import { systemClock, type Clock } from './platform/clock.ts';
import type { Deps } from './platform/context.ts';
import { holdDataDir } from './platform/data-dir-lock.ts';
import { openPglite, openPostgres, type Db, type EmbeddedDatabaseFailure } from './platform/db.ts';
import { needsOwnUpkeep, startTableUpkeep } from './platform/analyze.ts';
import { startJobQueue } from './platform/jobs.ts';
import { jobDefinitions } from './jobs.ts';
import type { Logger } from './platform/logger.ts';
import { migrate } from './platform/migrate.ts';
import { deriveServerKeys, generateSecretsKey } from './platform/secrets.ts';
import { recordApiKeyUse } from './modules/identity/service.ts';
import { openKnowledgeEngine } from './modules/knowledge/service.ts';
import { decideMachinesWith, onCallEnded } from './modules/calls/service.ts';
import { afterCallsEnded } from './modules/campaigns/service.ts';
import { machinePolicyOf } from './modules/conversation/service.ts';

export const IN_MEMORY = 'memory://';

export interface Runtime extends Deps {
  /** Migrations this process applied at start (empty when the schema was current). */
  appliedMigrations: string[];
  /** True when this process created the database's tables just now (a fresh install). */
  freshDatabase: boolean;
  close(): Promise<void>;
}

/** Embedded mode keeps its generated key beside the data, outside the database it protects. */
function embeddedSecretsKey(dataDir: string): string {
  if (dataDir === IN_MEMORY) return generateSecretsKey();
  const path = join(dataDir, 'secrets.key');
  if (existsSync(path)) return readFileSync(path, 'utf8').trim();
  const key = generateSecretsKey();
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(path, key + '\n', { mode: 0o600 });
  chmodSync(path, 0o600);
  return key;
}

/**
 * Opens everything a process needs, in order: the data-directory lock (before anything is
 * written), the database, migrations, keys, the job queue and the API-key cache.
 */
export async function openRuntime(
  config: Config,
  options: {
    log: Logger;
    clock?: Clock;
    superviseJobs: boolean;
    /** What this process is, written into the embedded data directory's lock for a refused process to name. */
    holder?: string;
    /** The embedded database failed inside a statement and takes none any more (after it is logged). */
    onDatabaseFailure?: (failure: EmbeddedDatabaseFailure) => void;
  },
): Promise<Runtime> {
  const clock = options.clock ?? systemClock;
  // The campaign an attempt belongs to learns its result in the transaction that ends the call.
  onCallEnded(afterCallsEnded);
  // A machine that answers a campaign's call gets the campaign's policy, its voicemail filled for the call.
  decideMachinesWith(machinePolicyOf);
  const embedded = !config.databaseUrl;
  if (!embedded && !config.secretsKey) {
    throw new ConfigError(
      'Invalid configuration: SECRETS_KEY is required with DATABASE_URL, and every process must share it. Generate one with `openssl rand -base64 32`.',
    );
  }
  const release = embedded && config.dataDir !== IN_MEMORY ? holdDataDir(config.dataDir, options.holder) : () => undefined;
  let db: Db | undefined;
  try {
    db = config.databaseUrl
      ? openPostgres(config.databaseUrl, config.dbPoolSize, config.dbStatementTimeoutMs)
      : await openPglite(config.dataDir === IN_MEMORY ? undefined : join(config.dataDir, 'pg'), (failure) => {
          options.log.fatal(
            { err: failure },
            'the embedded database failed inside a statement; no statement runs until the service restarts',
          );
          options.onDatabaseFailure?.(failure);
        });
    const { applied } = await migrate(db);
    const serverKeys = deriveServerKeys(config.secretsKey ?? embeddedSecretsKey(config.dataDir), config.previousSecretsKey);
    const jobs = await startJobQueue(db, {
      databaseUrl: config.databaseUrl,
      supervise: options.superviseJobs,
      pollSeconds: config.jobsPollSeconds,
      maintenanceSeconds: config.jobsMaintenanceSeconds,
      recoverySeconds: config.jobsRecoverySeconds,
      log: options.log,
    });
    const apiKeyCache = await startApiKeyCache(db, clock, options.log, recordApiKeyUse(db));
    const knowledge = await openKnowledgeEngine(db, config, options.log);
    // Every role sends jobs, so every queue exists before the first request or tick.
    await jobs.define(jobDefinitions({ config, db, jobs, clock, log: options.log, serverKeys, apiKeyCache, knowledge }));
    const opened = db;
    const stopUpkeep = (await needsOwnUpkeep(opened)) ? startTableUpkeep(opened, config.analyzeSeconds, options.log) : () => undefined;
    return {
      config,
      db: opened,
      jobs,
      clock,
      log: options.log,
      serverKeys,
      apiKeyCache,
      knowledge,
      appliedMigrations: applied,
      freshDatabase: applied.length > 0 && applied[0]!.startsWith('001_'),
      async close() {
        stopUpkeep();
        await jobs.stop().catch((error: unknown) => options.log.warn({ err: error }, 'job queue did not stop cleanly'));
        await apiKeyCache.close();
        await opened.close();
        release();
      },
    };
  } catch (error) {
    await db?.close().catch(() => undefined);
    release();
    throw error;
  }
}
