import { useState } from 'preact/hooks';
import type { Static } from 'typebox';
import type { CreatedApiKey } from '../../../src/api/v1/users.ts';
import { v1 } from '../../../src/client/index.ts';
import { Badge, ErrorBox, LabelledInput } from '../components.tsx';
import { useApi } from '../data.ts';
import { formatTime } from '../format.ts';
import { type Column, ListTable } from '../list-table.tsx';
import { useAction } from './action.ts';
import { ConfirmAction } from './confirm.tsx';

type Created = Static<typeof CreatedApiKey>;
type ApiKey = Static<typeof v1.users.ApiKey>;

/** The secret of a key just created: shown this once, with a Copy button. */
function NewKeySecret({ created, onDone }: { created: Created; onDone: () => void }) {
  const [copied, setCopied] = useState<'yes' | 'failed' | undefined>();
  const copy = () =>
    navigator.clipboard.writeText(created.key).then(
      () => setCopied('yes'),
      () => setCopied('failed'),
    );
  return (
    <div class="secret-box" role="status">
      <p>
        <strong>Key “{created.name}” created.</strong> Copy the secret now: it will not be shown again, since only its digest is stored.
      </p>
      <div class="secret-row">
        <code data-testid="new-key-secret">{created.key}</code>
        <button type="button" onClick={copy}>
          Copy
        </button>
        <button type="button" class="secondary" onClick={onDone}>
          Done
        </button>
      </div>
      {copied === 'yes' ? <p class="muted">Copied to the clipboard.</p> : null}
      {copied === 'failed' ? <p class="muted">The browser refused the clipboard; select the key and copy it by hand.</p> : null}
    </div>
  );
}

/**
 * An expiry date (the end of that day, in the browser's zone) as the API's time; without one the
 * field is left out and the server picks its default lifetime (ATTEST_KEY_DEFAULT_DAYS).
 */
const expiryOf = (date: string) => (date ? { expiresAt: new Date(`${date}T23:59:59`).toISOString() } : {});

/** Today in the browser's zone, as a date input's value. */
function today(): string {
  const now = new Date();
  return `${now.getFullYear()}-${String(now.getMonth() + 1).padStart(2, '0')}-${String(now.getDate()).padStart(2, '0')}`;
}

/**
 * The page signs in with a web session, and the server makes a session confirm a new key with the
 * signed-in user's own password ("sudo mode", SEC-2f): a key outlives the session that made it.
 * The password is kept only until the key is created.
 */
