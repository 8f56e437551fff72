import { type TSchema, Type } from 'typebox';

// Bounds that every schema reuses (SEC-4a: every string and array has a maximum).
export const NAME_MAX = 256;
export const TEXT_MAX = 64 * 1024;
export const LABEL_MAX = 128;
export const LABELS_MAX = 50;

/**
 * The text of a UUID in any case, unanchored: the one pattern every check of a UUID builds on (ids,
 * old-format keys, project references, log masking).
 */
export const UUID_PATTERN = '[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}';
/** A value that is one UUID and nothing else, in any case. */
export const IS_UUID = new RegExp(`^${UUID_PATTERN}$`);

export const Uuid = Type.String({ format: 'uuid', maxLength: 36, description: 'A random UUID (version 4).' });
export const Timestamp = Type.String({ format: 'date-time', maxLength: 40, description: 'RFC 3339 time, UTC.' });
export const Email = Type.String({ format: 'email', minLength: 3, maxLength: 254 });
export const Name = Type.String({ minLength: 1, maxLength: NAME_MAX });
export const Description = Type.String({ maxLength: TEXT_MAX });
/** A client-chosen key that makes a retried write harmless. */
export const ClientKey = Type.String({ minLength: 1, maxLength: 200 });
export const IdempotencyKey = (what: string) =>
  Type.Optional({
    ...ClientKey,
    description:
      `Makes a retried ${what} harmless: with a key already used, the same body answers what the first call stored ` +
      '(200) and nothing is stored again; another body answers 409 `STATE_CONFLICT`.',
  });
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const RoleSchema = Type.Union([Type.Literal('viewer'), Type.Literal('tester'), Type.Literal('manager'), Type.Literal('admin')]);

/** RFC 9457 problem details, with Attest's stable machine-readable `code`. */
export const Problem = Type.Object(
  {
    type: Type.String({ maxLength: 200, description: 'A stable URI naming the problem type.' }),
    title: Type.String({ maxLength: 200 }),
    status: Type.Integer({ minimum: 400, maximum: 599 }),
    code: Type.String({ maxLength: 64, description: 'Stable machine-readable code; see docs/errors.md.' }),
    detail: Type.Optional(Type.String({ maxLength: 2000 })),
    instance: Type.Optional(Type.String({ maxLength: 200, description: 'The request id, also sent as X-Request-Id.' })),
    errors: Type.Optional(
      Type.Array(
        Type.Object(
          {
            pointer: Type.String({ maxLength: 500 }),
            message: Type.String({ maxLength: 500 }),
            line: Type.Optional(
              Type.Integer({ minimum: 1, description: 'A Gherkin syntax error: the line of the feature text it is on (1-based).' }),
            ),
            column: Type.Optional(Type.Integer({ minimum: 1, description: 'A Gherkin syntax error: the column on that line (1-based).' })),
          },
          { additionalProperties: false },
        ),
        { maxItems: 100, description: 'Validation problems, each naming the field by JSON pointer.' },
      ),
    ),
    supportedVersions: Type.Optional(Type.Array(Type.String({ maxLength: 10 }), { maxItems: 20 })),
    unreachable: Type.Optional(
      Type.Array(Type.Union([Type.Literal('database'), Type.Literal('blob store')]), {
        maxItems: 2,
        description: 'Readiness (`GET /health/ready`) only: what the instance cannot reach.',
      }),
    ),
  },
  { additionalProperties: false },
);

/** The list convention: every list takes `cursor` + `limit` and answers `{ items, nextCursor }`. */
export const PageQuery = {
  cursor: Type.Optional(Type.String({ maxLength: 500, description: 'Opaque cursor from a previous page.' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000, description: 'Page size (bounded by configuration).' })),
};

export const Page = <T extends TSchema>(item: T) =>
  Type.Object(
    {
      items: Type.Array(item, { maxItems: 10_000 }),
      nextCursor: Nullable(Type.String({ maxLength: 500, description: 'Pass as `cursor` for the next page; null on the last page.' })),
    },
    { additionalProperties: false },
  );

export const NoContent = null;

export const EmailParams = Type.Object({ email: Email }, { additionalProperties: false });
