import { existsSync, readFileSync } from 'node:fs';

/**
 * The package version, reported by the health probe and the OpenAPI document: read from the
 * nearest package.json above this module, which is the repository's whether it runs from src/ or
 * from a chunk of the dist/ bundle.
 */
function packageVersion(): string {
  for (let dir = new URL('./', import.meta.url); dir.pathname !== '/'; dir = new URL('../', dir)) {
    const file = new URL('package.json', dir);
    if (existsSync(file)) return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
  }
  throw new Error('package.json not found above the Attest modules');
}

export const APP_VERSION: string = packageVersion();
