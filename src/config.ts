import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import ipaddr from 'ipaddr.js';
import { Bool, Decimal, Int } from './platform/settings.ts';
import { PROVIDER_SETTINGS, providerNamed } from './providers/registry.ts';

/** A speech-to-speech model's rates, per million tokens: text and audio, heard (input) and spoken (output). */
export interface RealtimeRates<T = string> {
  textInput: T;
  textOutput: T;
  audioInput: T;
  audioOutput: T;
}
const REALTIME_RATE_FIELDS = ['textInput', 'textOutput', 'audioInput', 'audioOutput'] as const;

/** OpenAI's list prices (USD per million tokens) of its speech-to-speech models. */
const DEFAULT_REALTIME_RATES: Record<string, RealtimeRates> = {
  'gpt-realtime': { textInput: '4', textOutput: '16', audioInput: '32', audioOutput: '64' },
  'gpt-realtime-mini': { textInput: '0.6', textOutput: '2.4', audioInput: '10', audioOutput: '20' },
};

/**
 * Every environment variable the service reads, with its default and meaning.
 * `docs/configuration.md` is generated from this table (`npm run docs:config`).
 */
const ServiceEnvSchema = Type.Object({
  PORT: Int(3000, 0, 65535, 'HTTP port of the API (0 picks a free one).'),
  HOST: Type.Optional(
    Type.String({
      minLength: 1,
      description:
        "Address the API (and a worker's probes) listen on. Unset: 127.0.0.1 on the embedded database (one machine, nothing exposed), 0.0.0.0 with DATABASE_URL (processes behind a load balancer or in containers). Set 0.0.0.0 to reach an embedded server from other machines.",
    }),
  ),
  DATA_DIR: Type.String({
    default: './data',
    minLength: 1,
    description: 'Directory of the embedded PostgreSQL (PGlite) when DATABASE_URL is not set.',
  }),
  DATABASE_URL: Type.Optional(
    Type.String({
      pattern: '^postgres(ql)?://',
      description:
        'PostgreSQL server to use instead of the embedded database, e.g. postgres://user@127.0.0.1:5432/callforge. The service connects with the JIT off (`-c jit=off`, see docs/decisions/0047-no-jit.md); an `options` parameter in the URL takes its place.',
      expected: 'a postgres:// or postgresql:// URL',
    }),
  ),
  DB_POOL_SIZE: Int(10, 1, 200, 'Connections per process to the PostgreSQL server.'),
  DB_STATEMENT_TIMEOUT_MS: Int(
    10000,
    0,
    3600000,
    'PostgreSQL cancels a statement of the service that runs longer (the request answers 503 DATABASE_TIMEOUT); 0 for no limit. Migrations, ANALYZE, index builds and the job queue are not bounded. The embedded database cannot interrupt a statement and ignores it.',
  ),
  READY_TIMEOUT_MS: Int(1000, 50, 60000, 'How long GET /readyz waits for the database before it answers 503 DATABASE_UNAVAILABLE.'),
  ROLE: Type.Union([Type.Literal('all'), Type.Literal('api'), Type.Literal('worker')], {
    default: 'all',
    description: 'What this process runs: all (API and workers), api or worker. `--role` on the command line wins.',
    expected: 'all, api or worker',
  }),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
    { default: 'info', description: 'pino log level.', expected: 'fatal, error, warn, info, debug, trace or silent' },
  ),
  LOG_FORMAT: Type.Union([Type.Literal('auto'), Type.Literal('pretty'), Type.Literal('json')], {
    default: 'auto',
    description:
      'How logs are written: pretty (one coloured line each, for people), json (one JSON object a line, for collectors) or auto (pretty when stdout is a terminal, json otherwise).',
    expected: 'auto, pretty or json',
  }),
  SECRETS_KEY: Type.Optional(
    Type.String({
      pattern: '^[A-Za-z0-9+/=_-]{43,}$',
      description:
        'Base64 of 32 random bytes; signs sessions and encrypts provider secrets at rest. Required with DATABASE_URL (all processes must share it); embedded mode keeps a generated one in $DATA_DIR/secrets.key.',
      expected: 'base64 of 32 random bytes (openssl rand -base64 32)',
    }),
  ),
  SECRETS_KEY_PREVIOUS: Type.Optional(
    Type.String({
      pattern: '^[A-Za-z0-9+/=_-]{43,}$',
      description:
        'During a key rotation, the SECRETS_KEY being replaced: provider secrets it sealed still open until `callforge secrets reseal` seals them with the new key; then remove it.',
      expected: 'base64 of 32 random bytes',
    }),
  ),
  SIGNUP_ENABLED: Bool(true, 'Whether POST /api/v1/auth/signup creates new tenants.'),
  SESSION_TTL_SECONDS: Int(43200, 60, 2592000, 'Lifetime of a dashboard session token.'),
  STARTING_CREDIT: Decimal('10', 'Wallet credit a new tenant starts with, in its currency.'),
  LOW_BALANCE_THRESHOLD: Decimal('5', 'Default low-balance threshold of a new wallet.'),
  RATE_LIMIT_PER_MINUTE: Int(
    1200,
    1,
    10000000,
    'Requests per minute allowed to one API key or session (per IP when unauthenticated), per API process.',
  ),
  LOGIN_FAILURES_PER_ACCOUNT: Int(
    5,
    1,
    1000000,
    'Failed sign-ins allowed for one e-mail address in AUTH_FAILURE_WINDOW_SECONDS; then POST /auth/login answers 429 for it until the window ends. Shared by every API process.',
  ),
  LOGIN_FAILURES_PER_ADDRESS: Int(
    20,
    1,
    1000000,
    'Failed sign-ins allowed from one client address in AUTH_FAILURE_WINDOW_SECONDS, whichever accounts they try.',
  ),
  INVALID_API_KEYS_PER_ADDRESS: Int(
    1000,
    1,
    1000000,
    'Requests with an invalid API key allowed from one client address in AUTH_FAILURE_WINDOW_SECONDS; then that address is answered 429 on API-key requests until the window ends.',
  ),
  AUTH_FAILURE_WINDOW_SECONDS: Int(900, 1, 86400, 'The window in which failed sign-ins and invalid API keys are counted.'),
  WEBHOOK_RATE_LIMIT_PER_SECOND: Int(
    500,
    1,
    10000000,
    "Provider webhooks (calls, messages, media) allowed per second from one client address, per API process; the providers' own traffic stays well below it.",
  ),
  IDEMPOTENCY_TTL_HOURS: Int(24, 1, 720, 'How long an Idempotency-Key is remembered.'),
  DEMO_BOOTSTRAP: Bool(true, 'On first start of an empty embedded database, create a demo tenant and print its key.'),
  TRUST_PROXY: Type.Optional(
    Type.String({
      description:
        "The proxies in front of the API whose X-Forwarded-For names the client: a comma-separated list of addresses and CIDR ranges (loopback, linklocal and uniquelocal name those ranges), or a number of hops. Unset: none, the connection's own address is the client's. Sign-in throttling, rate limits and API-key use are counted per client address, so set it behind a load balancer, and only to the proxies' own addresses.",
      expected: 'addresses or CIDR ranges separated by commas (10.0.0.0/8,loopback), or a number of hops',
    }),
  ),
  ALLOW_PRIVATE_URLS: Bool(false, 'Let knowledge URLs and webhooks reach private and loopback addresses (local testing only).'),
  PUBLIC_URL: Type.String({
    default: 'http://localhost:3000',
    pattern: '^https?://[^/]+(/.*)?[^/]$|^https?://[^/]+$',
    description: 'The address providers reach this service at (status callbacks, webhooks), without a trailing slash.',
    expected: 'an http(s) URL without a trailing slash',
  }),
  PROVIDER_TIMEOUT_MS: Int(
    10000,
    100,
    120000,
    'How long a request to a provider (calls, SMS, WhatsApp, speech) may take before it counts as a timeout.',
  ),
  WEBHOOK_RETRY_SECONDS: Int(
    5,
    1,
    3600,
    'First delay before a failed webhook delivery is retried; it doubles (with jitter) on each of 15 retries, over 24 hours in all.',
  ),
  LLM_API_URL: Type.Optional(
    Type.String({
      pattern: '^https?://',
      description:
        'An OpenAI-compatible API base URL (up to /v1): the language model agents converse with (unless an agent names its own) and that reads call transcripts for analytics; unset: agents are the built-in retrieval agent and no fields are extracted.',
      expected: 'an http(s) URL',
    }),
  ),
  LLM_API_KEY: Type.Optional(Type.String({ minLength: 1, description: 'Bearer key for LLM_API_URL.' })),
  LLM_MODEL: Type.String({
    default: 'gpt-4o-mini',
    minLength: 1,
    description:
      'Model agents converse with when they name none, and that extracts analytics (it must support tool calls and json_schema response formats).',
  }),
  LLM_TIMEOUT_MS: Int(
    15000,
    1000,
    120000,
    'The longest a model server may stay silent during a reply before the turn fails (the caller hears a fallback line).',
  ),
  VOICE_SILENCE_SECONDS: Int(
    8,
    2,
    120,
    "On a phone line, how long the caller may stay silent after the agent's words before being asked once whether they are still there (and, after as long again, told goodbye).",
  ),
  VOICE_RELAY_CHARACTERS_PER_SECOND: Int(
    14,
    5,
    1000,
    "With Twilio's ConversationRelay, which reports no end of playback: the speaking rate (characters a second) by which callforge estimates when the agent's words were played, before it hangs up or starts counting the caller's silence. 14 is about 160 words a minute.",
  ),
  VOICE_END_OF_SPEECH_MS: Int(
    600,
    200,
    5000,
    "On a phone line, the silence that ends the caller's turn when their words do not say whether they finished (and always, for an agent whose stt.endOfTurn is SILENCE). Longer: fewer callers cut off mid-thought; shorter: quicker answers.",
  ),
  VOICE_PAUSE_MS: Int(
    96,
    32,
    2000,
    "With an utterance recogniser (OpenAI-compatible), the silence after which what the caller said so far is transcribed and the agent's end-of-turn detector asked whether their turn is over (counted in the voice-activity detector's 32 ms windows, rounded up; Deepgram pauses at its own 300 ms endpointing). Shorter: quicker answers to a finished question, more pieces sent to the recogniser.",
  ),
  SMART_TURN_MODEL_PATH: Type.Optional(
    Type.String({
      minLength: 1,
      description:
        "Path of Smart Turn v3's ONNX file (smart-turn-v3.x.onnx, from pipecat-ai/smart-turn-v3; BSD-2-Clause), run in process on ONNX Runtime for agents whose stt.endOfTurn is SMART_TURN; unset: no agent may choose it.",
    }),
  ),
  VOICE_UNFINISHED_MS: Int(
    1500,
    200,
    10000,
    'The longest silence the agent waits for the rest of an unfinished phrase ("I\'d like to…", "my number is 4 1 5") before answering anyway.',
  ),
  VOICE_FAILOVER_STALL_MS: Int(
    3000,
    500,
    30000,
    'For an agent with a backup (its `backup`): how long the model may take to its first words, or the text-to-speech to its first audio, before the call fails over to the backup for the rest of the call, as it does when they fail outright.',
  ),
  SPEECH_API_URL: Type.Optional(
    Type.String({
      pattern: '^https?://',
      description:
        'An OpenAI-compatible API base URL (up to /v1) whose /audio/transcriptions and /audio/speech agents listen and speak through when their stt or tts provider is OPENAI_COMPATIBLE (unless the tenant connected its own llm integration); unset: LLM_API_URL. When set, new agents listen through it (stt OPENAI_COMPATIBLE) by default.',
      expected: 'an http(s) URL',
    }),
  ),
  SPEECH_API_KEY: Type.Optional(
    Type.String({ minLength: 1, description: 'Bearer key for SPEECH_API_URL; unset: LLM_API_KEY when SPEECH_API_URL is unset too.' }),
  ),
  EMBEDDINGS_API_URL: Type.Optional(
    Type.String({
      pattern: '^https?://',
      description:
        'An OpenAI-compatible API base URL (up to /v1) whose /embeddings embeds knowledge chunks and queries; unset: the offline model shipped in the package (Universal Sentence Encoder lite, 512 dimensions).',
      expected: 'an http(s) URL',
    }),
  ),
  EMBEDDINGS_API_KEY: Type.Optional(Type.String({ minLength: 1, description: 'Bearer key for EMBEDDINGS_API_URL.' })),
  EMBEDDINGS_MODEL: Type.String({ default: 'text-embedding-3-small', minLength: 1, description: 'Model asked by EMBEDDINGS_API_URL.' }),
  EMBEDDINGS_DIMENSIONS: Int(
    512,
    8,
    2000,
    'Vector length asked of EMBEDDINGS_API_URL (the offline model always gives 512); changing it means refreshing every source.',
  ),
  EMBEDDING_WORKERS: Int(
    0,
    0,
    64,
    'Worker threads the offline model embeds knowledge sources with (queries have one more of their own); 0: one per core but one (at least one), so a core stays free for the API while a source is indexed.',
  ),
  VECTOR_SEARCH: Type.Union([Type.Literal('auto'), Type.Literal('exact'), Type.Literal('hnsw')], {
    default: 'auto',
    description:
      'auto: on a PostgreSQL server, an HNSW index (pgvector) where `CREATE EXTENSION vector` works, exact cosine otherwise; on the embedded database, exact cosine (faster, more accurate and quicker to index there: docs/knowledge-performance.md). exact: always exact cosine. hnsw: the index wherever pgvector installs, also on the embedded database (for bases whose vectors KNOWLEDGE_CACHE_MB cannot hold; their words, a fifth of the size, are still kept in it).',
    expected: 'auto, exact or hnsw',
  }),
  KNOWLEDGE_CACHE_MB: Int(
    256,
    0,
    65536,
    'Memory per process for what retrieval keeps of recently queried knowledge bases: their embeddings (exact search) and the index of their words (full-text ranking), about 2 MB and 0.4 MB per 1,000 chunks. A base bigger than the whole budget is read again for each query.',
  ),
  KNOWLEDGE_MAX_PDF_PAGES: Int(2000, 1, 1_000_000, 'Pages a PDF source may have; a longer one fails before its text is extracted.'),
  KNOWLEDGE_MAX_UNPACKED_MB: Int(
    50,
    1,
    4096,
    'Megabytes a DOCX source may unpack to (it is a zip archive), all its parts together; a bigger one fails before it is unpacked.',
  ),
  KNOWLEDGE_PARSE_HEAP_MB: Int(
    512,
    32,
    16384,
    'Heap of the worker thread that extracts the text of one document; a document that needs more fails, and the service goes on.',
  ),
  KNOWLEDGE_PARSE_TIMEOUT_SECONDS: Int(
    60,
    1,
    3600,
    'Time the text of one document may take to extract; the worker is stopped after it and the source fails.',
  ),
  DIALER_TICK_MS: Int(
    500,
    10,
    60000,
    'How often an idle dialer looks for due contacts and calls, in milliseconds (it loops at once while there is work).',
  ),
  DIALER_CALLS_PER_SECOND: Int(10, 1, 10000, 'Calls per second each voice number may start, shared by every worker process.'),
  CALL_CONFIRM_TIMEOUT_SECONDS: Int(
    60,
    5,
    3600,
    'A call its provider never confirmed (a crash between counting the attempt and dialling) is given up as FAILED after this long.',
  ),
  MAX_CALL_SECONDS: Int(7200, 60, 86400, 'A provider call with no final status this long after it was placed is given up as FAILED.'),
  RATE_STT_PER_MINUTE: Decimal(
    '0.0100',
    'Rate card: speech-to-text, per minute of audio recognised, for a provider RATE_PROVIDERS does not price.',
  ),
  RATE_TTS_PER_1K_CHARACTERS: Decimal(
    '0.0150',
    'Rate card: text-to-speech, per 1,000 characters spoken, for a provider RATE_PROVIDERS does not price.',
  ),
  RATE_LLM_PER_1K_TOKENS: Decimal('0.0020', 'Rate card: language model, per 1,000 tokens, for a model RATE_LLM_MODELS does not price.'),
  RATE_LLM_MODELS: Type.String({
    default: '{}',
    description:
      'Rate card per model, per 1,000 tokens, as JSON: {"gpt-4o-mini": {"input": "0.00015", "output": "0.0006"}}; other models use RATE_LLM_PER_1K_TOKENS.',
    expected: 'a JSON object of model names to {"input": "<decimal>", "output": "<decimal>"}',
  }),
  RATE_REALTIME_MODELS: Type.String({
    default: JSON.stringify(DEFAULT_REALTIME_RATES),
    description:
      "Rate card per speech-to-speech model (an agent's realtime.model), per 1,000,000 tokens of each kind, as JSON: the text and the audio it heard (input) and spoke (output), as its server reported them. The default holds OpenAI's list prices of gpt-realtime and gpt-realtime-mini; a model not named is priced per token at RATE_LLM_PER_1K_TOKENS.",
    expected: 'a JSON object of model names to {"textInput", "textOutput", "audioInput", "audioOutput": "<decimal>"}',
  }),
  RATE_PROVIDERS: Type.String({
    default: '{}',
    description:
      'Rate card per provider, as JSON, for the providers that should not bill at the flat rates: {"ESPEAK": {"ttsPer1kCharacters": "0"}, "DEEPGRAM": {"sttPerMinute": "0.0077"}, "TWILIO": {"telephonyPerMinute": "0.0140"}}; the units are those of RATE_STT_PER_MINUTE, RATE_TTS_PER_1K_CHARACTERS and RATE_TELEPHONY_PER_MINUTE, which price every provider not named.',
    expected:
      'a JSON object of provider names to {"sttPerMinute"?, "ttsPer1kCharacters"?, "telephonyPerMinute"?: "<decimal>"}, each for a channel the provider serves',
  }),
  RATE_TELEPHONY_PER_MINUTE: Decimal(
    '0.0140',
    'Rate card: telephony, per minute connected (billed by the second), for a provider RATE_PROVIDERS does not price.',
  ),
  RATE_PLATFORM_FEE_PER_MINUTE: Decimal(
    '0.0000',
    "Rate card: platform fee, per minute connected (billed by the second): what the operator of this service charges its tenants for running their calls, on top of the providers' costs. 0 by default (a self-hosted service charges its own users nothing); set it when you sell the service to others.",
  ),
  ANALYZE_SECONDS: Int(
    10,
    1,
    86400,
    'How often a process analyzes the tables that changed and vacuums those with many dead rows, when the database has no autovacuum to do it (PGlite, or a server with autovacuum off): the planner needs statistics, and indexes full of dead rows slow every read.',
  ),
  JOBS_MAINTENANCE_SECONDS: Int(
    60,
    1,
    3600,
    'How often the job queue archives finished jobs and drops old ones, in seconds (jobs whose worker died are looked for more often: see JOBS_RECOVERY_SECONDS).',
  ),
  JOBS_RECOVERY_SECONDS: Int(
    12,
    3,
    3600,
    "How long a job may go without its worker's heartbeat before the job queue gives it up and retries it in another worker (a worker that was killed or froze); live workers renew the jobs they hold every third of it, and every worker looks for given-up jobs as often, from its start. A killed worker's messages, webhooks and call follow-ups start again within about 1⅓ × this plus their queue's first retry delay (5–10 s).",
  ),
  WORKER_HEALTH_PORT: Int(
    0,
    0,
    65535,
    "Port of the worker role's health endpoint (GET /healthz: alive, event loop responsive; GET /readyz: database and job queue ready); 0 turns it off. Processes with the API (roles all and api) answer /healthz and /readyz on PORT.",
  ),
  JOBS_POLL_SECONDS: Type.String({
    default: '1',
    pattern: '^[0-9]+(\\.[0-9]+)?$',
    description: 'How often idle workers poll the job queue, in seconds (at least 0.5).',
    expected: 'a number of seconds, at least 0.5',
  }),
});

