/** Whether an `If-None-Match` header names `etag` (weak forms and `*` included, RFC 9110 13.1.2). */
export const matchesEtag = (header: string, etag: string): boolean =>
  header.trim() === '*' || header.split(',').some((candidate) => candidate.trim().replace(/^W\//, '') === etag);
