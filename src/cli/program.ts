import { Command, CommanderError, Option } from 'commander';
import { ConfigError, loadConfig, type Config } from '../config.ts';
import { DataDirBusyError } from '../platform/data-dir-lock.ts';
import { AppError, appError } from '../platform/errors.ts';
import { createLogger, type Logger } from '../platform/logger.ts';
import { describeDatabase } from '../banner.ts';
import { SERVICE_VERSION } from '../version.ts';
import type { Runtime } from '../runtime.ts';
import { CreateApiKeyBody, SignupBody } from '../modules/identity/schemas.ts';
import {
  RemoteError,
  UsageError,
  checkAgainst,
  parseAmount,
  parseCountry,
  parseCredit,
  parseCurrency,
  parseExpiry,
  parsePositiveInt,
  parseServerUrl,
  parseUuid,
} from './args.ts';

/**
 * `callforge`, the operator's command-line tool (contract §11). It reads the same environment as
 * the server (DATABASE_URL or DATA_DIR, SECRETS_KEY, ...).
 *
 * Output: a short sentence on stdout, or with `--json` exactly one JSON object on stdout.
 * Errors: the message on stderr; with `--json` also `{"error": {"code", "message"}}` on stdout.
 * Exit codes: 0 success; 1 the command could not be carried out (bad configuration, data
 * directory held by another process, unknown tenant or key, database error); 2 bad usage
 * (unknown command, missing or invalid option).
 */

export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
}

/** Logs go to stderr so stdout stays one JSON object; only warnings and worse unless LOG_LEVEL is quieter. */
function cliLogger(config: Config): Logger {
  const quieter = ['error', 'fatal', 'silent'].includes(config.logLevel);
  return createLogger(quieter ? config.logLevel : 'warn', { toStderr: true });
}

/** Which database a command works on, said on stderr before it opens it (stdout stays the command's own). */
function databaseLine(config: Config, env: NodeJS.ProcessEnv): string {
  const defaulted = !config.databaseUrl && !env.DATA_DIR ? ' (DATA_DIR is not set: ./data in the current directory)' : '';
  return `Database: ${describeDatabase(config)}${defaulted}\n`;
}

/** Opens the database for one command (`command`, e.g. "callforge migrate", named in the data directory's lock). */
async function withRuntime<T>(io: CliIo, command: string, work: (runtime: Runtime) => Promise<T>): Promise<T> {
  const config = loadConfig(process.env);
  io.stderr(databaseLine(config, process.env));
  const { openRuntime } = await import('../runtime.ts');
  const runtime = await openRuntime(config, { log: cliLogger(config), superviseJobs: false, holder: `the command "${command}"` });
  try {
    return await work(runtime);
  } finally {
    await runtime.close();
  }
}

async function requireTenant(runtime: Runtime, tenantId: string): Promise<void> {
  const { tenantExists } = await import('../modules/identity/service.ts');
  if (!(await tenantExists(runtime.db, tenantId))) throw appError('NOT_FOUND.tenant', { tenantId });
}

const jsonOption = () => new Option('--json', 'print one JSON object on stdout');

/** What the command decided beside its output: `exitCode` 1 when it ran and found a failure (a failed test). */
interface CliState {
  json?: boolean;
  command?: string;
  exitCode?: number;
}