export type Env = Static<typeof ServiceEnvSchema>;

/** The service's settings and every provider's own (each provider declares its settings in its folder). */
export const EnvSchema = Type.Object({ ...ServiceEnvSchema.properties, ...PROVIDER_SETTINGS });

// Platform's process and tenant contexts carry the settings, but platform/ stands below this file
// and cannot name its type: the field is declared here (as the knowledge module adds its engine).
declare module './platform/context.ts' {
  interface Deps {
    config: Config;
  }
  interface TenantCtx {
    config: Config;
  }
}

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl: string | undefined;
  dbPoolSize: number;
  /** PostgreSQL's statement_timeout for the service's pool, in ms; 0 for none. */
  dbStatementTimeoutMs: number;
  /** How long /readyz waits for the database before it says not ready. */
  readyTimeoutMs: number;
  role: 'all' | 'api' | 'worker';
  logLevel: string;
  /** `auto` is decided where the logger opens, from whether its stream is a terminal. */
  logFormat: 'auto' | 'pretty' | 'json';
  secretsKey: string | undefined;
  previousSecretsKey: string | undefined;
  signupEnabled: boolean;
  sessionTtlSeconds: number;
  startingCredit: string;
  lowBalanceThreshold: string;
  rateLimitPerMinute: number;
  /** Failed attempts allowed in `windowSeconds` before 429: sign-ins per account and per address, invalid API keys per address. */
  authFailures: { perAccount: number; perAddress: number; invalidKeysPerAddress: number; windowSeconds: number };
  webhookRateLimitPerSecond: number;
  idempotencyTtlHours: number;
  demoBootstrap: boolean;
  allowPrivateUrls: boolean;
  /** Fastify's trustProxy: whose X-Forwarded-For is believed; false (the default) believes none. */
  trustProxy: false | number | string[];
  jobsPollSeconds: number;
  jobsMaintenanceSeconds: number;
  jobsRecoverySeconds: number;
  workerHealthPort: number;
  analyzeSeconds: number;
  publicUrl: string;
  webhookRetrySeconds: number;
  llm: { apiUrl: string | undefined; apiKey: string | undefined; model: string; timeoutMs: number };
  /** The service's OpenAI-compatible speech server (SPEECH_API_URL, else LLM_API_URL); `dedicated`: SPEECH_API_URL itself is set. */
  speech: { apiUrl: string | undefined; apiKey: string | undefined; dedicated: boolean; timeoutMs: number };
  knowledge: {
    embeddingsApiUrl: string | undefined;
    embeddingsApiKey: string | undefined;
    embeddingsModel: string;
    embeddingsDimensions: number;
    /** Threads of the offline model for documents; 0: one per core but one (at least one). */
    embeddingWorkers: number;
    vectorSearch: 'auto' | 'exact' | 'hnsw';
    cacheBytes: number;
    /** What one document may take to parse (parsing.ts). */
    parseLimits: { pdfPages: number; unpackedBytes: number; heapMb: number; timeoutMs: number };
  };
  messaging: { providerTimeoutMs: number };
  voice: {
    silenceSeconds: number;
    relayCharactersPerSecond: number;
    endOfSpeechMs: number;
    pauseMs: number;
    unfinishedMs: number;
    /** SMART_TURN_MODEL_PATH, when set. */
    smartTurnModel?: string;
    failoverStallMs: number;
  };
  dialer: { tickMs: number; callsPerSecond: number; confirmTimeoutSeconds: number; maxCallSeconds: number };
  /** Every provider's own settings (registry.ts), by variable name. */
  providerSettings: Readonly<Record<string, string>>;
  rates: {
    sttPerMinute: string;
    ttsPer1kCharacters: string;
    llmPer1kTokens: string;
    /** Per model, per 1,000 tokens: what the model's input and output cost. */
    llmModels: Record<string, { input: string; output: string }>;
    /** Per speech-to-speech model, per 1,000,000 tokens of text and audio, heard and spoken. */
    realtimeModels: Record<string, RealtimeRates<string>>;
    telephonyPerMinute: string;
    platformFeePerMinute: string;
    /** Per provider, for the channels it serves: what replaces the flat rate above. */
    providers: Record<string, ProviderRates>;
  };
}

