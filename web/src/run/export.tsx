import { useState } from 'preact/hooks';
import type { v1 } from '../../../src/client/index.ts';
import { describeError } from '../data.ts';
import { downloadFromApi } from './download.ts';

const FORMATS: { format: (typeof v1.results.EXPORT_FORMATS)[number]; label: string; title: string; extension: string }[] = [
  { format: 'zip', label: 'ZIP bundle', title: 'Results, artifacts and images as the API gives them', extension: 'zip' },
  { format: 'html', label: 'HTML report', title: 'One self-contained HTML page with every screenshot', extension: 'html' },
  { format: 'junit', label: 'JUnit', title: 'A ZIP of junit.xml and the images it names', extension: 'zip' },
  { format: 'xray', label: 'Xray', title: 'Xray JSON with screenshots as evidence', extension: 'json' },
  { format: 'allure', label: 'Allure', title: 'A ZIP of an Allure results folder', extension: 'zip' },
];

/** One button per export format; each downloads the run's export with the session key. */
export function ExportButtons({ testRunId, completed }: { testRunId: string; completed: boolean }) {
  const [busy, setBusy] = useState<string | undefined>();
  const [message, setMessage] = useState<{ error: boolean; text: string } | undefined>();
  const run = async (format: (typeof FORMATS)[number]) => {
    setBusy(format.format);
    setMessage(undefined);
    try {
      const path = `/testmgmt/testruns/${encodeURIComponent(testRunId)}/export?format=${format.format}`;
      const name = await downloadFromApi(path, `run-${testRunId}-${format.format}.${format.extension}`);
      setMessage({ error: false, text: `Saved ${name}` });
    } catch (error) {
      setMessage({ error: true, text: describeError(error as Error) });
    } finally {
      setBusy(undefined);
    }
  };
  return (
    <fieldset class="export">
      <legend class="export-label">Export</legend>
      {FORMATS.map((format) => (
        <button
          key={format.format}
          type="button"
          class="secondary"
          title={completed ? format.title : 'Exports are for completed runs'}
          disabled={!completed || busy !== undefined}
          aria-label={`Export as ${format.label}`}
          data-format={format.format}
          onClick={() => run(format)}
        >
          {busy === format.format ? '…' : format.label}
        </button>
      ))}
      {message ? (
        <span class={message.error ? 'error' : 'muted'} role={message.error ? 'alert' : 'status'}>
          {message.text}
        </span>
      ) : !completed ? (
        <span class="muted">when the run is completed</span>
      ) : null}
    </fieldset>
  );
}
