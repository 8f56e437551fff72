/**
 * A page's address with some query fields changed (undefined removes one): filters, cursors and
 * chosen items live in the URL, so every view can be linked and comes back on reload.
 */
export function withQuery(path: string, query: Record<string, string>, changes: Record<string, string | undefined>): string {
  const next = new URLSearchParams();
  for (const [name, value] of Object.entries({ ...query, ...changes })) if (value) next.set(name, value);
  const text = next.toString();
  return text ? `${path}?${text}` : path;
}
