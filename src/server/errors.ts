/**
 * The catalogue of problem codes. Each code has one status and one constant title; docs/errors.md
 * documents every entry and a test keeps the two in step. Clients branch on `code`, never on text.
 */
export const ERRORS = {
  INVALID_INPUT: { status: 400, title: 'The request is invalid' },
  MALFORMED_JSON: { status: 400, title: 'The body is not valid JSON' },
  INVALID_CURSOR: { status: 400, title: 'The cursor is invalid' },
  SSO_FAILED: { status: 400, title: 'Single sign-on did not complete' },
  UNAUTHENTICATED: { status: 401, title: 'Invalid or missing credentials' },
  FORBIDDEN: { status: 403, title: 'Your role does not allow this' },
  REAUTHENTICATION_REQUIRED: { status: 403, title: 'Confirm with your password' },
  PASSWORD_LOGIN_DISABLED: { status: 403, title: 'Password sign-in is turned off' },
  SSO_ACCESS_DENIED: { status: 403, title: 'Your groups give you no access' },
  NOT_FOUND: { status: 404, title: 'Not found' },
  UNSUPPORTED_API_VERSION: { status: 404, title: 'Unknown API version' },
  METHOD_NOT_ALLOWED: { status: 405, title: 'Method not allowed' },
  NOT_ACCEPTABLE: { status: 406, title: 'Cannot answer in an accepted media type' },
  REQUEST_TIMEOUT: { status: 408, title: 'The request took too long to arrive' },
  ALREADY_EXISTS: { status: 409, title: 'It already exists' },
  LAST_ADMIN: { status: 409, title: 'The last admin cannot be removed' },
  STATE_CONFLICT: { status: 409, title: 'The resource is not in a state that allows this' },
  RUN_NOT_COMPLETED: { status: 409, title: 'The run is not completed' },
  RUN_FROZEN: { status: 409, title: 'The run is finished and its results are frozen' },
  TOO_MANY_KEYS: { status: 409, title: 'The user holds the most keys allowed' },
  TOO_MANY_ARTIFACTS: { status: 409, title: 'The run holds the most artifacts allowed' },
  PAYLOAD_TOO_LARGE: { status: 413, title: 'The request body is too large' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, title: 'Unsupported media type' },
  RANGE_NOT_SATISFIABLE: { status: 416, title: 'Range not satisfiable' },
  IMAGE_TOO_LARGE: { status: 422, title: 'The image has too many pixels' },
  UNPROCESSABLE: { status: 422, title: 'The content cannot be processed' },
  HEADERS_TOO_LARGE: { status: 431, title: 'Request headers too large' },
  RATE_LIMITED: { status: 429, title: 'Too many requests' },
  INTERNAL: { status: 500, title: 'Internal error' },
  UPSTREAM_FAILED: { status: 502, title: 'An external service refused or could not be reached' },
  UNAVAILABLE: { status: 503, title: 'Service unavailable' },
  STORAGE_FULL: { status: 507, title: 'Storage is full' },
  QUOTA_EXCEEDED: { status: 507, title: 'Project quota exceeded' },
} as const;

export type ErrorCode = keyof typeof ERRORS;

/** The problem `type` URI of a code: stable, and independent of the instance's host. */
export function problemType(code: ErrorCode): string {
  return `urn:attest:problem:${code.toLowerCase().replace(/_/g, '-')}`;
}

export interface FieldError {
  pointer: string;
  message: string;
  /** A Gherkin syntax error: where it is in the feature text (1-based). */
  line?: number;
  column?: number;
}

/** An expected failure with a catalogue code; the error handler turns it into a problem response. */
export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    detail?: string,
    readonly extras: {
      errors?: FieldError[];
      headers?: Record<string, string>;
      supportedVersions?: string[];
      unreachable?: ('database' | 'blob store')[];
    } = {},
  ) {
    super(detail ?? ERRORS[code].title);
    this.name = 'AppError';
    this.status = ERRORS[code].status;
  }
}

export const notFound = (what = 'The resource') => new AppError('NOT_FOUND', `${what} does not exist or is not visible to you.`);
/** The longest JSON pointer a problem echoes; a longer one (a body nested a thousand levels deep) is cut. */
export const POINTER_MAX_LENGTH = 200;

/** A pointer as problems echo it: at most POINTER_MAX_LENGTH characters, a cut one ending in `…`. */
export const shortPointer = (pointer: string): string =>
  pointer.length <= POINTER_MAX_LENGTH ? pointer : `${pointer.slice(0, POINTER_MAX_LENGTH - 1)}…`;

export const invalid = (field: string, message: string) => {
  const pointer = shortPointer(field);
  return new AppError('INVALID_INPUT', `${pointer || 'body'}: ${message}`, { errors: [{ pointer, message }] });
};

/**
 * The one "load or 404" idiom: a row a repository found, or the 404 of an unknown id. Missing and
 * invisible resources answer alike, so `what` names the kind of thing, never which one.
 */
export function found<T>(row: T | undefined, what: string): T {
  if (row === undefined) throw notFound(what);
  return row;
}

/**
 * A reason the server cannot start (a busy or unsafe data folder, an unreachable database, a blob
 * store it cannot use): `main.ts` prints its message and exits 1, without a stack.
 */
export class StartupError extends Error {
  override name = 'StartupError';
}
