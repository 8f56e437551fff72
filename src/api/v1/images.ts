import { Type } from 'typebox';
import { NoContent, Uuid } from '../common.ts';
import { endpoint } from '../endpoint.ts';
import { RASTER_TYPES } from './artifacts.ts';

const imageBytes = (description: string) => ({
  description,
  content: Object.fromEntries(RASTER_TYPES.map((t) => [t, { schema: Type.String({ contentMediaType: t, maxLength: 1024 ** 4 }) }])),
});

export const getImage = endpoint({
  operationId: 'getImage',
  method: 'GET',
  path: '/images/{imageId}',
  summary: 'The bytes of an image (documented endpoint 5), or its thumbnail.',
  description:
    'Answers the image with its real type (PNG, JPEG, GIF or WebP) even when the request says `Accept: application/json`. ' +
    'Images are immutable: `ETag` is the SHA-256 and the answer may be cached for a year; `If-None-Match` answers 304 and ' +
    '`Range: bytes=…` (one range) 206, or 416 when it lies outside. An image is visible to a caller who can see a project ' +
    'with an artifact that uses it; any other id answers 404.\n\n' +
    '`thumbnail=true` answers a WebP at most 320 px on its longest side, made on first request and then stored. When one ' +
    'cannot be made, the original is sent instead with `X-Attest-Thumbnail: unavailable` and `Cache-Control: no-store`; when ' +
    'too many are being made at once the answer is 503 with `Retry-After`.',
  tag: 'Images',
  access: { scope: 'project', role: 'viewer' },
  params: Type.Object({ imageId: Uuid }, { additionalProperties: false }),
  querystring: Type.Object(
    { thumbnail: Type.Optional(Type.Boolean({ description: 'Answer the thumbnail instead of the image.' })) },
    { additionalProperties: false },
  ),
  binary: true,
  responses: { 200: imageBytes('The image.'), 206: imageBytes('The requested byte range of the image.'), 304: NoContent },
});
