import MarkdownIt from 'markdown-it';
import { useMemo } from 'preact/hooks';
import { Preformatted } from '../components.tsx';
import type { TextCell } from './steps.ts';

// Markdown cells: no raw HTML, links made from bare URLs, links that open apart from the app and
// tell the other site nothing. An image becomes a link to it: the CSP allows only our own images,
// and a remote one would only be a broken picture and a console error.
const markdown = new MarkdownIt({ html: false, linkify: true });
markdown.renderer.rules.image = (tokens, index) => {
  const token = tokens[index];
  const src = String(token?.attrGet('src') ?? '');
  const alt = token?.content || src || 'image';
  const html = markdown.utils.escapeHtml;
  return `<a href="${html(src)}" rel="noopener noreferrer" target="_blank">${html(alt)}</a>`;
};
const defaultLinkOpen = markdown.renderer.rules.link_open;
markdown.renderer.rules.link_open = (tokens, index, options, env, self) => {
  const token = tokens[index];
  if (token) {
    token.attrSet('rel', 'noopener noreferrer');
    token.attrSet('target', '_blank');
  }
  return defaultLinkOpen ? defaultLinkOpen(tokens, index, options, env, self) : self.renderToken(tokens, index, options);
};

function Markdown({ text }: { text: string }) {
  const html = useMemo(() => markdown.render(text), [text]);
  // markdown-it with html off escapes every tag the text holds.
  return <div class="cell-markdown" dangerouslySetInnerHTML={{ __html: html }} />;
}

/** One text cell: its name, then its text as markdown or as it is. */
export function Cell({ cell }: { cell: TextCell }) {
  return (
    <div class={`cell cell-${cell.name.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`}>
      <div class="cell-name">{cell.name}</div>
      {cell.mediaType === 'text/markdown' ? (
        <Markdown text={cell.text} />
      ) : (
        <Preformatted class="cell-text" label={cell.name}>
          {cell.text}
        </Preformatted>
      )}
    </div>
  );
}

export function Cells({ cells }: { cells: TextCell[] }) {
  if (cells.length === 0) return null;
  return (
    <div class="cells">
      {cells.map((cell) => (
        <Cell key={cell.id} cell={cell} />
      ))}
    </div>
  );
}
