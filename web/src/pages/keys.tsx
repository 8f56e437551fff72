import { ApiKeysPanel } from '../admin/api-keys.tsx';
import { useMe } from '../admin/me.ts';
import '../admin/admin.css';
import { ErrorBox, Loading, Page } from '../components.tsx';

/** The signed-in user's own API keys: for CI, reporters and scripts. */
export function KeysPage() {
  const me = useMe();
  return (
    <Page title="API keys">
      <p class="muted">
        Keys for CI jobs, reporters and scripts, sent as the <code>service.api-token</code> header. A key acts with your role (or as a
        viewer, with the read scope) and stops working when it expires or is revoked.
      </p>
      {me.error ? <ErrorBox error={me.error} /> : null}
      {me.data === undefined ? (
        me.error ? null : (
          <Loading />
        )
      ) : (
        <section class="panel" aria-label="Your API keys">
          <h2>
            Keys of {me.data.name} <span class="muted">({me.data.email})</span>
          </h2>
          <ApiKeysPanel email={me.data.email} currentKeyId={me.data.key.id} />
        </section>
      )}
    </Page>
  );
}
