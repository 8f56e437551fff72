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

export const getSignedImage = endpoint({
  operationId: 'getSignedImage',
  method: 'GET',
  path: '/images/{imageId}/signed',
  summary: 'An image, or its thumbnail, by a signed link that needs no session (HOOK-14).',
  description:
    'The screenshot links of webhook and chat messages (`screenshotUrl` of `job.completed`) point here, so the people a ' +
    'message reaches can open them. A link is signed by the instance for one image, `thumbnail` or not, until `expires` ' +
    "(`ATTEST_IMAGE_LINK_TTL_SECONDS` after the message was made, a day by default). A signature that is not this image's, " +
    'for this `thumbnail` and `expires`, or a link past its expiry, answers 401 and no bytes; an image no longer used by any ' +
    'project answers 404. Answered as `GET /images/{imageId}` answers, but never cached (`Cache-Control: no-store`).',
  tag: 'Images',
  access: { scope: 'public' },
  refusedWith: 'The signature is not that of this image, `thumbnail` and `expires`, or the link has expired.',
  params: Type.Object({ imageId: Uuid }, { additionalProperties: false }),
  querystring: Type.Object(
    {
      thumbnail: Type.Optional(Type.Boolean({ description: 'The thumbnail instead of the image, as signed.' })),
      expires: Type.Integer({ minimum: 0, maximum: 2 ** 40, description: 'When the link expires, in seconds since the epoch.' }),
      signature: Type.String({ pattern: '^[A-Za-z0-9_-]{43}$', maxLength: 43, description: 'The HMAC-SHA256 of the link, base64url.' }),
    },
    { additionalProperties: false },
  ),
  binary: true,
  responses: { 200: imageBytes('The image.'), 206: imageBytes('The requested byte range of the image.'), 304: NoContent },
});
