import { useLocation } from 'preact-iso';
import type { Static } from 'typebox';
import type { QueryOf } from '../../../src/api/endpoint.ts';
import { v1 } from '../../../src/client/index.ts';
import '../admin/admin.css';
import { Badge, Page } from '../components.tsx';
import { useApi } from '../data.ts';
import { type FilterField, FilterForm, filterValues } from '../filter-form.tsx';
import { formatTime } from '../format.ts';
import { type Column, ListTable, Pager, pageQuery } from '../list-table.tsx';
import { withQuery } from '../url.ts';

type Device = Static<typeof v1.devices.Device>;

const FILTERS = [
  { name: 'status', label: 'Status', options: ['available', 'busy', 'offline', 'maintenance'] },
  { name: 'platform', label: 'Platform', options: ['android', 'ios', 'web', 'desktop', 'other'] },
  { name: 'label', label: 'Label', placeholder: 'phone' },
] as const satisfies readonly FilterField[];

/** A device's labels, each a link to the devices that carry it. */
function LabelChips({ device }: { device: Device }) {
  const { path } = useLocation();
  return (
    <ul class="chips" aria-label={`Labels of ${device.name}`}>
      {device.labels.map((name) => (
        <li key={name}>
          <a class="chip" href={withQuery(path, {}, { label: name })} title={`Devices labelled ${name}`}>
            {name}
          </a>
        </li>
      ))}
    </ul>
  );
}

const COLUMNS: Column<Device>[] = [
  {
    header: 'Device',
    cell: (device) => (
      <>
        <div>{device.name}</div>
        <code class="muted">{device.id}</code>
      </>
    ),
  },
  { header: 'Status', cell: (device) => <Badge value={device.status} /> },
  { header: 'Platform', cell: (device) => device.platform },
  { header: 'Model', cell: (device) => [device.manufacturer, device.model].filter(Boolean).join(' ') || '—' },
  { header: 'OS', cell: (device) => device.osVersion ?? '—' },
  { header: 'Labels', cell: (device) => <LabelChips device={device} /> },
  { header: 'Last seen', cell: (device) => formatTime(device.lastSeenAt) },
];

/** The device lab: every device with its state, filtered by status, platform and label, paged. */
export function DevicesPage() {
  const { query } = useLocation();
  const filters = filterValues(query, FILTERS);
  const devices = useApi(
    // The select fields take only the API's own values, so the filters are the API's query as they stand.
    (client) =>
      client.call(v1.devices.listDevices, { query: { ...pageQuery(query), ...(filters as QueryOf<typeof v1.devices.listDevices>) } }),
    [query.cursor, filters.status, filters.platform, filters.label],
  );
  const filtered = Object.keys(filters).length > 0;
  return (
    <Page title="Devices">
      <FilterForm label="Filter devices" fields={FILTERS} />
      <ListTable
        label="Devices"
        rows={devices.data?.items}
        error={devices.error}
        empty={filtered ? 'No device matches.' : 'No device is registered yet.'}
        columns={COLUMNS}
        rowKey={(device) => device.id}
      />
      <Pager nextCursor={devices.data?.nextCursor} first="First page" next="Next page" />
    </Page>
  );
}