/** A provider's own rates, in the units of the flat rates they replace. */
export interface ProviderRates {
  sttPerMinute?: string;
  ttsPer1kCharacters?: string;
  telephonyPerMinute?: string;
}

/** Which channel a provider must serve for each of its rates to apply. */
const RATE_CHANNELS = { sttPerMinute: 'stt', ttsPer1kCharacters: 'tts', telephonyPerMinute: 'telephony' } as const;

export class ConfigError extends Error {}

function describeExpected(schema: TSchema): string {
  return (schema as { expected?: string }).expected ?? 'a non-empty string';
}

/** Parses the environment once at start; a bad variable is named with what it should be. */
const DECIMAL = /^[0-9]+(\.[0-9]+)?$/;

const isJsonObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** A variable holding a JSON object, parsed; undefined for anything else. */
function jsonObjectOf(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return isJsonObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** RATE_LLM_MODELS read: undefined when it is not a JSON object of models to two decimal strings. */
function parseModelRates(text: string): Record<string, { input: string; output: string }> | undefined {
  const value = jsonObjectOf(text);
  if (!value) return undefined;
  const rates: Record<string, { input: string; output: string }> = {};
  for (const [model, rate] of Object.entries(value)) {
    const { input, output } = (rate ?? {}) as { input?: unknown; output?: unknown };
    if (typeof input !== 'string' || typeof output !== 'string' || !DECIMAL.test(input) || !DECIMAL.test(output)) return undefined;
    rates[model] = { input, output };
  }
  return rates;
}

/** RATE_REALTIME_MODELS read: undefined when it is not a JSON object of models to four decimal strings. */
function parseRealtimeRates(text: string): Record<string, RealtimeRates<string>> | undefined {
  const value = jsonObjectOf(text);
  if (!value) return undefined;
  const rates: Record<string, RealtimeRates<string>> = {};
  for (const [model, rate] of Object.entries(value)) {
    if (!isJsonObject(rate)) return undefined;
    const fields = REALTIME_RATE_FIELDS.map((field) => rate[field]);
    if (Object.keys(rate).length !== fields.length || !fields.every((field) => typeof field === 'string' && DECIMAL.test(field)))
      return undefined;
    rates[model] = Object.fromEntries(REALTIME_RATE_FIELDS.map((field) => [field, rate[field]])) as unknown as RealtimeRates<string>;
  }
  return rates;
}

/** RATE_PROVIDERS read: undefined when it names an unknown provider, a rate for a channel the provider does not serve, or a non-decimal. */
function parseProviderRates(text: string): Record<string, ProviderRates> | undefined {
  const value = jsonObjectOf(text);
  if (!value) return undefined;
  const rates: Record<string, ProviderRates> = {};
  for (const [name, given] of Object.entries(value)) {
    const provider = providerNamed(name);
    if (!provider || !isJsonObject(given)) return undefined;
    const own: ProviderRates = {};
    for (const [field, rate] of Object.entries(given)) {
      const channel = RATE_CHANNELS[field as keyof ProviderRates] as (typeof RATE_CHANNELS)[keyof ProviderRates] | undefined;
      if (!channel || !provider[channel] || typeof rate !== 'string' || !DECIMAL.test(rate)) return undefined;
      own[field as keyof ProviderRates] = rate;
    }
    rates[name] = own;
  }
  return rates;
}

const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** TRUST_PROXY as fastify takes it (false: unset), or undefined when it is not a hop count or a list of addresses and ranges. */
function parseTrustProxy(value: string | undefined): Config['trustProxy'] | undefined {
  if (value === undefined) return false;
  if (/^\d{1,2}$/.test(value.trim())) return Number(value.trim()) || false;
  const entries = value.split(',').map((entry) => entry.trim());
  const valid = (entry: string) =>
    PROXY_RANGE_NAMES.has(entry) || ipaddr.isValid(entry) || (entry.includes('/') && ipaddr.isValidCIDR(entry));
  return entries.length > 0 && entries.every(valid) ? entries : undefined;
}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const raw: Record<string, string> = {};
  for (const name of Object.keys(EnvSchema.properties)) {
    const value = env[name];
    if (value !== undefined && value !== '') raw[name] = value;
  }
  const withDefaults = Value.Default(EnvSchema, raw) as Record<string, string>;
  const problems: string[] = [];
  for (const [name, schema] of Object.entries(EnvSchema.properties) as [string, TSchema][]) {
    const value = withDefaults[name];
    if (value === undefined) continue;
    const inRange = !('minimum' in schema) || (Number(value) >= (schema.minimum as number) && Number(value) <= (schema.maximum as number));
    if (!Value.Check(schema, value) || !inRange) {
      problems.push(`${name}=${JSON.stringify(value)} is invalid: expected ${describeExpected(schema)}.`);
    }
  }
  const pollSeconds = Number(withDefaults.JOBS_POLL_SECONDS);
  if (problems.length === 0 && pollSeconds < 0.5)
    problems.push(
      `JOBS_POLL_SECONDS=${JSON.stringify(withDefaults.JOBS_POLL_SECONDS)} is invalid: expected a number of seconds, at least 0.5.`,
    );
  const llmModelRates = parseModelRates(withDefaults.RATE_LLM_MODELS ?? '{}');
  if (llmModelRates === undefined)
    problems.push(
      `RATE_LLM_MODELS=${JSON.stringify(withDefaults.RATE_LLM_MODELS)} is invalid: expected ${describeExpected(EnvSchema.properties.RATE_LLM_MODELS)}.`,
    );
  const realtimeRates = parseRealtimeRates(withDefaults.RATE_REALTIME_MODELS ?? '{}');
  if (realtimeRates === undefined)
    problems.push(
      `RATE_REALTIME_MODELS=${JSON.stringify(withDefaults.RATE_REALTIME_MODELS)} is invalid: expected ${describeExpected(EnvSchema.properties.RATE_REALTIME_MODELS)}.`,
    );
  const providerRates = parseProviderRates(withDefaults.RATE_PROVIDERS ?? '{}');
  if (providerRates === undefined)
    problems.push(
      `RATE_PROVIDERS=${JSON.stringify(withDefaults.RATE_PROVIDERS)} is invalid: expected ${describeExpected(EnvSchema.properties.RATE_PROVIDERS)}.`,
    );
  const trustProxy = parseTrustProxy(withDefaults.TRUST_PROXY);
  if (trustProxy === undefined)
    problems.push(
      `TRUST_PROXY=${JSON.stringify(withDefaults.TRUST_PROXY)} is invalid: expected ${describeExpected(EnvSchema.properties.TRUST_PROXY)}.`,
    );
  if (problems.length > 0) throw new ConfigError(`Invalid configuration: ${problems.join(' ')}`);

  const env_ = withDefaults as Env;
  const flag = (value: string) => value === '1' || value === 'true';
  return {
    port: Number(env_.PORT),
    host: env_.HOST ?? (env_.DATABASE_URL ? '0.0.0.0' : '127.0.0.1'),
    dataDir: env_.DATA_DIR,
    databaseUrl: env_.DATABASE_URL,
    dbPoolSize: Number(env_.DB_POOL_SIZE),
    dbStatementTimeoutMs: Number(env_.DB_STATEMENT_TIMEOUT_MS),
    readyTimeoutMs: Number(env_.READY_TIMEOUT_MS),
    role: env_.ROLE,
    logLevel: env_.LOG_LEVEL,
    logFormat: env_.LOG_FORMAT,
    secretsKey: env_.SECRETS_KEY,
    previousSecretsKey: env_.SECRETS_KEY_PREVIOUS,
    signupEnabled: flag(env_.SIGNUP_ENABLED),
    sessionTtlSeconds: Number(env_.SESSION_TTL_SECONDS),
    startingCredit: env_.STARTING_CREDIT,
    lowBalanceThreshold: env_.LOW_BALANCE_THRESHOLD,
    rateLimitPerMinute: Number(env_.RATE_LIMIT_PER_MINUTE),
    authFailures: {
      perAccount: Number(env_.LOGIN_FAILURES_PER_ACCOUNT),
      perAddress: Number(env_.LOGIN_FAILURES_PER_ADDRESS),
      invalidKeysPerAddress: Number(env_.INVALID_API_KEYS_PER_ADDRESS),
      windowSeconds: Number(env_.AUTH_FAILURE_WINDOW_SECONDS),
    },
    webhookRateLimitPerSecond: Number(env_.WEBHOOK_RATE_LIMIT_PER_SECOND),
    idempotencyTtlHours: Number(env_.IDEMPOTENCY_TTL_HOURS),
    demoBootstrap: flag(env_.DEMO_BOOTSTRAP),
    allowPrivateUrls: flag(env_.ALLOW_PRIVATE_URLS),
    trustProxy: trustProxy!,
    jobsPollSeconds: pollSeconds,
    jobsMaintenanceSeconds: Number(env_.JOBS_MAINTENANCE_SECONDS),
    jobsRecoverySeconds: Number(env_.JOBS_RECOVERY_SECONDS),
    workerHealthPort: Number(env_.WORKER_HEALTH_PORT),
    analyzeSeconds: Number(env_.ANALYZE_SECONDS),
    publicUrl: env_.PUBLIC_URL,
    webhookRetrySeconds: Number(env_.WEBHOOK_RETRY_SECONDS),
    llm: { apiUrl: env_.LLM_API_URL, apiKey: env_.LLM_API_KEY, model: env_.LLM_MODEL, timeoutMs: Number(env_.LLM_TIMEOUT_MS) },
    // The key goes with its server: LLM_API_KEY is never sent to SPEECH_API_URL.
    speech: env_.SPEECH_API_URL
      ? { apiUrl: env_.SPEECH_API_URL, apiKey: env_.SPEECH_API_KEY, dedicated: true, timeoutMs: Number(env_.PROVIDER_TIMEOUT_MS) }
      : { apiUrl: env_.LLM_API_URL, apiKey: env_.LLM_API_KEY, dedicated: false, timeoutMs: Number(env_.PROVIDER_TIMEOUT_MS) },
    knowledge: {
      embeddingsApiUrl: env_.EMBEDDINGS_API_URL,
      embeddingsApiKey: env_.EMBEDDINGS_API_KEY,
      embeddingsModel: env_.EMBEDDINGS_MODEL,
      embeddingsDimensions: Number(env_.EMBEDDINGS_DIMENSIONS),
      embeddingWorkers: Number(env_.EMBEDDING_WORKERS),
      vectorSearch: env_.VECTOR_SEARCH,
      cacheBytes: Number(env_.KNOWLEDGE_CACHE_MB) * 1024 * 1024,
      parseLimits: {
        pdfPages: Number(env_.KNOWLEDGE_MAX_PDF_PAGES),
        unpackedBytes: Number(env_.KNOWLEDGE_MAX_UNPACKED_MB) * 1024 * 1024,
        heapMb: Number(env_.KNOWLEDGE_PARSE_HEAP_MB),
        timeoutMs: Number(env_.KNOWLEDGE_PARSE_TIMEOUT_SECONDS) * 1000,
      },
    },
    messaging: {
      providerTimeoutMs: Number(env_.PROVIDER_TIMEOUT_MS),
    },
    voice: {
      silenceSeconds: Number(env_.VOICE_SILENCE_SECONDS),
      relayCharactersPerSecond: Number(env_.VOICE_RELAY_CHARACTERS_PER_SECOND),
      endOfSpeechMs: Number(env_.VOICE_END_OF_SPEECH_MS),
      failoverStallMs: Number(env_.VOICE_FAILOVER_STALL_MS),
      pauseMs: Number(env_.VOICE_PAUSE_MS),
      unfinishedMs: Number(env_.VOICE_UNFINISHED_MS),
      ...(env_.SMART_TURN_MODEL_PATH ? { smartTurnModel: env_.SMART_TURN_MODEL_PATH } : {}),
    },
    // An optional setting left unset (a provider's service-wide key) is absent, not undefined.
    providerSettings: Object.fromEntries(
      Object.keys(PROVIDER_SETTINGS).flatMap((name) => (withDefaults[name] === undefined ? [] : [[name, withDefaults[name]!]])),
    ),
    dialer: {
      tickMs: Number(env_.DIALER_TICK_MS),
      callsPerSecond: Number(env_.DIALER_CALLS_PER_SECOND),
      confirmTimeoutSeconds: Number(env_.CALL_CONFIRM_TIMEOUT_SECONDS),
      maxCallSeconds: Number(env_.MAX_CALL_SECONDS),
    },
    rates: {
      sttPerMinute: env_.RATE_STT_PER_MINUTE,
      ttsPer1kCharacters: env_.RATE_TTS_PER_1K_CHARACTERS,
      llmPer1kTokens: env_.RATE_LLM_PER_1K_TOKENS,
      llmModels: llmModelRates!,
      realtimeModels: realtimeRates!,
      telephonyPerMinute: env_.RATE_TELEPHONY_PER_MINUTE,
      platformFeePerMinute: env_.RATE_PLATFORM_FEE_PER_MINUTE,
      providers: providerRates!,
    },
  };
}
