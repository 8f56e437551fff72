// Renders the pictures the docs show, from a real server and a real export:
// `node --import tsx scripts/docs-screenshots.ts` writes docs/images/html-report.png.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { launchChromium } from '../test/helpers/browser.ts';
import { runWithEvidence } from '../test/helpers/export-fixture.ts';
import { startTestServer } from '../test/helpers/server.ts';

const COLOURS = ['#0969da', '#8250df', '#1a7f37', '#bc4c00', '#cf222e'];

/** A mock app screen, so the picture shows screenshots rather than noise; 1000+ are the visual diff's three. */
async function screen(index: number): Promise<Buffer> {
  const diff = index >= 1000;
  const colour = COLOURS[index % COLOURS.length];
  const label = diff ? ['Receipt: expected', 'Receipt: seen', 'Difference'][index - 1000] : `Screen ${index + 1}`;
  const body =
    index === 1002
      ? '<rect x="40" y="150" width="200" height="26" fill="#ff00aa"/>'
      : `<rect x="40" y="150" width="${index === 1001 ? 260 : 200}" height="26" rx="4" fill="#eaeef2"/>`;
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="480" height="300">
    <rect width="480" height="300" fill="${index === 1002 ? '#111' : '#fff'}"/>
    <rect width="480" height="44" fill="${colour}"/>
    <text x="20" y="29" font-family="sans-serif" font-size="18" fill="#fff">Shop · ${label}</text>
    <rect x="40" y="70" width="400" height="60" rx="6" fill="${index === 1002 ? '#111' : '#f6f8fa'}" stroke="#d0d7de"/>
    ${body}
    <rect x="300" y="230" width="140" height="40" rx="6" fill="${colour}"/>
  </svg>`;
  return sharp(Buffer.from(svg)).png().toBuffer();
}

const server = await startTestServer('sqlite');
try {
  const run = await runWithEvidence(server, 7, { image: screen });
  const response = await fetch(`${server.url}/api/v1/testmgmt/testruns/${run.runId}/export?format=html`, {
    headers: { 'service.api-token': server.admin.key },
  });
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'attest-docs-')), 'report.html');
  fs.writeFileSync(file, Buffer.from(await response.arrayBuffer()));
  const browser = await launchChromium();
  const page = await browser.newPage({ viewport: { width: 1280, height: 1700 } });
  await page.goto(`file://${file}`);
  await page.screenshot({ path: 'docs/images/html-report.png', fullPage: false });
  await browser.close();
  process.stdout.write('wrote docs/images/html-report.png\n');
} finally {
  await server.close();
}
