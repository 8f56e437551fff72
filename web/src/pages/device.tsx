import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { v1 } from '../../../src/client/index.ts';
import '../admin/admin.css';
import { ConfirmAction } from '../admin/confirm.tsx';
import { atLeast, useMe } from '../admin/me.ts';
import { Badge, Page, PageWaiting } from '../components.tsx';
import { useApi } from '../data.ts';
import { Fact } from '../facts.tsx';
import { formatTime } from '../format.ts';
import { type Device, DeviceForm } from './device-form.tsx';
import '../manage.css';

/**
 * One device of the lab (`GET /device/devices/{deviceId}`), linked from the devices list by its
 * name: what it is, its state and labels, when it was last seen. A manager edits it here (the change
 * shows at once and goes back if the API refuses) or retires it, then is back at the lab (UI-12).
 */
export function DevicePage({ deviceId }: { deviceId: string }) {
  const { route } = useLocation();
  const me = useMe();
  const manages = atLeast(me.data?.role, 'manager');
  const device = useApi((client) => client.call(v1.devices.getDevice, { params: { deviceId } }), [deviceId]);
  const [editing, setEditing] = useState(false);
  const [shown, setShown] = useState<Device | undefined>();
  if (!device.data) return <PageWaiting title="Device" error={device.error} />;
  const d = shown ?? device.data;
  return (
    <Page
      title={d.name}
      actions={
        <>
          <a href="/devices">All devices</a>
          {manages ? (
            <span class="confirm">
              <button type="button" class="secondary" onClick={() => setEditing(true)} disabled={editing}>
                Edit
              </button>
              <ConfirmAction
                verb="Retire"
                what={d.name}
                done={`Retired ${d.name}.`}
                perform={(client) => client.call(v1.devices.deleteDevice, { params: { deviceId: d.id } })}
                onDone={() => route('/devices')}
              />
            </span>
          ) : null}
        </>
      }
    >
      {editing ? (
        <DeviceForm
          device={device.data}
          onSaving={setShown}
          onSettled={(saved) => {
            setShown(undefined);
            if (!saved) return;
            setEditing(false);
            device.reload();
          }}
          onCancel={() => setEditing(false)}
        />
      ) : null}
      <DeviceFacts device={d} />
    </Page>
  );
}

/** What the device is, its state and labels (each a link to the devices with it), and its times. */
function DeviceFacts({ device: d }: { device: Device }) {
  return (
    <div class="panel">
      <dl class="facts" aria-label="The device">
        <Fact term="Id">
          <code>{d.id}</code>
        </Fact>
        <Fact term="Status">
          <Badge value={d.status} />
        </Fact>
        <Fact term="Platform">{d.platform}</Fact>
        <Fact term="Model">{[d.manufacturer, d.model].filter(Boolean).join(' ') || '—'}</Fact>
        <Fact term="OS">{d.osVersion ?? '—'}</Fact>
        <Fact term="Labels">
          {d.labels.length === 0 ? (
            '—'
          ) : (
            <ul class="chips" aria-label={`Labels of ${d.name}`}>
              {d.labels.map((name) => (
                <li key={name}>
                  <a class="chip" href={`/devices?label=${encodeURIComponent(name)}`} title={`Devices labelled ${name}`}>
                    {name}
                  </a>
                </li>
              ))}
            </ul>
          )}
        </Fact>
        <Fact term="Last seen">{formatTime(d.lastSeenAt)}</Fact>
        <Fact term="Registered">{formatTime(d.createdAt)}</Fact>
        <Fact term="Changed">{formatTime(d.updatedAt)}</Fact>
      </dl>
    </div>
  );
}
