/**
 * A job's or run's CI build as a link: its host and path, shortened, with the whole address in the
 * title. The contract lets only http(s) URLs in; anything else (never expected) is shown as text,
 * so the link can never run script.
 */
export function CiLink({ url }: { url: string }) {
  let text = url.replace(/^https?:\/\//i, '');
  if (text.length > 60) text = `${text.slice(0, 59)}…`;
  if (text === url) return <span title={url}>{text}</span>;
  return (
    <a href={url} title={url} rel="noopener noreferrer" target="_blank" data-testid="ci-link">
      {text}
    </a>
  );
}
