import { escapeHtml, renderMarkdown } from './markdown.ts';

type Json = Record<string, unknown>;

const REF = /^#\/components\/schemas\/(.+)$/;

/** The anchor of a component schema's section on the reference page. */
export const schemaAnchor = (name: string) => `schema-${name}`;

/** A schema's type in words, with named schemas as links to their sections. */
export function typeHtml(schema: Json | undefined): string {
  if (!schema) return 'any';
  const ref = typeof schema.$ref === 'string' ? REF.exec(schema.$ref)?.[1] : undefined;
  if (ref) return `<a href="#${escapeHtml(schemaAnchor(ref))}">${escapeHtml(ref)}</a>`;
  if ('const' in schema) return `<code>${escapeHtml(JSON.stringify(schema.const))}</code>`;
  const branches = (schema.anyOf ?? schema.oneOf) as Json[] | undefined;
  if (branches) return branches.map(typeHtml).join(' | ');
  if (schema.type === 'array') return `array of ${typeHtml(schema.items as Json)}`;
  if (schema.type === 'string' && schema.format) return `string (${escapeHtml(String(schema.format))})`;
  return escapeHtml(String(schema.type ?? 'any'));
}

const CONSTRAINTS: [string, string][] = [
  ['minLength', 'min length'],
  ['maxLength', 'max length'],
  ['minimum', 'min'],
  ['maximum', 'max'],
  ['minItems', 'min items'],
  ['maxItems', 'max items'],
  ['minProperties', 'min properties'],
  ['maxProperties', 'max properties'],
  ['pattern', 'pattern'],
  ['default', 'default'],
];

/** `max length 256 · pattern ^[A-Z]…`, from the schema and (for arrays) its items. */
export function constraintsHtml(schema: Json): string {
  const parts: string[] = [];
  for (const [key, label] of CONSTRAINTS) {
    if (schema[key] !== undefined) parts.push(`${label} <code>${escapeHtml(String(schema[key]))}</code>`);
  }
  if (schema.uniqueItems) parts.push('unique items');
  return parts.join(' · ');
}

/** One table row per field of an object schema; inline nested objects add `parent.child` rows. */
function fieldRows(schema: Json, prefix: string, depth: number): string[] {
  const properties = (schema.properties as Record<string, Json> | undefined) ?? {};
  const required = new Set((schema.required as string[] | undefined) ?? []);
  return Object.entries(properties).flatMap(([name, prop]) => {
    const row = `<tr><td><code>${escapeHtml(prefix + name)}</code></td><td>${typeHtml(prop)}</td><td>${
      required.has(name) ? 'yes' : 'no'
    }</td><td>${prop.description ? renderMarkdown(String(prop.description)) : ''}</td><td>${constraintsHtml(prop)}</td></tr>`;
    const nested = prop.type === 'object' && depth < 3 ? fieldRows(prop, `${prefix}${name}.`, depth + 1) : [];
    return [row, ...nested];
  });
}

const HEAD = '<tr><th>Field</th><th>Type</th><th>Required</th><th>Description</th><th>Constraints</th></tr>';

/** A schema as readable HTML: a field table for objects, its type in words otherwise. */
export function schemaHtml(schema: Json | undefined): string {
  if (!schema) return '';
  if (schema.type === 'object' && schema.properties) {
    const rows = fieldRows(schema, '', 0);
    return rows.length ? `<table class="fields">${HEAD}${rows.join('')}</table>` : '<p>An object.</p>';
  }
  const constraints = constraintsHtml(schema);
  return `<p>${typeHtml(schema)}${constraints ? ` (${constraints})` : ''}</p>`;
}
