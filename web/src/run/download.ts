import { AttestClient } from '../../../src/client/index.ts';
import { api } from '../session.ts';

/** The file name a `Content-Disposition` header gives, if any. */
export function dispositionName(header: string | null): string | undefined {
  if (!header) return undefined;
  const star = /filename\*\s*=\s*(?:UTF-8|utf-8)''([^;]+)/.exec(header);
  if (star?.[1]) {
    try {
      return decodeURIComponent(star[1].trim());
    } catch {
      // A damaged encoding: fall back to the plain name.
    }
  }
  const plain = /filename\s*=\s*"?([^";]+)"?/.exec(header);
  return plain?.[1]?.trim() || undefined;
}

/**
 * Downloads an API resource that needs the session key (no plain link can send it): fetched, made
 * into a blob URL and saved through a temporary `<a download>`. Resolves with the name it saved as.
 */
export async function downloadFromApi(path: string, fallbackName: string): Promise<string> {
  const response = await api().fetchRaw('GET', path, { headers: { accept: '*/*' } });
  if (!response.ok) await AttestClient.read(response);
  const blob = await response.blob();
  const name = dispositionName(response.headers.get('content-disposition')) ?? fallbackName;
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  link.rel = 'noopener';
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  // The click has handed the blob to the browser's download; the URL can go a moment later.
  setTimeout(() => URL.revokeObjectURL(url), 30_000);
  return name;
}
