import { useLocation } from 'preact-iso';
import { v1 } from '../../../src/client/index.ts';
import '../admin/admin.css';
import { Badge, ErrorBox, Loading, Page } from '../components.tsx';
import { useApi } from '../data.ts';
import { formatTime } from '../format.ts';
import { withQuery } from '../url.ts';

const STATUSES = ['', 'available', 'busy', 'offline', 'maintenance'] as const;
const PLATFORMS = ['', 'android', 'ios', 'web', 'desktop', 'other'] as const;
const FILTERS = ['status', 'platform', 'label'] as const;
const PAGE_SIZE = 50;

type Status = Exclude<(typeof STATUSES)[number], ''>;
type Platform = Exclude<(typeof PLATFORMS)[number], ''>;

function DeviceFilters({ query, path }: { query: Record<string, string>; path: string }) {
  const { route } = useLocation();
  const submit = (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const changes: Record<string, string | undefined> = { cursor: undefined };
    for (const name of FILTERS) changes[name] = String(form.get(name) ?? '').trim() || undefined;
    route(withQuery(path, query, changes));
  };
  const select = (name: 'status' | 'platform', label: string, options: readonly string[]) => (
    <label>
      {label}
      <select name={name} value={query[name] ?? ''}>
        {options.map((option) => (
          <option key={option} value={option}>
            {option || 'any'}
          </option>
        ))}
      </select>
    </label>
  );
  return (
    <form class="filters" onSubmit={submit} aria-label="Filter devices">
      {select('status', 'Status', STATUSES)}
      {select('platform', 'Platform', PLATFORMS)}
      <label>
        Label
        <input name="label" value={query.label ?? ''} placeholder="phone" />
      </label>
      <button type="submit">Filter</button>
      <a href={path}>Clear</a>
    </form>
  );
}

/** The device lab: every device with its state, filtered by status, platform and label, paged. */
export function DevicesPage() {
  const { query, path } = useLocation();
  const status = STATUSES.includes(query.status as Status) ? (query.status as Status) : undefined;
  const platform = PLATFORMS.includes(query.platform as Platform) ? (query.platform as Platform) : undefined;
  const label = query.label || undefined;
  const devices = useApi(
    (client) =>
      client.call(v1.devices.listDevices, {
        query: {
          limit: PAGE_SIZE,
          ...(query.cursor ? { cursor: query.cursor } : {}),
          ...(status ? { status } : {}),
          ...(platform ? { platform } : {}),
          ...(label ? { label } : {}),
        },
      }),
    [query.cursor, status, platform, label],
  );
  const filtered = Boolean(status || platform || label);
  return (
    <Page title="Devices">
      <DeviceFilters query={query} path={path} />
      {devices.error ? <ErrorBox error={devices.error} /> : null}
      {devices.data === undefined ? (
        devices.error ? null : (
          <Loading />
        )
      ) : devices.data.items.length === 0 ? (
        <p class="muted">{filtered ? 'No device matches.' : 'No device is registered yet.'}</p>
      ) : (
        <table class="list" aria-label="Devices">
          <thead>
            <tr>
              <th scope="col">Device</th>
              <th scope="col">Status</th>
              <th scope="col">Platform</th>
              <th scope="col">Model</th>
              <th scope="col">OS</th>
              <th scope="col">Labels</th>
              <th scope="col">Last seen</th>
            </tr>
          </thead>
          <tbody>
            {devices.data.items.map((device) => (
              <tr key={device.id}>
                <td>
                  <div>{device.name}</div>
                  <code class="muted">{device.id}</code>
                </td>
                <td>
                  <Badge value={device.status} />
                </td>
                <td>{device.platform}</td>
                <td>{[device.manufacturer, device.model].filter(Boolean).join(' ') || '—'}</td>
                <td>{device.osVersion ?? '—'}</td>
                <td>
                  <ul class="chips" aria-label={`Labels of ${device.name}`}>
                    {device.labels.map((name) => (
                      <li key={name}>
                        <a class="chip" href={withQuery(path, {}, { label: name })} title={`Devices labelled ${name}`}>
                          {name}
                        </a>
                      </li>
                    ))}
                  </ul>
                </td>
                <td>{formatTime(device.lastSeenAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <nav class="pager" aria-label="Pages">
        {query.cursor ? <a href={withQuery(path, query, { cursor: undefined })}>First page</a> : null}
        {devices.data?.nextCursor ? <a href={withQuery(path, query, { cursor: devices.data.nextCursor })}>Next page</a> : null}
      </nav>
    </Page>
  );
}