export function buildProgram(io: CliIo, state: CliState = {}): Command {
  const program = new Command('callforge');
  const withDatabase = <T>(work: (runtime: Runtime) => Promise<T>) => withRuntime(io, state.command ?? 'callforge', work);
  program
    .description('Operate a callforge installation: migrations, tenants, API keys, wallets, a demo tenant.')
    .version(SERVICE_VERSION, '-V, --version', 'print the version of callforge')
    .exitOverride()
    .configureOutput({ writeOut: (text) => io.stdout(text), writeErr: (text) => io.stderr(text) })
    .showSuggestionAfterError(true)
    .hook('preAction', (_program, action) => {
      state.json = Boolean(action.opts().json);
      const names: string[] = [];
      for (let command: Command | null = action; command; command = command.parent) names.unshift(command.name());
      state.command = names.join(' ');
    })
    .addHelpText(
      'after',
      '\nConfiguration comes from the same environment as the server (DATABASE_URL or DATA_DIR, SECRETS_KEY, ...);\n' +
        'every command says on stderr which database it opens. The embedded database (DATA_DIR, default ./data)\n' +
        'is held by one process: stop the server before running a command on it.\n' +
        'Exit codes: 0 done, 1 could not be done (configuration, busy data directory, unknown id, database), 2 bad usage.',
    );

  const emit = (data: object, text: string) => io.stdout(state.json ? JSON.stringify(data) + '\n' : text + '\n');

  program
    .command('migrate')
    .description('apply the database migrations not applied yet')
    .addOption(jsonOption())
    .action(async () => {
      const applied = await withDatabase(async (runtime) => runtime.appliedMigrations);
      emit(
        { applied },
        applied.length === 0
          ? 'The database is up to date; no migrations to apply.'
          : `Applied ${applied.length} migration${applied.length === 1 ? '' : 's'}: ${applied.join(', ')}.`,
      );
    });

  program
    .command('secrets')
    .description('provider secrets at rest')
    .command('reseal')
    .description(
      'seal every provider and webhook secret again with SECRETS_KEY (after a rotation; SECRETS_KEY_PREVIOUS opens the old ones)',
    )
    .addOption(jsonOption())
    .action(async () => {
      const resealed = await withDatabase(async (runtime) => {
        const { resealSecrets } = await import('../secrets-rotation.ts');
        return resealSecrets(runtime);
      });
      const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;
      emit(
        resealed,
        `Re-sealed the secrets of ${plural(resealed.integrations, 'integration')}, ${plural(resealed.webhookSecrets, 'webhook signing secret')} and ${plural(resealed.toolSecrets, 'tool signing secret')} with the current SECRETS_KEY; SECRETS_KEY_PREVIOUS can now be removed.`,
      );
    });

  const tenant = program.command('tenant').description('manage tenants');
  tenant
    .command('list')
    .description('list the tenants, oldest first, with their owner and wallet balance')
    .option('--page <n>', 'page number', parsePositiveInt(1_000_000), 1)
    .option('--limit <n>', 'tenants per page, 1 to 200', parsePositiveInt(200), 50)
    .addOption(jsonOption())
    .action(async (opts: { page: number; limit: number }) => {
      const result = await withDatabase(async (runtime) => {
        const [{ listTenants }, { toPage, pageOf }] = await Promise.all([
          import('../modules/identity/service.ts'),
          import('../platform/pagination.ts'),
        ]);
        const page = toPage({ page: opts.page, limit: opts.limit });
        const { data, total } = await listTenants(runtime.db, page);
        return pageOf(data, total, page);
      });
      const lines = result.data.map(
        (t) => `${t.id}  ${t.status.padEnd(9)}  ${t.balance ?? '-'} ${t.currency ?? ''}  ${t.name} <${t.ownerEmail ?? 'no owner'}>`,
      );
      emit(
        result,
        result.total === 0
          ? 'There are no tenants yet; create one with `callforge tenant create` or `callforge demo`.'
          : [`${result.total} tenant${result.total === 1 ? '' : 's'}:`, ...lines].join('\n'),
      );
    });
  tenant
    .command('create')
    .description('create a tenant with its owner and a wallet')
    .requiredOption('--name <name>', "the tenant's name")
    .requiredOption('--email <email>', "the owner's login e-mail")
    .requiredOption('--password <password>', "the owner's password (at least 8 characters)")
    .option('--country <cc>', 'ISO 3166-1 alpha-2 country code, e.g. US', parseCountry)
    .option('--currency <cur>', 'ISO 4217 wallet currency, e.g. USD (default USD)', parseCurrency)
    .option('--credit <amount>', 'starting wallet credit (default $STARTING_CREDIT)', parseCredit)
    .addOption(jsonOption())
    .action(async (opts: { name: string; email: string; password: string; country?: string; currency?: string; credit?: string }) => {
      const input = { tenantName: opts.name, email: opts.email, password: opts.password, country: opts.country, currency: opts.currency };
      checkAgainst(SignupBody, JSON.parse(JSON.stringify(input)) as Record<string, unknown>, {
        tenantName: '--name',
        email: '--email',
        password: '--password',
        country: '--country',
        currency: '--currency',
      });
      const created = await withDatabase(async (runtime) => {
        const { createTenant } = await import('../modules/identity/service.ts');
        return createTenant(runtime.db, runtime.config, { ...input, credit: opts.credit });
      });
      emit(
        { tenantId: created.tenantId, userId: created.user.id, email: created.user.email },
        `Created tenant "${opts.name}" (id ${created.tenantId}); its owner ${created.user.email} can log in (user id ${created.user.id}).`,
      );
    });

  const key = program.command('key').description('manage API keys');
  key
    .command('create')
    .description('create an API key for a tenant (--tenant) or the platform (--platform); its value is shown once')
    .option('--tenant <id>', 'the tenant the key belongs to', parseUuid)
    .option('--platform', 'a platform key, belonging to no tenant')
    .requiredOption('--name <name>', 'a name to recognise the key by')
    .option('--expires-at <time>', 'ISO date (end of that day, UTC) or date-time with time zone; may lie in the past', parseExpiry)
    .option('--webhook-url <url>', 'where call results are posted (http:// or https://)')
    .option('--agent <id>', 'pin the key to this agent', parseUuid)
    .addOption(jsonOption())
    .action(
      async (opts: { tenant?: string; platform?: boolean; name: string; expiresAt?: string; webhookUrl?: string; agent?: string }) => {
        if ((opts.tenant === undefined) === !opts.platform) {
          throw new UsageError('Pass exactly one of --tenant <id> (a key of that tenant) or --platform (a platform key, of no tenant).');
        }
        const body = { name: opts.name, expiresAt: opts.expiresAt, webhookUrl: opts.webhookUrl, agentId: opts.agent };
        checkAgainst(CreateApiKeyBody, JSON.parse(JSON.stringify(body)) as Record<string, unknown>, {
          name: '--name',
          expiresAt: '--expires-at',
          webhookUrl: '--webhook-url',
          agentId: '--agent',
        });
        const created = await withDatabase(async (runtime) => {
          const [{ createApiKey }, { agentExists }] = await Promise.all([
            import('../modules/identity/service.ts'),
            import('../modules/agents/service.ts'),
          ]);
          if (opts.tenant) await requireTenant(runtime, opts.tenant);
          return createApiKey(runtime, opts.tenant ?? null, body, { allowPastExpiry: true, agentExists });
        });
        const lines = [
          `Created ${opts.tenant ? `an API key of tenant ${opts.tenant}` : 'a platform API key'}: id ${created.id}, status ${created.status}${created.expiresAt ? `, expires ${created.expiresAt}` : ''}.`,
          `Key (shown only now): ${created.key}`,
          ...(created.webhookSecret ? [`Webhook signing secret (shown only now): ${created.webhookSecret}`] : []),
        ];
        emit(created, lines.join('\n'));
      },
    );

  key
    .command('revoke')
    .description('revoke an API key of any tenant; running servers stop honouring it at once')
    .argument('<id>', 'the key id', parseUuid)
    .addOption(jsonOption())
    .action(async (id: string) => {
      await withDatabase(async (runtime) => {
        const { revokeApiKeyById } = await import('../modules/identity/service.ts');
        await revokeApiKeyById(runtime, id);
      });
      emit({ revoked: id }, `Revoked API key ${id}.`);
    });

  key
    .command('list')
    .description("list a tenant's API keys, newest first (never their values)")
    .requiredOption('--tenant <id>', 'the tenant', parseUuid)
    .option('--page <n>', 'page number', parsePositiveInt(1_000_000), 1)
    .option('--limit <n>', 'keys per page, 1 to 200', parsePositiveInt(200), 50)
    .addOption(jsonOption())
    .action(async (opts: { tenant: string; page: number; limit: number }) => {
      const result = await withDatabase(async (runtime) => {
        const [{ listApiKeys }, { tenantCtx }, { toPage, pageOf }] = await Promise.all([
          import('../modules/identity/service.ts'),
          import('../platform/context.ts'),
          import('../platform/pagination.ts'),
        ]);
        await requireTenant(runtime, opts.tenant);
        const page = toPage({ page: opts.page, limit: opts.limit });
        const { data, total } = await listApiKeys(tenantCtx(runtime, opts.tenant), page);
        return pageOf(data, total, page);
      });
      const lines = result.data.map((k) => `${k.id}  ${k.keyPrefix}…  ${k.status.padEnd(7)}  ${k.name}`);
      emit(
        result,
        result.total === 0
          ? `Tenant ${opts.tenant} has no API keys.`
          : [`${result.total} API key${result.total === 1 ? '' : 's'} of tenant ${opts.tenant}:`, ...lines].join('\n'),
      );
    });

  const wallet = program.command('wallet').description("manage tenants' wallets");
  wallet
    .command('credit')
    .description("add credit to a tenant's wallet")
    .requiredOption('--tenant <id>', 'the tenant', parseUuid)
    .requiredOption('--amount <amount>', 'the amount to add, in the wallet currency, e.g. 25 or 12.5', parseAmount)
    .option('--reason <text>', 'why, recorded in the wallet history', 'Credit by operator')
    .addOption(jsonOption())
    .action(async (opts: { tenant: string; amount: string; reason: string }) => {
      const result = await withDatabase(async (runtime) => {
        const { creditWallet } = await import('../modules/identity/service.ts');
        await requireTenant(runtime, opts.tenant);
        return creditWallet(runtime.db, opts.tenant, opts.amount, opts.reason);
      });
      emit(
        { walletId: result.id, balance: result.balance, currency: result.currency },
        `Credited ${opts.amount} ${result.currency} to tenant ${opts.tenant}; the balance is now ${result.balance} ${result.currency}.`,
      );
    });

  program
    .command('demo')
    .description('create a demo tenant and print its API key and dashboard login')
    .option('--url <address>', "the server's address, to watch the demo at (default http://localhost:$PORT)", parseServerUrl)
    .addOption(jsonOption())
    .action(async (opts: { url?: string }) => {
      const { demo, port } = await withDatabase(async (runtime) => {
        const { createDemoTenant } = await import('../demo.ts');
        return { demo: await createDemoTenant(runtime), port: runtime.config.port };
      });
      const { describeDemo, serverAnswers } = await import('../demo.ts');
      const url = opts.url ?? `http://localhost:${port}`;
      const serverRunning = await serverAnswers(url);
      emit({ ...demo, server: { url, running: serverRunning } }, describeDemo(demo, url, serverRunning));
    });

  program
    .command('test')
    .description(
      'run a test suite on a running server and wait for its result, for CI: exit 1 when a scenario fails (or the run cannot be done), 0 when none does',
    )
    .requiredOption('--suite <id>', 'the test suite', parseUuid)
    .option(
      '--agent-version <n>',
      "a published version of the suite's agent (default: the agent as it is)",
      parsePositiveInt(2_147_483_647),
    )
    .option(
      '--voice',
      "through the voice pipeline: the caller's lines spoken (eSpeak NG) and heard by the agent's speech-to-text, which it needs",
    )
    .requiredOption('--url <address>', "the server's address, e.g. http://localhost:3000", parseServerUrl)
    .option('--key <key>', 'an API key of the tenant (default $CALLFORGE_API_KEY)')
    .option('--junit <file>', 'write a JUnit XML report of the run to this file')
    .option('--timeout <seconds>', 'give up waiting for the run after this long (default 600)', parsePositiveInt(86_400), 600)
    .addOption(jsonOption())
    .action(async (opts: TestOptions) => {
      const key = opts.key ?? process.env.CALLFORGE_API_KEY;
      if (!key) throw new UsageError('Pass an API key with --key <key> or in CALLFORGE_API_KEY.');
      const { runSuiteOnServer } = await import('./test-command.ts');
      const outcome = await runSuiteOnServer({ ...opts, key }, (line) => io.stderr(`${line}\n`));
      if (opts.junit) {
        const [{ writeFileSync }, { junitXml }] = await Promise.all([import('node:fs'), import('./junit.ts')]);
        writeFileSync(opts.junit, junitXml(outcome.suiteName, outcome.run));
      }
      const { run } = outcome;
      if (run.failed > 0) state.exitCode = 1;
      const rate = run.passRate === null ? 'no pass rate (nothing judged)' : `pass rate ${Math.round(run.passRate * 100)}%`;
      emit(
        { run: { ...run, results: undefined }, junit: opts.junit ?? null },
        `Run ${run.id} of "${outcome.suiteName}" (${run.agentVersion === null ? 'live agent' : `version ${run.agentVersion}`}${run.voice ? ', voice' : ''}): ${run.status}, ${run.passed} passed, ${run.failed} failed, ${run.skipped} skipped, ${rate}, cost ${run.costTotal}.${opts.junit ? ` JUnit report: ${opts.junit}.` : ''}`,
      );
    });

  return program;
}

