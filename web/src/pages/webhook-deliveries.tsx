import { useState } from 'preact/hooks';
import type { Static } from 'typebox';
import { v1 } from '../../../src/client/index.ts';
import { useAction } from '../admin/action.ts';
import { Badge, ErrorBox, Loading, Preformatted } from '../components.tsx';
import { useApi } from '../data.ts';
import { formatTime } from '../format.ts';
import './webhooks.css';

// A webhook's delivery log (HOOK-6, HOOK-11): one row per delivery, the width of the page, and
// under a row, on demand, what each attempt sent and got back, as a receiver's developer debugs it
// (GitHub's "Recent deliveries" shows the same): the request's URL, headers and body, and the
// answer's status, headers and body. The log is light (`GET …/deliveries`); the details are read
// when a row is opened (`GET …/deliveries/{deliveryId}`).

type Delivery = Static<typeof v1.webhooks.WebhookDelivery>;
type Attempt = Delivery['attempts'][number];
type AttemptDetails = Static<typeof v1.webhooks.WebhookAttemptDetails>;

/** What an attempt came to, in a few words: its status and latency, or why no answer came. */
function outcome(attempt: Attempt): string {
  return attempt.status !== null ? `${attempt.status} in ${attempt.latencyMs} ms` : `${attempt.error ?? 'no answer'}`;
}

