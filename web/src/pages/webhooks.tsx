import { useState } from 'preact/hooks';
import type { Static } from 'typebox';
import { WEBHOOK_EVENTS } from '../../../src/api/v1/webhooks.ts';
import { v1 } from '../../../src/client/index.ts';
import { useAction } from '../admin/action.ts';
import '../admin/admin.css';
import { ConfirmAction } from '../admin/confirm.tsx';
import { SettingsForm } from '../admin/settings-form.tsx';
import { DoneNotice } from '../admin/status.tsx';
import { Badge, ErrorBox, Page, PageWaiting } from '../components.tsx';
import { type Loaded, useApi } from '../data.ts';
import { bodyField, FieldProblemNote, problemAt, SelectField, TextField } from '../forms.tsx';
import { ListTable } from '../list-table.tsx';
import { DeliveryLog } from './webhook-deliveries.tsx';

// Outgoing webhooks of a project (HOOK-1, HOOK-6, HOOK-9): the list with adding, switching on and
// off and deleting; a webhook's page with its settings, the test button and the delivery log
// (webhook-deliveries.tsx).

type Webhook = Static<typeof v1.webhooks.Webhook>;
type Created = Static<typeof v1.webhooks.CreatedWebhook>;
type EventType = (typeof WEBHOOK_EVENTS)[number];
// The URL fields take no constraints from the contract: its pattern (`^https?://`) checks a prefix,
// and a browser's pattern attribute must match the whole value. The API's 400 names the field.
const CREATE = v1.webhooks.createWebhook;
const UPDATE = v1.webhooks.updateWebhook;

const KINDS = [
  { value: 'standard', label: 'Standard Webhooks (signed JSON)' },
  { value: 'slack', label: 'Slack incoming webhook' },
  { value: 'teams', label: 'Microsoft Teams incoming webhook' },
] as const;

/** The events as checkboxes; at least one must stay ticked (the API says so otherwise). */
function EventBoxes({ events, onChange, problem }: { events: EventType[]; onChange: (e: EventType[]) => void; problem?: string }) {
  return (
    <fieldset class="field">
      <legend>Events</legend>
      {WEBHOOK_EVENTS.map((event) => (
        <label key={event} class="checkbox">
          <input
            type="checkbox"
            name="events"
            value={event}
            checked={events.includes(event)}
            onChange={(e) => onChange(e.currentTarget.checked ? [...events, event] : events.filter((x) => x !== event))}
          />
          <code>{event}</code>
        </label>
      ))}
      <FieldProblemNote problem={problem} />
    </fieldset>
  );
}

/** The signing secret of a webhook just added: shown this once. */
function NewSecret({ created, onDone }: { created: Created; onDone: () => void }) {
  return (
    <div class="secret-box" role="status">
      <p>
        <strong>Webhook “{created.name}” added.</strong> Copy its signing secret now: it will not be shown again. Receivers verify{' '}
        <code>webhook-signature</code> with it.
      </p>
      <div class="secret-row">
        <code data-testid="new-webhook-secret">{created.secret}</code>
        <button type="button" class="secondary" onClick={onDone}>
          Done
        </button>
      </div>
    </div>
  );
}

/** A webhook's name and URL fields, each with the API's problem at its pointer. */
function NameAndUrl({
  value,
  onChange,
  nameSchema,
  error,
  urlHint,
}: {
  value: { name: string; url: string };
  onChange: (fields: { name: string } | { url: string }) => void;
  nameSchema: ReturnType<typeof bodyField>;
  error: Error | undefined;
  urlHint?: string;
}) {
  return (
    <>
      <TextField
        label="Name"
        name="name"
        value={value.name}
        onInput={(name) => onChange({ name })}
        schema={nameSchema}
        problem={problemAt(error, '/name')}
        required
      />
      <TextField
        label="URL"
        name="url"
        type="url"
        value={value.url}
        onInput={(url) => onChange({ url })}
        problem={problemAt(error, '/url')}
        hint={urlHint}
        required
      />
    </>
  );
}