/** `callforge test`'s options, as commander parses them. */
interface TestOptions {
  suite: string;
  agentVersion?: number;
  voice?: boolean;
  url: string;
  key?: string;
  junit?: string;
  timeout: number;
}

/** Runs the CLI on `argv` (as process.argv) and returns the exit code. */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const state: CliState = {};
  const program = buildProgram(io, state);
  const fail = (exitCode: number, code: string, message: string, alreadyShown = false) => {
    if (!alreadyShown) io.stderr(`${message}\n`);
    if (state.json ?? argv.includes('--json')) io.stdout(JSON.stringify({ error: { code, message } }) + '\n');
    return exitCode;
  };
  try {
    await program.parseAsync(argv);
    return state.exitCode ?? 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Commander has printed its own message (or the help) already.
      if (error.exitCode === 0 || error.code === 'commander.helpDisplayed' || error.code === 'commander.version') return 0;
      return fail(2, 'USAGE', error.message.replace(/^error: /, ''), true);
    }
    if (error instanceof UsageError) return fail(2, 'USAGE', error.message);
    if (error instanceof RemoteError) return fail(1, error.code, error.message);
    if (error instanceof ConfigError) return fail(1, 'CONFIG', error.message);
    if (error instanceof DataDirBusyError) return fail(1, 'DATA_DIR_BUSY', error.message);
    if (error instanceof AppError) return fail(1, error.code, error.message);
    const message = error instanceof Error ? error.message : String(error);
    io.stderr(`callforge failed: ${error instanceof Error ? (error.stack ?? message) : message}\n`);
    return fail(1, 'INTERNAL', message, true);
  }
}
