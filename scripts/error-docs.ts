// Writes docs/errors.md from the error catalogue in src/platform/error-catalogue.ts.
import { writeFileSync } from 'node:fs';
import { errorsMarkdown } from '../src/platform/error-docs.ts';

writeFileSync(new URL('../docs/errors.md', import.meta.url), errorsMarkdown());