function CreateForm({ projectId, onCreated }: { projectId: string; onCreated: (c: Created) => void }) {
  const action = useAction();
  const [form, setForm] = useState({ name: '', url: '', kind: 'standard' as Webhook['kind'], events: ['job.completed'] as EventType[] });
  const submit = async () => {
    const created = await action.run(
      (client) => client.call(CREATE, { params: { projectId }, body: { ...form, name: form.name.trim(), url: form.url.trim() } }),
      (c) => `Added ${c.name}.`,
    );
    if (created) {
      setForm({ ...form, name: '', url: '' });
      onCreated(created);
    }
  };
  return (
    <SettingsForm
      title="Add a webhook"
      onSubmit={submit}
      action={{ busy: action.busy, error: action.error }}
      fields={['/name', '/url', '/kind', '/events']}
      submit="Add webhook"
    >
      <NameAndUrl
        value={form}
        onChange={(fields) => setForm({ ...form, ...fields })}
        nameSchema={bodyField(CREATE, 'name')}
        error={action.error}
        urlHint="Loopback and private addresses are refused unless the instance allows them."
      />
      <SelectField
        label="Kind"
        name="kind"
        value={form.kind}
        options={KINDS}
        onChange={(kind) => setForm({ ...form, kind: kind as Webhook['kind'] })}
        problem={problemAt(action.error, '/kind')}
      />
      <EventBoxes events={form.events} onChange={(events) => setForm({ ...form, events })} problem={problemAt(action.error, '/events')} />
    </SettingsForm>
  );
}

/** Switches a webhook on or off. */
function EnableToggle({ projectId, webhook, onSaved }: { projectId: string; webhook: Webhook; onSaved: () => void }) {
  const action = useAction();
  const toggle = async () => {
    const saved = await action.run(
      (client) => client.call(UPDATE, { params: { projectId, webhookId: webhook.id }, body: { enabled: !webhook.enabled } }),
      (w) => (w.enabled ? `Switched ${w.name} on.` : `Switched ${w.name} off.`),
    );
    if (saved) onSaved();
  };
  return (
    <>
      <button
        type="button"
        class="secondary"
        disabled={action.busy}
        onClick={toggle}
        aria-label={`${webhook.enabled ? 'Disable' : 'Enable'} ${webhook.name}`}
      >
        {webhook.enabled ? 'Disable' : 'Enable'}
      </button>
      {action.error ? <ErrorBox error={action.error} /> : null}
    </>
  );
}

const state = (webhook: Webhook) => (webhook.enabled ? 'enabled' : 'disabled');

/** The project's webhooks, each with its switch and its Delete. */
function WebhookList({ projectKey, projectId, hooks }: { projectKey: string; projectId: string; hooks: Loaded<{ items: Webhook[] }> }) {
  return (
    <section class="panel" aria-labelledby="webhooks-heading">
      <h2 id="webhooks-heading">Webhooks</h2>
      <ListTable
        label="Webhooks"
        rows={hooks.data?.items}
        error={hooks.error}
        rowKey={(w) => w.id}
        empty="No webhook yet."
        columns={[
          { header: 'Name', cell: (w) => w.name, href: (w) => `/projects/${projectKey}/webhooks/${w.id}` },
          { header: 'Kind', cell: (w) => w.kind },
          { header: 'Events', cell: (w) => w.events.join(', ') },
          { header: 'State', cell: (w) => <Badge value={state(w)} label={w.disabledReason ?? undefined} /> },
          {
            header: 'Actions',
            hideHeader: true,
            cell: (w) => (
              <>
                <EnableToggle projectId={projectId} webhook={w} onSaved={hooks.reload} />{' '}
                <ConfirmAction
                  verb="Delete"
                  what={w.name}
                  done={`Deleted ${w.name}.`}
                  perform={(client) => client.call(v1.webhooks.deleteWebhook, { params: { projectId, webhookId: w.id } })}
                  onDone={hooks.reload}
                />
              </>
            ),
          },
        ]}
      />
    </section>
  );
}

