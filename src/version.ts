import { createRequire } from 'node:module';

/** The service's version, read from package.json: the OpenAPI document and `callforge --version` say it. */
export const SERVICE_VERSION = (createRequire(import.meta.url)('../package.json') as { version: string }).version;
