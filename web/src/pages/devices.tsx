import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import type { QueryOf } from '../../../src/api/endpoint.ts';
import { v1 } from '../../../src/client/index.ts';
import '../admin/admin.css';
import { ConfirmAction } from '../admin/confirm.tsx';
import { atLeast, useMe } from '../admin/me.ts';
import { Badge, Page } from '../components.tsx';
import { useApi } from '../data.ts';
import { type FilterField, FilterForm, filterValues } from '../filter-form.tsx';
import { formatTime } from '../format.ts';
import { type Column, ListTable, Pager, pageQuery } from '../list-table.tsx';
import { withQuery } from '../url.ts';
import { type Device, DeviceForm } from './device-form.tsx';
import '../manage.css';

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
        <div>
          <a href={`/devices/${encodeURIComponent(device.id)}`}>{device.name}</a>
        </div>
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

/** A manager's Edit and Retire on each device. */
const manageColumnOf = (edit: (device: Device) => void, reload: () => void): Column<Device> => ({
  header: 'Actions',
  hideHeader: true,
  cell: (device) => (
    <span class="confirm">
      <button type="button" class="secondary" aria-label={`Edit ${device.name}`} onClick={() => edit(device)}>
        Edit
      </button>
      <ConfirmAction
        verb="Retire"
        what={device.name}
        done={`Retired ${device.name}.`}
        perform={(client) => client.call(v1.devices.deleteDevice, { params: { deviceId: device.id } })}
        onDone={reload}
      />
    </span>
  ),
});

/**
 * The device lab: every device with its state, filtered by status, platform and label, paged. A
 * manager registers, edits and retires devices here (UI-12); a change shows in the list at once and
 * goes back if the API refuses it.
 */
export function DevicesPage() {
  const { query } = useLocation();
  const filters = filterValues(query, FILTERS);
  const me = useMe();
  const manages = atLeast(me.data?.role, 'manager');
  /** The form open: a new device (`null`) or one being edited. */
  const [editing, setEditing] = useState<Device | null | undefined>();
  const [shown, setShown] = useState<Device | undefined>();
  const devices = useApi(
    // The select fields take only the API's own values, so the filters are the API's query as they stand.
    (client) =>
      client.call(v1.devices.listDevices, { query: { ...pageQuery(query), ...(filters as QueryOf<typeof v1.devices.listDevices>) } }),
    [query.cursor, filters.status, filters.platform, filters.label],
  );
  const filtered = Object.keys(filters).length > 0;
  const rows = devices.data?.items.map((device) => (shown && device.id === shown.id ? shown : device));
  const manageColumn = manageColumnOf(setEditing, devices.reload);
  return (
    <Page
      title="Devices"
      actions={
        manages ? (
          <button type="button" onClick={() => setEditing(null)}>
            New device
          </button>
        ) : null
      }
    >
      {editing !== undefined ? (
        <DeviceForm
          key={editing?.id ?? 'new'}
          device={editing ?? undefined}
          onSaving={setShown}
          onSettled={(saved) => {
            setShown(undefined);
            if (!saved) return;
            setEditing(undefined);
            devices.reload();
          }}
          onCancel={() => setEditing(undefined)}
        />
      ) : null}
      <FilterForm label="Filter devices" fields={FILTERS} />
      <ListTable
        label="Devices"
        rows={rows}
        error={devices.error}
        empty={filtered ? 'No device matches.' : 'No device is registered yet.'}
        columns={manages ? [...COLUMNS, manageColumn] : COLUMNS}
        rowKey={(device) => device.id}
      />
      <Pager nextCursor={devices.data?.nextCursor} first="First page" next="Next page" />
    </Page>
  );
}
