import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

/** Debian's Chromium (`apt-get install -y chromium`); never a browser a tool downloads. */
export const CHROMIUM_PATH = process.env.ATTEST_TEST_CHROMIUM ?? '/usr/bin/chromium';

/**
 * Whether the browser suites run: always in CI (CI=true), where a missing Chromium fails the run,
 * else when Chromium is installed, with a visible message when it is not.
 */
export function browserAvailable(): boolean {
  if (existsSync(CHROMIUM_PATH)) return true;
  if (process.env.CI === 'true') {
    throw new Error(`CI=true but there is no Chromium at ${CHROMIUM_PATH}; .ci/run installs it with apt-get.`);
  }
  process.stdout.write(`\n# SKIPPED: browser suite (no Chromium at ${CHROMIUM_PATH}; apt-get install -y chromium)\n`);
  return false;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}