function CreateKeyForm({ email, onCreated }: { email: string; onCreated: (key: Created) => void }) {
  const action = useAction();
  const [name, setName] = useState('');
  const [expires, setExpires] = useState('');
  const [scope, setScope] = useState<'full' | 'read'>('full');
  const [password, setPassword] = useState('');
  const submit = async (event: Event) => {
    event.preventDefault();
    const created = await action.run(
      (client) =>
        client.call(v1.users.createApiKey, {
          params: { email },
          body: { name: name.trim(), scope, ...expiryOf(expires), password },
        }),
      (key) => `Created ${key.name}.`,
    );
    if (created) {
      setName('');
      setExpires('');
      setPassword('');
      onCreated(created);
    }
  };
  return (
    <form class="inline-form" onSubmit={submit} aria-label="Create an API key">
      <label>
        Name
        <input name="name" required maxLength={256} value={name} onInput={(e) => setName(e.currentTarget.value)} placeholder="CI on main" />
      </label>
      <label>
        Expires (empty: the server's default)
        <input name="expiresAt" type="date" min={today()} value={expires} onInput={(e) => setExpires(e.currentTarget.value)} />
      </label>
      <label>
        Scope
        <select name="scope" value={scope} onChange={(e) => setScope(e.currentTarget.value as 'full' | 'read')}>
          <option value="full">full (your role)</option>
          <option value="read">read (viewer)</option>
        </select>
      </label>
      <LabelledInput
        label="Your password (to confirm: a key outlives this session)"
        name="password"
        type="password"
        autoComplete="current-password"
        value={password}
        onInput={setPassword}
      />
      <button type="submit" disabled={action.busy || name.trim() === '' || password === ''}>
        Create key
      </button>
      {action.error ? <ErrorBox error={action.error} /> : null}
    </form>
  );
}

/** Revoking asks twice, in the page (no browser dialog). A refusal stays beside the key. */
function RevokeButton({
  email,
  keyId,
  name,
  onRevoked,
}: {
  email: string;
  keyId: string;
  name: string;
  onRevoked: (name: string) => void;
}) {
  return (
    <ConfirmAction
      verb="Revoke"
      done={`Revoked ${name}.`}
      what={name}
      perform={(client) => client.call(v1.users.revokeApiKey, { params: { email, keyId } })}
      onDone={() => onRevoked(name)}
    />
  );
}

/** The keys' columns; the last revokes a key, or says why this page does not. */
const keyColumns = (email: string, currentKeyId: string | undefined, onRevoked: (name: string) => void): Column<ApiKey>[] => [
  {
    header: 'Name',
    cell: (key) => (
      <>
        {key.name}
        {key.id === currentKeyId ? <span class="muted"> (this session)</span> : null}
      </>
    ),
  },
  { header: 'Key', cell: (key) => <code>{key.hint}</code> },
  { header: 'Kind', cell: (key) => `${key.format}, ${key.scope}` },
  { header: 'Created', cell: (key) => formatTime(key.createdAt) },
  { header: 'Expires', cell: (key) => (key.expiresAt ? formatTime(key.expiresAt) : 'never') },
  { header: 'Last used', cell: (key) => formatTime(key.lastUsedAt) },
  {
    header: 'Actions',
    hideHeader: true,
    cell: (key) =>
      key.revokedAt ? (
        <span title={formatTime(key.revokedAt)}>
          <Badge value="revoked" />
        </span>
      ) : key.id === currentKeyId ? (
        <span class="muted">log out to end it</span>
      ) : (
        <RevokeButton email={email} keyId={key.id} name={key.name} onRevoked={onRevoked} />
      ),
  },
];

/**
 * A user's API keys: the list (without secrets), a form to create one whose secret is shown once,
 * and revoking. `currentKeyId` is the key this page itself signed in with, which is not revoked here
 * (logging out does that).
 */
export function ApiKeysPanel({ email, currentKeyId }: { email: string; currentKeyId?: string }) {
  const [includeRevoked, setIncludeRevoked] = useState(false);
  const [created, setCreated] = useState<Created | undefined>();
  const [notice, setNotice] = useState<string | undefined>();
  const keys = useApi(
    (client) => client.call(v1.users.listApiKeys, { params: { email }, query: { limit: 200, includeRevoked } }),
    [email, includeRevoked],
  );
  return (
    <div class="api-keys">
      {created ? <NewKeySecret created={created} onDone={() => setCreated(undefined)} /> : null}
      <CreateKeyForm
        email={email}
        onCreated={(key) => {
          setCreated(key);
          setNotice(undefined);
          keys.reload();
        }}
      />
      {notice ? (
        <p class="notice" role="status">
          {notice}
        </p>
      ) : null}
      <label class="checkbox">
        <input type="checkbox" checked={includeRevoked} onChange={(e) => setIncludeRevoked(e.currentTarget.checked)} />
        Show revoked keys
      </label>
      <ListTable
        label={`API keys of ${email}`}
        rows={keys.data?.items}
        error={keys.error}
        empty="No API key."
        columns={keyColumns(email, currentKeyId, (name) => {
          setNotice(`Revoked ${name}: it stops working on its next request.`);
          keys.reload();
        })}
        rowKey={(key) => key.id}
      />
    </div>
  );
}
