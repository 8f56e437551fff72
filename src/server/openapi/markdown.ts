/** Escapes text for HTML element content and attribute values. */
export const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);

/** Inline Markdown on already escaped text: `code`, **bold**. */
const inline = (escaped: string) => escaped.replace(/`([^`]+)`/g, '<code>$1</code>').replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>');

/**
 * The small Markdown subset the contract's descriptions use, rendered safely: the text is escaped
 * first, so raw HTML never passes through, and only then are code spans, bold, paragraphs and
 * `- ` lists turned into markup. No links or images, so no URL ever comes from a description.
 */
export function renderMarkdown(text: string): string {
  return text
    .split(/\n{2,}/)
    .map((block) => {
      const lines = block.split('\n');
      if (lines.every((line) => /^\s*- /.test(line))) {
        return `<ul>${lines.map((line) => `<li>${inline(escapeHtml(line.replace(/^\s*- /, '')))}</li>`).join('')}</ul>`;
      }
      return `<p>${inline(escapeHtml(block))}</p>`;
    })
    .join('');
}
