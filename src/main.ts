import { parseArgs } from 'node:util';
import { buildApp } from './app.ts';
import { ConfigError, loadConfig } from './config.ts';
import { DataDirBusyError } from './platform/data-dir-lock.ts';
import { createLogger } from './platform/logger.ts';
import { startWorkerHealth } from './platform/health.ts';
import { openRuntime } from './runtime.ts';
import { createDemoTenant, describeDemo } from './demo.ts';
import { describeStart } from './banner.ts';
import { countTenants } from './modules/identity/service.ts';
import { jobDefinitions } from './jobs.ts';
import { startDialer } from './modules/campaigns/dialer.ts';

async function main() {
  const { values } = parseArgs({ options: { role: { type: 'string' } }, strict: true });
  const config = loadConfig({ ...process.env, ...(values.role ? { ROLE: values.role } : {}) });
  if (config.role !== 'all' && !config.databaseUrl) {
    throw new ConfigError(
      `Invalid configuration: role "${config.role}" runs beside other processes and needs a PostgreSQL server; set DATABASE_URL. ` +
        'The embedded database is held by one process, which runs with role "all" (npm start).',
    );
  }
  const log = createLogger(config.logLevel, { format: config.logFormat });
  // A failed embedded database recovers only in a new process (its data from the write-ahead log):
  // exit for the supervisor (systemd, Docker's restart policy) to start one.
  const runtime = await openRuntime(config, {
    log,
    superviseJobs: config.role !== 'api',
    holder: 'the callforge server',
    onDatabaseFailure: () => process.exit(1),
  });

  const running: {
    app?: Awaited<ReturnType<typeof buildApp>>;
    dialer?: ReturnType<typeof startDialer>;
    health?: Awaited<ReturnType<typeof startWorkerHealth>>;
  } = {};
  const stop = async (signal: string) => {
    log.info({ signal }, 'shutting down');
    await running.app?.close();
    await running.health?.close();
    await running.dialer?.stop();
    await runtime.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));

  // The worker role's probes listen before its queues start: /readyz tells when they have.
  if (config.role === 'worker' && config.workerHealthPort > 0)
    running.health = await startWorkerHealth(runtime, { port: config.workerHealthPort, host: config.host });
  if (config.role !== 'api') {
    const jobs = jobDefinitions(runtime);
    await runtime.jobs.work(jobs);
    running.dialer = startDialer(runtime);
    log.info({ queues: jobs.map((d) => d.name) }, 'workers and dialer started');
  }
  if (config.role === 'worker') return;

  const app = (running.app = await buildApp(runtime));
  const address = await app.listen({ port: config.port, host: config.host });
  const port = Number(new URL(address).port);
  process.stdout.write(describeStart(config, port) + '\n');
  if (!config.databaseUrl && config.demoBootstrap && runtime.freshDatabase && (await countTenants(runtime.db)) === 0) {
    process.stdout.write(describeDemo(await createDemoTenant(runtime), `http://localhost:${port}`, true) + '\n');
  }
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError || error instanceof DataDirBusyError) {
    process.stderr.write(`${error.message}\n`);
  } else {
    process.stderr.write(`callforge failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  }
  process.exit(1);
});
