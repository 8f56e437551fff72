// Baseline for F5: the smallest server doing the same durable work as Attest for a run upload.
// A run with its steps and cells commits in one SQLite transaction (WAL, synchronous=FULL); a
// screenshot is written to a temporary file, fsynced, renamed and its folder fsynced, then its row
// commits. No validation, no authentication, no content checks: a floor, not a product.
// usage: node minimal-server.mjs <port> <dataDir>
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import Database from 'better-sqlite3';

const [port, dir] = process.argv.slice(2);
fs.mkdirSync(path.join(dir, 'blobs'), { recursive: true });
const db = new Database(path.join(dir, 'minimal.db'));
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
db.exec(`CREATE TABLE IF NOT EXISTS runs(id TEXT PRIMARY KEY, name TEXT, created_at TEXT);
  CREATE TABLE IF NOT EXISTS steps(id TEXT PRIMARY KEY, run_id TEXT, position INT, title TEXT, status TEXT);
  CREATE TABLE IF NOT EXISTS cells(id TEXT PRIMARY KEY, step_id TEXT, position INT, name TEXT, text TEXT);
  CREATE TABLE IF NOT EXISTS files(id TEXT PRIMARY KEY, run_id TEXT, path TEXT, size INT)`);
const insertRun = db.prepare('INSERT INTO runs VALUES (?, ?, ?)');
const insertStep = db.prepare('INSERT INTO steps VALUES (?, ?, ?, ?, ?)');
const insertCell = db.prepare('INSERT INTO cells VALUES (?, ?, ?, ?, ?)');
const insertFile = db.prepare('INSERT INTO files VALUES (?, ?, ?, ?)');
const recordRun = db.transaction((run) => {
  const id = randomUUID();
  insertRun.run(id, run.name, new Date().toISOString());
  run.steps.forEach((step, i) => {
    const stepId = randomUUID();
    insertStep.run(stepId, id, i, step.title, step.status);
    for (const [j, cell] of step.cells.entries()) insertCell.run(randomUUID(), stepId, j, cell.name, cell.text);
  });
  return id;
});

function body(request) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    request.on('data', (c) => chunks.push(c));
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

async function storeFile(runId, bytes) {
  const id = randomUUID();
  const final = path.join(dir, 'blobs', id);
  const temporary = `${final}.part`;
  const handle = await fs.promises.open(temporary, 'w');
  await handle.writeFile(bytes);
  await handle.sync();
  await handle.close();
  await fs.promises.rename(temporary, final);
  const folder = await fs.promises.open(path.join(dir, 'blobs'), 'r');
  await folder.sync();
  await folder.close();
  insertFile.run(id, runId, final, bytes.length);
  return id;
}

http
  .createServer(async (request, response) => {
    const bytes = await body(request);
    let answer;
    if (request.url === '/runs') answer = { id: recordRun(JSON.parse(bytes.toString('utf8'))) };
    else answer = { id: await storeFile(request.url.split('/')[2], bytes) };
    const json = JSON.stringify(answer);
    response.writeHead(201, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) });
    response.end(json);
  })
  .listen(Number(port), '127.0.0.1', () => process.stdout.write('ready\n'));
