import { useState } from 'preact/hooks';
import type { Static } from 'typebox';
import { v1 } from '../../../src/client/index.ts';
import { useAction } from '../admin/action.ts';
import { Field, FormProblem, problemAt } from '../forms.tsx';

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

/** The pointers the form shows beside its fields; a problem elsewhere shows under the form. */
const DRAFT_FIELDS = ['/id', '/name', '/platform', '/status', '/osVersion', '/model', '/manufacturer', '/labels'];

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

/** Holds the draft and saves it: an update when `device` is given, a registration otherwise. */
function useDeviceSave(device: Device | undefined, onSaving: (device: Device) => void, onSettled: (saved: Device | undefined) => void) {
  const [draft, setDraft] = useState<Draft>(() => draftOf(device));
  const action = useAction();
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
  return { draft, set, submit, action };
}

type Control = (name: keyof Draft, ids: { id: string; describedBy: string | undefined; invalid: boolean }) => preact.JSX.Element;

/** The two kinds of control the form uses, each bound to one field of the draft. */
function controlsOf(draft: Draft, set: (name: keyof Draft) => (event: Event) => void) {
  const text =
    (required = false): Control =>
    (name, { id, describedBy, invalid }) => (
      <input
        id={id}
        name={name}
        value={draft[name]}
        required={required}
        aria-invalid={invalid || undefined}
        aria-describedby={describedBy}
        onInput={set(name)}
      />
    );
  const select =
    (options: readonly string[]): Control =>
    (name, { id, describedBy }) => (
      <select id={id} name={name} value={draft[name]} aria-describedby={describedBy} onChange={set(name)}>
        {options.map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
    );
  return { text, select };
}

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
  const { draft, set, submit, action } = useDeviceSave(device, onSaving, onSettled);
  const { text, select } = controlsOf(draft, set);
  /** A field with the API's problem at its pointer (`/labels/2` is the labels field's) beside it. */
  const field = (name: keyof Draft, label: string, control: Control) => (
    <Field label={label} problem={problemAt(action.error, `/${name}`)}>
      {(ids) => control(name, ids)}
    </Field>
  );
  return (
    <form class="panel device-form" onSubmit={submit} aria-labelledby="device-form-heading" noValidate>
      <h2 id="device-form-heading" class="device-form-heading">
        {device ? `Edit ${device.name}` : 'New device'}
      </h2>
      {device ? null : field('id', 'Device id (serial, UDID)', text(true))}
      {field('name', 'Name', text(true))}
      {field('platform', 'Platform', select(PLATFORMS))}
      {field('status', 'Status', select(STATUSES))}
      {field('osVersion', 'OS version', text())}
      {field('model', 'Model', text())}
      {field('manufacturer', 'Manufacturer', text())}
      {field('labels', 'Labels (comma-separated)', text())}
      <div class="actions">
        <button type="submit" disabled={action.busy}>
          {device ? 'Save device' : 'Register device'}
        </button>
        <button type="button" class="secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
      <FormProblem error={action.error} fields={DRAFT_FIELDS} />
    </form>
  );
}
