import { escapeHtml, renderMarkdown } from './markdown.ts';
import { schemaAnchor, schemaHtml, typeHtml } from './schema-html.ts';

type Json = Record<string, unknown>;

/** Longest filter the page takes; longer text is cut. */
export const FILTER_MAX = 100;

function describeAccess(access: Json | undefined): string {
  if (!access || access.scope === 'public') return 'open (no key)';
  const role = String(access.role);
  return access.scope === 'project' ? `${role}, member of the owning project` : role;
}

function renderOperation(method: string, path: string, op: Json): string {
  const parameters = (op.parameters as Json[] | undefined) ?? [];
  const responses = (op.responses as Record<string, Json>) ?? {};
  const body = (op.requestBody as Json | undefined)?.content as Record<string, Json> | undefined;
  const id = String(op.operationId);
  const parameterRows = parameters.map((p) => {
    const schema = p.schema as Json;
    return `<tr><td><code>${escapeHtml(String(p.name))}</code></td><td>${escapeHtml(String(p.in))}</td><td>${typeHtml(schema)}</td><td>${
      p.required ? 'yes' : 'no'
    }</td><td>${p.description ? renderMarkdown(String(p.description)) : ''}</td></tr>`;
  });
  return `<section id="${escapeHtml(id)}" class="op">
<h3><span class="m ${method}">${method.toUpperCase()}</span> <code>${escapeHtml(path)}</code></h3>
${renderMarkdown(String(op.summary ?? ''))}
<p class="meta">Operation <code>${escapeHtml(id)}</code> · access: ${escapeHtml(describeAccess(op['x-authz'] as Json))}</p>
${op.description ? `<div class="desc">${renderMarkdown(String(op.description))}</div>` : ''}
${
  parameterRows.length
    ? `<table class="fields"><tr><th>Parameter</th><th>In</th><th>Type</th><th>Required</th><th>Description</th></tr>${parameterRows.join('')}</table>`
    : ''
}
${
  body
    ? Object.entries(body)
        .map(([type, media]) => `<h4>Request body (<code>${escapeHtml(type)}</code>)</h4>${schemaHtml(media.schema as Json)}`)
        .join('')
    : ''
}
<h4>Responses</h4><table class="fields"><tr><th>Status</th><th>Description</th><th>Body</th></tr>${Object.entries(responses)
    .map(([status, r]) => {
      const content = (r.content as Record<string, Json> | undefined) ?? {};
      const bodies = Object.entries(content)
        .map(([type, media]) => `${typeHtml(media.schema as Json)} <span class="meta">${escapeHtml(type)}</span>`)
        .join('<br>');
      return `<tr><td>${escapeHtml(status)}</td><td>${renderMarkdown(String(r.description ?? ''))}</td><td>${bodies}</td></tr>`;
    })
    .join('')}</table>
</section>`;
}

function renderSchemas(schemas: Record<string, Json>): string {
  return Object.entries(schemas)
    .map(
      ([name, schema]) =>
        `<section id="${escapeHtml(schemaAnchor(name))}" class="schema"><h3>${escapeHtml(name)}</h3>${
          schema.description ? renderMarkdown(String(schema.description)) : ''
        }${schemaHtml(schema)}</section>`,
    )
    .join('\n');
}

/** Whether an operation matches the filter: its path, method, summary, id or tag contains every word. */
function matches(filter: string, method: string, path: string, op: Json): boolean {
  const haystack = [method, path, op.operationId, op.summary, ...((op.tags as string[] | undefined) ?? [])].join(' ').toLowerCase();
  return filter
    .toLowerCase()
    .split(/\s+/)
    .filter(Boolean)
    .every((word) => haystack.includes(word));
}

const STYLE = `body{font:15px/1.5 system-ui,sans-serif;margin:0;display:grid;grid-template-columns:300px 1fr;color:#1d2330}
nav{position:sticky;top:0;height:100vh;overflow:auto;background:#f4f6fa;padding:1rem;font-size:13px;box-sizing:border-box}
nav a{display:block;color:#244;text-decoration:none;padding:1px 0} nav h4{margin:1rem 0 .2rem}
nav form{display:flex;gap:4px;margin:.5rem 0} nav input{flex:1;min-width:0;padding:3px 6px}
main{padding:1rem 2rem;max-width:1100px} section{border-top:1px solid #dde;padding:.5rem 0}
.m{display:inline-block;min-width:4em;text-align:center;border-radius:4px;color:#fff;font-size:12px;padding:2px 6px}
.get{background:#2b7de9}.post{background:#1f9d55}.put{background:#b7791f}.patch{background:#805ad5}.delete{background:#c53030}
code{background:#f0f1f6;border-radius:3px;padding:0 3px;font-size:90%} table{border-collapse:collapse;font-size:13px;margin:.3rem 0}
td,th{border:1px solid #dde;padding:3px 6px;text-align:left;vertical-align:top} td p{margin:0} .meta{color:#556;font-size:13px}
:target{background:#fffbe6}`;

/**
 * Renders an OpenAPI document as one static HTML reference page, with no script at all. The
 * filter box is a plain GET form: the server renders only the operations that match `filter`.
 */
export function renderReferencePage(document: Json, filter = ''): string {
  const info = document.info as Json;
  const paths = document.paths as Record<string, Record<string, Json>>;
  const schemas = ((document.components as Json | undefined)?.schemas as Record<string, Json> | undefined) ?? {};
  const wanted = filter.slice(0, FILTER_MAX).trim();
  const byTag = new Map<string, string[]>();
  const toc = new Map<string, string[]>();
  let shown = 0;
  for (const [path, item] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (wanted && !matches(wanted, method, path, op)) continue;
      shown++;
      const tag = ((op.tags as string[] | undefined) ?? ['Other'])[0] ?? 'Other';
      byTag.set(tag, [...(byTag.get(tag) ?? []), renderOperation(method, path, op)]);
      toc.set(tag, [
        ...(toc.get(tag) ?? []),
        `<a href="#${escapeHtml(String(op.operationId))}">${method.toUpperCase()} ${escapeHtml(path)}</a>`,
      ]);
    }
  }
  const title = `${escapeHtml(String(info.title))} ${escapeHtml(String(info.version))}`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${title} reference</title>
<style>
${STYLE}
</style></head><body>
<nav><strong>${title}</strong>
<form method="get" action="" role="search"><input type="search" name="filter" maxlength="${FILTER_MAX}" value="${escapeHtml(wanted)}" placeholder="Filter operations" aria-label="Filter operations"><button>Filter</button></form>
${wanted ? `<p>${shown} operation(s) match <code>${escapeHtml(wanted)}</code>. <a href="?">Show all</a></p>` : ''}${[...toc.entries()]
  .map(([tag, links]) => `<h4>${escapeHtml(tag)}</h4>${links.join('')}`)
  .join('')}<h4><a href="#schemas">Schemas</a></h4></nav>
<main><h1>${escapeHtml(String(info.title))}</h1>${renderMarkdown(String(info.description ?? ''))}
<p>Base path: <code>${escapeHtml(String(((document.servers as Json[])[0] as Json).url))}</code>. The machine-readable document is <code>openapi.json</code> under that path (open, no key).</p>
${[...byTag.entries()].map(([tag, ops]) => `<h2>${escapeHtml(tag)}</h2>${ops.join('')}`).join('')}
<h2 id="schemas">Schemas</h2>
${renderSchemas(schemas)}
</main></body></html>`;
}
