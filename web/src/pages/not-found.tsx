import { Page } from '../components.tsx';

export function NotFoundPage() {
  return (
    <Page title="Not found">
      <p>
        There is no page at this address. <a href="/">Go to the projects</a>.
      </p>
    </Page>
  );
}