/** A JSON body indented for reading; any other text as it is. */
function readable(body: string): string {
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

function HeaderList({ headers, label }: { headers: Record<string, string>; label: string }) {
  const entries = Object.entries(headers);
  if (entries.length === 0) return <p class="muted">No headers.</p>;
  return (
    <dl class="header-list" aria-label={label}>
      {entries.map(([name, value]) => (
        <div key={name}>
          <dt>
            <code>{name}</code>
          </dt>
          <dd>
            <code>{value}</code>
          </dd>
        </div>
      ))}
    </dl>
  );
}

/** One attempt, folded: its outcome in the summary, the request and the response inside. */
function AttemptExchange({ attempt, open }: { attempt: AttemptDetails; open: boolean }) {
  const name = `attempt ${attempt.attempt}`;
  return (
    <details class="attempt" open={open} data-testid="webhook-attempt">
      <summary>
        Attempt {attempt.attempt} · {outcome(attempt)} · {formatTime(attempt.at)}
      </summary>
      <div class="exchange">
        <section aria-label={`Request of ${name}`}>
          <h4>Request</h4>
          {attempt.request ? (
            <>
              <p>
                <code class="request-line">POST {attempt.request.url}</code>
              </p>
              <HeaderList headers={attempt.request.headers} label={`Headers sent, ${name}`} />
              <Preformatted class="exchange-body" label={`Body sent, ${name}`}>
                {readable(attempt.request.body)}
              </Preformatted>
            </>
          ) : (
            <p class="muted">
              {attempt.error?.startsWith('cut off')
                ? 'Not recorded: the instance sending it stopped before the answer came.'
                : attempt.status === null
                  ? 'Nothing was sent.'
                  : 'Not recorded (sent before Attest kept requests).'}
            </p>
          )}
        </section>
        <section aria-label={`Response of ${name}`}>
          <h4>Response</h4>
          {attempt.status === null ? (
            <p>{attempt.error ?? 'No answer.'}</p>
          ) : (
            <>
              <p>
                Status <strong>{attempt.status}</strong> in {attempt.latencyMs} ms
              </p>
              {attempt.responseHeaders ? <HeaderList headers={attempt.responseHeaders} label={`Headers received, ${name}`} /> : null}
              {attempt.response ? (
                <Preformatted class="exchange-body" label={`Body received, ${name}`}>
                  {readable(attempt.response)}
                </Preformatted>
              ) : (
                <p class="muted">No body.</p>
              )}
            </>
          )}
        </section>
      </div>
    </details>
  );
}

/** The attempts of one delivery with what each sent and got back, read when its row opens. */
function DeliveryDetails({ projectId, delivery }: { projectId: string; delivery: Delivery }) {
  const params = { projectId, webhookId: delivery.webhookId, deliveryId: delivery.id };
  // Read again when the log shows another attempt.
  const details = useApi((client) => client.call(v1.webhooks.getWebhookDelivery, { params }), [delivery.id, delivery.attempts.length]);
  if (delivery.attempts.length === 0) return <p class="muted">No attempt yet.</p>;
  if (!details.data) return details.error ? <ErrorBox error={details.error} /> : <Loading />;
  const attempts = details.data.attempts;
  return (
    <div class="attempts">
      {attempts.map((attempt, index) => (
        // The latest attempt opens with its row.
        <AttemptExchange key={attempt.attempt} attempt={attempt} open={index === attempts.length - 1} />
      ))}
    </div>
  );
}

/** Sends a delivery again (same webhook-id and body). */
function Redeliver({ projectId, delivery, onDone }: { projectId: string; delivery: Delivery; onDone: () => void }) {
  const action = useAction();
  const run = async () => {
    const params = { projectId, webhookId: delivery.webhookId, deliveryId: delivery.id };
    if (
      await action.run(
        (client) => client.call(v1.webhooks.redeliverWebhookDelivery, { params }).then(() => true),
        () => 'Queued.',
      )
    )
      onDone();
  };
  return (
    <>
      <button type="button" class="secondary" disabled={action.busy} onClick={run} aria-label={`Redeliver ${delivery.messageId}`}>
        Redeliver
      </button>
      {action.error ? <ErrorBox error={action.error} /> : null}
    </>
  );
}

const COLUMNS = ['Event', 'webhook-id', 'Status', 'Attempts', 'Time'];

function DeliveryRow({
  projectId,
  delivery,
  canRedeliver,
  onChanged,
}: {
  projectId: string;
  delivery: Delivery;
  canRedeliver: boolean;
  onChanged: () => void;
}) {
  const [open, setOpen] = useState(false);
  const last = delivery.attempts.at(-1);
  const detailsId = `delivery-${delivery.id}`;
  return (
    <>
      <tr class={open ? 'open' : undefined} data-testid="delivery-row">
        <td>
          <button
            type="button"
            class="disclosure"
            aria-expanded={open}
            aria-controls={detailsId}
            onClick={() => setOpen(!open)}
            aria-label={`${open ? 'Hide' : 'Show'} the attempts of ${delivery.event} ${delivery.messageId}`}
          >
            <span aria-hidden="true">{open ? '▾' : '▸'}</span> {delivery.event}
          </button>
        </td>
        <td>
          <code>{delivery.messageId}</code>
        </td>
        <td>
          <Badge value={delivery.status} />
          {delivery.nextAttemptAt ? <span class="muted next-attempt"> next {formatTime(delivery.nextAttemptAt)}</span> : null}
        </td>
        <td class="num">
          {delivery.attempts.length}
          {last ? <span class="muted"> · last {outcome(last)}</span> : null}
        </td>
        <td>{formatTime(last?.at ?? delivery.createdAt)}</td>
        <td class="actions">{canRedeliver ? <Redeliver projectId={projectId} delivery={delivery} onDone={onChanged} /> : null}</td>
      </tr>
      {open ? (
        <tr class="delivery-details" id={detailsId}>
          <td colSpan={COLUMNS.length + 1}>
            <DeliveryDetails projectId={projectId} delivery={delivery} />
          </td>
        </tr>
      ) : null}
    </>
  );
}

/** The delivery log as a table the width of the page; a row opens to its attempts' exchanges. */
export function DeliveryLog({
  projectId,
  deliveries,
  error,
  canRedeliver,
  onChanged,
}: {
  projectId: string;
  deliveries: Delivery[] | undefined;
  error: Error | undefined;
  canRedeliver: boolean;
  onChanged: () => void;
}) {
  if (!deliveries) return error ? <ErrorBox error={error} /> : <Loading />;
  return (
    <>
      {error ? <ErrorBox error={error} /> : null}
      {deliveries.length === 0 ? (
        <p class="muted">Nothing sent yet.</p>
      ) : (
        <table class="list deliveries-table" aria-label="Deliveries">
          <thead>
            <tr>
              {COLUMNS.map((header) => (
                <th key={header} scope="col">
                  {header}
                </th>
              ))}
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {deliveries.map((delivery) => (
              <DeliveryRow key={delivery.id} projectId={projectId} delivery={delivery} canRedeliver={canRedeliver} onChanged={onChanged} />
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
