type Json = Record<string, unknown>;

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);

const code = (value: unknown) => `<pre>${escapeHtml(JSON.stringify(value, null, 2))}</pre>`;

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
  return `<section id="${escapeHtml(id)}">
<h3><span class="m ${method}">${method.toUpperCase()}</span> <code>${escapeHtml(path)}</code></h3>
<p>${escapeHtml(String(op.summary ?? ''))}</p>
<p class="meta">Operation <code>${escapeHtml(id)}</code> · access: ${escapeHtml(describeAccess(op['x-authz'] as Json))}</p>
${
  parameters.length
    ? `<table><tr><th>Parameter</th><th>In</th><th>Required</th><th>Schema</th></tr>${parameters
        .map(
          (p) =>
            `<tr><td><code>${escapeHtml(String(p.name))}</code></td><td>${escapeHtml(String(p.in))}</td><td>${p.required ? 'yes' : 'no'}</td><td><code>${escapeHtml(JSON.stringify(p.schema))}</code>${p.description ? `<br>${escapeHtml(String(p.description))}` : ''}</td></tr>`,
        )
        .join('')}</table>`
    : ''
}
${
  body
    ? Object.entries(body)
        .map(([type, media]) => `<details><summary>Request body (${escapeHtml(type)})</summary>${code(media.schema)}</details>`)
        .join('')
    : ''
}
<details><summary>Responses: ${Object.keys(responses).map(escapeHtml).join(', ')}</summary>${Object.entries(responses)
    .map(([status, r]) => {
      const content = r.content as Record<string, Json> | undefined;
      return `<h4>${escapeHtml(status)}: ${escapeHtml(String(r.description ?? ''))}</h4>${
        content
          ? Object.entries(content)
              .map(([type, media]) => `<p><code>${escapeHtml(type)}</code></p>${code(media.schema)}`)
              .join('')
          : ''
      }`;
    })
    .join('')}</details>
</section>`;
}

/** Renders an OpenAPI document as one static, script-free HTML reference page. */
export function renderReferencePage(document: Json): string {
  const info = document.info as Json;
  const paths = document.paths as Record<string, Record<string, Json>>;
  const byTag = new Map<string, string[]>();
  const toc = new Map<string, string[]>();
  for (const [path, item] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(item)) {
      const tag = ((op.tags as string[] | undefined) ?? ['Other'])[0] ?? 'Other';
      byTag.set(tag, [...(byTag.get(tag) ?? []), renderOperation(method, path, op)]);
      toc.set(tag, [
        ...(toc.get(tag) ?? []),
        `<a href="#${escapeHtml(String(op.operationId))}">${method.toUpperCase()} ${escapeHtml(path)}</a>`,
      ]);
    }
  }
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(String(info.title))} ${escapeHtml(String(info.version))} reference</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;margin:0;display:grid;grid-template-columns:300px 1fr;color:#1d2330}
nav{position:sticky;top:0;height:100vh;overflow:auto;background:#f4f6fa;padding:1rem;font-size:13px}
nav a{display:block;color:#244;text-decoration:none;padding:1px 0} nav h4{margin:1rem 0 .2rem}
main{padding:1rem 2rem;max-width:1000px} section{border-top:1px solid #dde;padding:.5rem 0}
.m{display:inline-block;min-width:4em;text-align:center;border-radius:4px;color:#fff;font-size:12px;padding:2px 6px}
.get{background:#2b7de9}.post{background:#1f9d55}.put{background:#b7791f}.patch{background:#805ad5}.delete{background:#c53030}
pre{background:#f7f7fb;padding:.5rem;overflow:auto;font-size:12px} table{border-collapse:collapse;font-size:13px}
td,th{border:1px solid #dde;padding:3px 6px;text-align:left;vertical-align:top} .meta{color:#556;font-size:13px}
</style></head><body>
<nav><strong>${escapeHtml(String(info.title))}</strong> ${escapeHtml(String(info.version))}${[...toc.entries()]
    .map(([tag, links]) => `<h4>${escapeHtml(tag)}</h4>${links.join('')}`)
    .join('')}</nav>
<main><h1>${escapeHtml(String(info.title))}</h1><p>${escapeHtml(String(info.description ?? ''))}</p>
<p>Base path: <code>${escapeHtml(String(((document.servers as Json[])[0] as Json).url))}</code>. The machine-readable document is at <code>openapi.json</code> under that path (authenticated).</p>
${[...byTag.entries()].map(([tag, ops]) => `<h2>${escapeHtml(tag)}</h2>${ops.join('')}`).join('')}
</main></body></html>`;
}
