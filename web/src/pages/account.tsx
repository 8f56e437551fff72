import { useState } from 'preact/hooks';
import { v1 } from '../../../src/client/index.ts';
import { useAction } from '../admin/action.ts';
import { useMe } from '../admin/me.ts';
import { ActionStatus } from '../admin/status.tsx';
import '../admin/admin.css';
import { ErrorBox, Loading, Page } from '../components.tsx';
import { Field, FormProblem, problemAt } from '../forms.tsx';
import '../manage.css';

/** The API's rule for a password (`PUT /users/{email}/password`): at least 12 characters. */
const PASSWORD_MIN = 12;

/** `/account`: who you are, and your own password (UI-12). Your API keys are on their own page. */
export function AccountPage() {
  const me = useMe();
  return (
    <Page title="Your account">
      {me.error ? <ErrorBox error={me.error} /> : null}
      {me.data === undefined ? (
        me.error ? null : (
          <Loading />
        )
      ) : (
        <>
          <p>
            Signed in as {me.data.name}{' '}
            <span class="muted">
              ({me.data.email}, {me.data.role})
            </span>
            . Your API keys are on <a href="/keys">API keys</a>.
          </p>
          <PasswordForm email={me.data.email} />
        </>
      )}
    </Page>
  );
}

type PasswordName = 'current' | 'password' | 'repeat';

/** The problem sits beside its field, not in its label: the field keeps its name, and the problem is its description. */
function PasswordField(props: { name: PasswordName; label: string; value: string; set: (v: string) => void; problem: string | undefined }) {
  const { name } = props;
  return (
    <Field label={props.label} problem={props.problem}>
      {({ id, describedBy, invalid }) => (
        <input
          id={id}
          type="password"
          name={name}
          autoComplete={name === 'current' ? 'current-password' : 'new-password'}
          value={props.value}
          required={name !== 'current'}
          minLength={name === 'current' ? undefined : PASSWORD_MIN}
          aria-invalid={invalid || undefined}
          aria-describedby={describedBy}
          onInput={(event) => props.set((event.target as HTMLInputElement).value)}
        />
      )}
    </Field>
  );
}

function PasswordForm({ email }: { email: string }) {
  const action = useAction();
  const [current, setCurrent] = useState('');
  const [password, setPassword] = useState('');
  const [repeat, setRepeat] = useState('');
  const [checked, setChecked] = useState(false);
  // The page checks what the API checks (the length) and that both fields agree; the API has the last word.
  const local: { password?: string; repeat?: string } = {};
  if (password.length > 0 && password.length < PASSWORD_MIN) local.password = `must be at least ${PASSWORD_MIN} characters`;
  if (repeat !== password) local.repeat = 'does not match the new password';
  const shown = {
    current: problemAt(action.error, '/currentPassword'),
    password: (checked ? local.password : undefined) ?? problemAt(action.error, '/password'),
    repeat: checked ? local.repeat : undefined,
  };
  const submit = async (event: Event) => {
    event.preventDefault();
    setChecked(true);
    if (Object.keys(local).length > 0 || password === '') return;
    const done = await action.run(
      // A session confirms with the current password (SEC-2g); an account without one (single sign-on) sends none.
      (client) =>
        client.call(v1.users.setUserPassword, {
          params: { email },
          body: current === '' ? { password } : { password, currentPassword: current },
        }),
      () => 'Password changed. Your other sessions have ended; this one stays signed in.',
    );
    if (done !== undefined) {
      setCurrent('');
      setPassword('');
      setRepeat('');
      setChecked(false);
    }
  };
  const field = (name: PasswordName, label: string, value: string, set: (v: string) => void) => (
    <PasswordField name={name} label={label} value={value} set={set} problem={shown[name]} />
  );
  return (
    <form class="panel stacked-form" onSubmit={submit} aria-labelledby="password-heading" noValidate>
      <h2 id="password-heading">Change your password</h2>
      <p class="muted">
        At least {PASSWORD_MIN} characters. Changing it ends your other sessions (other tabs and browsers); API keys keep working.
      </p>
      {field('current', 'Current password', current, setCurrent)}
      <p class="muted">
        Leave it empty if your account has no password yet (you sign in through single sign-on): then set one within 10 minutes of signing
        in.
      </p>
      {field('password', 'New password', password, setPassword)}
      {field('repeat', 'Repeat the new password', repeat, setRepeat)}
      <button type="submit" disabled={action.busy}>
        Change password
      </button>
      <FormProblem error={action.error} fields={['/password', '/currentPassword']} />
      {action.done ? <ActionStatus state={action} /> : null}
    </form>
  );
}
