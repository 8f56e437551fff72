/**
 * Whether an `If-None-Match` header names `etag` (weak forms and `*` included, RFC 9110 13.1.2).
 * The header a cache sends back is almost always the ETag itself: that is answered by one comparison.
 */
export const matchesEtag = (header: string, etag: string): boolean =>
  header === etag || header.trim() === '*' || header.split(',').some((candidate) => candidate.trim().replace(/^W\//, '') === etag);
