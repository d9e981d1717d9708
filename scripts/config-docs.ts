// Writes docs/configuration.md from the environment schema in src/config.ts.
import { writeFileSync } from 'node:fs';
import { configurationMarkdown } from '../src/config-docs.ts';

writeFileSync(new URL('../docs/configuration.md', import.meta.url), configurationMarkdown());
