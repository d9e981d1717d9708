#!/usr/bin/env node
// The `callforge` command (contract §11): runs the TypeScript CLI through tsx, no build step.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
