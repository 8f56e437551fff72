import type { Static, TSchema } from 'typebox';
import type { BodyOf, Endpoint } from '../../../api/endpoint.ts';

/** The 2xx statuses of an endpoint that answer JSON (not a byte download, not an empty answer). */
type JsonStatus<E extends Endpoint> = {
  [S in keyof E['responses']]: S extends 200 | 201 | 202 | 203 | 206
    ? E['responses'][S] extends null
      ? never
      : E['responses'][S] extends { content: unknown; description: string }
        ? never
        : S
    : never;
}[keyof E['responses']];

/**
 * The examples of one operation, typed by its contract entry: the request body as the handler
 * receives it and every 2xx JSON answer as the client reads it, so an example cannot drift from
 * the schema it illustrates without `tsc` failing.
 */
export type ExampleOf<E extends Endpoint> = (E['body'] extends TSchema
  ? {
      /** The body for every non-text media type: the JSON body, or the fields of a multipart form. */
      request: BodyOf<E>;
      /** The document sent with a text media type (a Gherkin feature), when the operation takes one. */
      text?: string;
    }
  : { request?: never; text?: never }) & {
  responses: { [S in JsonStatus<E>]: E['responses'][S] extends TSchema ? Static<E['responses'][S]> : never } & {
    [S in Exclude<keyof E['responses'], JsonStatus<E>>]?: never;
  };
};

/** An operation's examples, untyped: what the document builder attaches. */
export interface OperationExamples {
  request?: unknown;
  text?: string;
  responses: Record<number, unknown>;
}

/** Binds examples to their contract entry (and so to its operationId). */
export function examplesOf<const E extends Endpoint>(endpoint: E, examples: ExampleOf<E>): [string, OperationExamples] {
  return [endpoint.operationId, examples as OperationExamples];
}
