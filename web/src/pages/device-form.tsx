import { useState } from 'preact/hooks';
import type { Static } from 'typebox';
import { v1 } from '../../../src/client/index.ts';
import { useAction } from '../admin/action.ts';
import { fieldErrors } from '../field-errors.ts';

export type Device = Static<typeof v1.devices.Device>;

const PLATFORMS = ['android', 'ios', 'web', 'desktop', 'other'] as const;
const STATUSES = ['available', 'busy', 'offline', 'maintenance'] as const;
type Platform = (typeof PLATFORMS)[number];
type Status = (typeof STATUSES)[number];

interface Draft {
  id: string;
  name: string;
  platform: Platform;
  status: Status;
  osVersion: string;
  model: string;
  manufacturer: string;
  labels: string;
}

const draftOf = (device: Device | undefined): Draft => ({
  id: device?.id ?? '',
  name: device?.name ?? '',
  platform: device?.platform ?? 'android',
  status: device?.status ?? 'available',
  osVersion: device?.osVersion ?? '',
  model: device?.model ?? '',
  manufacturer: device?.manufacturer ?? '',
  labels: device?.labels.join(', ') ?? '',
});

/** Labels as typed: split on commas and spaces, empty ones dropped (the API refuses whitespace inside a label). */
const labelsOf = (text: string) => [...new Set(text.split(/[\s,]+/).filter(Boolean))];
const orNull = (text: string) => (text.trim() === '' ? null : text.trim());

/**
 * A device registered (`POST /device/devices`) or changed (`PATCH /device/devices/{deviceId}`),
 * manager role. The API checks every field; its problems show beside the fields they name.
 * `onSaving` shows the change in the list at once; `onSettled` hears whether it held.
 */
export function DeviceForm({
  device,
  onSaving,
  onSettled,
  onCancel,
}: {
  device: Device | undefined;
  onSaving: (device: Device) => void;
  onSettled: (saved: Device | undefined) => void;
  onCancel: () => void;
}) {
  const [draft, setDraft] = useState<Draft>(() => draftOf(device));
  const action = useAction();
  const problems = fieldErrors(action.error);
  const set = (name: keyof Draft) => (event: Event) =>
    setDraft((d) => ({ ...d, [name]: (event.target as HTMLInputElement | HTMLSelectElement).value }));
  const submit = async (event: Event) => {
    event.preventDefault();
    const fields = {
      name: draft.name.trim(),
      platform: draft.platform,
      status: draft.status,
      osVersion: orNull(draft.osVersion),
      model: orNull(draft.model),
      manufacturer: orNull(draft.manufacturer),
      labels: labelsOf(draft.labels),
    };
    if (device) onSaving({ ...device, ...fields });
    const saved = await action.run(
      (client) =>
        device
          ? client.call(v1.devices.updateDevice, { params: { deviceId: device.id }, body: fields })
          : client.call(v1.devices.registerDevice, { body: { id: draft.id.trim(), ...fields } }),
      (d) => `Saved ${d.name}.`,
    );
    onSettled(saved);
  };
  const field = (name: keyof Draft, label: string, control: preact.JSX.Element) => (
    <div class="field">
      <label for={`device-${name}`}>{label}</label>
      {control}
      {problems[name] ? (
        <span class="field-error" id={`device-${name}-error`}>
          {problems[name]}
        </span>
      ) : null}
    </div>
  );
  const text = (name: keyof Draft, required = false) => (
    <input
      id={`device-${name}`}
      name={name}
      value={draft[name]}
      required={required}
      aria-invalid={problems[name] ? true : undefined}
      aria-describedby={problems[name] ? `device-${name}-error` : undefined}
      onInput={set(name)}
    />
  );
  const select = (name: 'platform' | 'status', options: readonly string[]) => (
    <select id={`device-${name}`} name={name} value={draft[name]} onChange={set(name)}>
      {options.map((o) => (
        <option key={o} value={o}>
          {o}
        </option>
      ))}
    </select>
  );
  return (
    <form class="panel device-form" onSubmit={submit} aria-labelledby="device-form-heading" noValidate>
      <h2 id="device-form-heading" class="device-form-heading">
        {device ? `Edit ${device.name}` : 'New device'}
      </h2>
      {device ? null : field('id', 'Device id (serial, UDID)', text('id', true))}
      {field('name', 'Name', text('name', true))}
      {field('platform', 'Platform', select('platform', PLATFORMS))}
      {field('status', 'Status', select('status', STATUSES))}
      {field('osVersion', 'OS version', text('osVersion'))}
      {field('model', 'Model', text('model'))}
      {field('manufacturer', 'Manufacturer', text('manufacturer'))}
      {field('labels', 'Labels (comma-separated)', text('labels'))}
      <div class="actions">
        <button type="submit" disabled={action.busy}>
          {device ? 'Save device' : 'Register device'}
        </button>
        <button type="button" class="secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
      {problems.form ? (
        <p class="error" role="alert">
          {problems.form}
        </p>
      ) : null}
    </form>
  );
}