/** A project's webhooks (managers and admins). */
export function WebhooksPage({ projectKey }: { projectKey: string }) {
  const project = useApi((client) => client.call(v1.projects.getProject, { params: { projectId: projectKey } }), [projectKey]);
  const hooks = useApi((client) => client.call(v1.webhooks.listWebhooks, { params: { projectId: projectKey } }), [projectKey]);
  const [created, setCreated] = useState<Created | undefined>();
  if (!project.data) return <PageWaiting title="Webhooks" error={project.error} />;
  const projectId = project.data.id;
  return (
    <Page
      title={`${project.data.key} · Webhooks`}
      actions={
        <a class="button secondary" href={`/projects/${project.data.key}/settings`}>
          Settings
        </a>
      }
    >
      <p class="muted">
        Attest POSTs each event a webhook subscribes to, signed as the Standard Webhooks specification says, and retries failures for about
        a day; Slack and Teams webhooks get a formatted message.
      </p>
      {created ? <NewSecret created={created} onDone={() => setCreated(undefined)} /> : null}
      <div class="settings">
        <WebhookList projectKey={projectKey} projectId={projectId} hooks={hooks} />
        <CreateForm
          projectId={projectId}
          onCreated={(c) => {
            setCreated(c);
            hooks.reload();
          }}
        />
      </div>
    </Page>
  );
}

function EditForm({ projectId, webhook, onSaved }: { projectId: string; webhook: Webhook; onSaved: () => void }) {
  const action = useAction();
  const [form, setForm] = useState({ name: webhook.name, url: webhook.url, events: webhook.events as EventType[] });
  const submit = async () => {
    const saved = await action.run(
      (client) => client.call(UPDATE, { params: { projectId, webhookId: webhook.id }, body: form }),
      () => 'Saved.',
    );
    if (saved) onSaved();
  };
  return (
    <SettingsForm
      title="Webhook settings"
      heading="Settings"
      onSubmit={submit}
      action={action}
      fields={['/name', '/url', '/events']}
      submit="Save webhook"
    >
      <NameAndUrl
        value={form}
        onChange={(fields) => setForm({ ...form, ...fields })}
        nameSchema={bodyField(UPDATE, 'name')}
        error={action.error}
      />
      <EventBoxes events={form.events} onChange={(events) => setForm({ ...form, events })} problem={problemAt(action.error, '/events')} />
    </SettingsForm>
  );
}

/** One webhook: its settings, the test button and its delivery log. */
export function WebhookPage({ projectKey, webhookId }: { projectKey: string; webhookId: string }) {
  const params = { projectId: projectKey, webhookId };
  const hook = useApi((client) => client.call(v1.webhooks.getWebhook, { params }), [projectKey, webhookId]);
  const log = useApi((client) => client.call(v1.webhooks.listWebhookDeliveries, { params }), [projectKey, webhookId], {
    refreshMs: 3000,
    refreshWhile: (page) => page.items.some((d) => d.status === 'pending'),
  });
  const test = useAction();
  if (!hook.data) return <PageWaiting title="Webhook" error={hook.error} />;
  const webhook = hook.data;
  const sendTest = async () => {
    if (
      await test.run(
        (client) => client.call(v1.webhooks.testWebhook, { params }).then(() => true),
        () => 'Test event queued.',
      )
    )
      log.reload();
  };
  return (
    <Page
      title={`${projectKey} · Webhook ${webhook.name}`}
      actions={
        <a class="button secondary" href={`/projects/${projectKey}/webhooks`}>
          Webhooks
        </a>
      }
    >
      <p>
        <Badge value={state(webhook)} /> <code>{webhook.url}</code> ({webhook.kind})
      </p>
      {webhook.disabledReason ? <p role="status">{webhook.disabledReason}</p> : null}
      <div class="form-actions">
        <button type="button" disabled={test.busy || !webhook.enabled} onClick={sendTest}>
          Send test event
        </button>
        <DoneNotice done={test.done} />
      </div>
      {test.error ? <ErrorBox error={test.error} /> : null}
      {/* The log takes the page's width (a row per delivery, its attempts opened under it); the form keeps a form's. */}
      <section class="panel deliveries" aria-labelledby="deliveries-heading">
        <h2 id="deliveries-heading">Deliveries</h2>
        <DeliveryLog
          projectId={webhook.projectId}
          deliveries={log.data?.items}
          error={log.error}
          canRedeliver={webhook.enabled}
          onChanged={log.reload}
        />
      </section>
      <div class="settings">
        <EditForm projectId={webhook.projectId} webhook={webhook} onSaved={hook.reload} />
      </div>
    </Page>
  );
}
