#!/usr/bin/env node
// Runs the TypeScript CLI through tsx, so the package needs no build step to be used.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
