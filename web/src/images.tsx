import type { RefObject } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { AttestClient } from '../../src/client/index.ts';
import { api } from './session.ts';

// Images come from `GET /images/{id}`, which needs the session key in a header: an <img src> cannot
// send it. Their bytes are fetched, made into blob URLs and shared: every user of an image holds a
// reference, and the URL is revoked when the last one lets go. Few fetches run at once (a run with
// hundreds of screenshots must not open hundreds of requests), full-size images ahead of thumbnails.

const MAX_CONCURRENT = 6;
const RETRIES = 3;

export interface ImageEntry {
  refs: number;
  url?: string;
  error?: Error;
  promise: Promise<string>;
  cancelled: boolean;
  listeners: Set<() => void>;
}

interface Job {
  run: () => Promise<void>;
  priority: number;
}

/** Shown until the bytes arrive: a transparent pixel, so the browser draws no broken-image sign. */
const PLACEHOLDER = 'data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7';

const cache = new Map<string, ImageEntry>();
const waiting: Job[] = [];
let active = 0;

function pump(): void {
  while (active < MAX_CONCURRENT && waiting.length > 0) {
    // Highest priority first; among equals, the oldest.
    let best = 0;
    for (let i = 1; i < waiting.length; i++) if ((waiting[i] as Job).priority > (waiting[best] as Job).priority) best = i;
    const [job] = waiting.splice(best, 1);
    active++;
    (job as Job).run().finally(() => {
      active--;
      pump();
    });
  }
}

function queued<T>(priority: number, work: () => Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    waiting.push({ priority, run: () => work().then(resolve, reject) });
    pump();
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function fetchImage(path: string, entry: ImageEntry): Promise<Blob> {
  for (let attempt = 1; ; attempt++) {
    const response = await api().fetchRaw('GET', path, { headers: { accept: 'image/*' } });
    // Too many thumbnails being made at once: the server says when to come back.
    if (response.status === 503 && attempt < RETRIES && !entry.cancelled) {
      const after = Number(response.headers.get('retry-after'));
      await sleep(Number.isFinite(after) && after > 0 ? Math.min(after, 10) * 1000 : 1000 * attempt);
      continue;
    }
    // A problem answer becomes an ApiError, like every other call.
    if (!response.ok) await AttestClient.read(response);
    return response.blob();
  }
}

function keyOf(imageId: string, thumbnail: boolean): string {
  return `${imageId}${thumbnail ? ':thumb' : ''}`;
}

/** Takes a reference to an image's blob URL, fetching it when no one holds it yet. */
export function acquireImage(imageId: string, thumbnail: boolean): ImageEntry {
  const key = keyOf(imageId, thumbnail);
  let entry = cache.get(key);
  if (!entry) {
    const created: ImageEntry = { refs: 0, cancelled: false, listeners: new Set(), promise: Promise.resolve('') };
    const path = `/images/${encodeURIComponent(imageId)}${thumbnail ? '?thumbnail=true' : ''}`;
    created.promise = queued(thumbnail ? 0 : 1, async () => {
      if (created.cancelled) throw new Error('cancelled');
      const blob = await fetchImage(path, created);
      if (created.cancelled) throw new Error('cancelled');
      return URL.createObjectURL(blob);
    }).then(
      (url) => {
        created.url = url;
        for (const listener of created.listeners) listener();
        return url;
      },
      (error: Error) => {
        created.error = error;
        // A failed image is forgotten, so a later look tries again.
        if (cache.get(key) === created) cache.delete(key);
        for (const listener of created.listeners) listener();
        throw error;
      },
    );
    created.promise.catch(() => undefined);
    cache.set(key, created);
    entry = created;
  }
  entry.refs++;
  return entry;
}

/** Lets go of a reference; the last one revokes the URL (or cancels a fetch not yet started). */
export function releaseImage(imageId: string, thumbnail: boolean, entry: ImageEntry): void {
  entry.refs--;
  if (entry.refs > 0) return;
  const key = keyOf(imageId, thumbnail);
  if (cache.get(key) === entry) cache.delete(key);
  entry.cancelled = true;
  if (entry.url) URL.revokeObjectURL(entry.url);
  else entry.promise.then((url) => URL.revokeObjectURL(url)).catch(() => undefined);
}

export interface ImageState {
  url: string | undefined;
  error: Error | undefined;
}

/** The blob URL of an image while the component is mounted and `enabled` (e.g. once it is in view). */
export function useImageUrl(imageId: string | undefined, thumbnail: boolean, enabled = true): ImageState {
  const [state, setState] = useState<ImageState>({ url: undefined, error: undefined });
  useEffect(() => {
    if (!imageId || !enabled) return;
    const entry = acquireImage(imageId, thumbnail);
    const update = () => setState({ url: entry.url, error: entry.error && entry.error.message !== 'cancelled' ? entry.error : undefined });
    entry.listeners.add(update);
    update();
    return () => {
      entry.listeners.delete(update);
      releaseImage(imageId, thumbnail, entry);
      setState({ url: undefined, error: undefined });
    };
  }, [imageId, thumbnail, enabled]);
  return state;
}

const observers = new Map<string, { observer: IntersectionObserver; callbacks: Map<Element, () => void> }>();

/** One shared IntersectionObserver (per margin) for every lazy image. */
function observe(element: Element, margin: string, onVisible: () => void): () => void {
  let shared = observers.get(margin);
  if (!shared) {
    const callbacks = new Map<Element, () => void>();
    const observer = new IntersectionObserver(
      (entries) => {
        for (const e of entries) {
          if (!e.isIntersecting) continue;
          const callback = callbacks.get(e.target);
          if (!callback) continue;
          callbacks.delete(e.target);
          observer.unobserve(e.target);
          callback();
        }
      },
      { rootMargin: margin },
    );
    shared = { observer, callbacks };
    observers.set(margin, shared);
  }
  const { observer, callbacks } = shared;
  callbacks.set(element, onVisible);
  observer.observe(element);
  return () => {
    callbacks.delete(element);
    observer.unobserve(element);
  };
}

/** Whether the element has come near the viewport (stays true once it has). */
export function useInView<T extends Element>(margin = '200px'): [RefObject<T | null>, boolean] {
  const ref = useRef<T>(null);
  const [seen, setSeen] = useState(false);
  useEffect(() => {
    if (seen || !ref.current) return;
    if (typeof IntersectionObserver === 'undefined') {
      setSeen(true);
      return;
    }
    return observe(ref.current, margin, () => setSeen(true));
  }, [seen, margin]);
  return [ref, seen];
}

/**
 * An API image: fetched with the session key once it scrolls near the viewport (or at once with
 * `eager`). The <img> is there from the start (with its alt text and size), its `src` comes later.
 */
export function ApiImage({
  imageId,
  thumbnail = false,
  eager = false,
  alt,
  class: className,
  'data-testid': testId,
}: {
  imageId: string;
  thumbnail?: boolean;
  eager?: boolean;
  alt: string;
  class?: string;
  'data-testid'?: string;
}) {
  const [ref, inView] = useInView<HTMLImageElement>();
  const { url, error } = useImageUrl(imageId, thumbnail, eager || inView);
  const state = error ? 'error' : url ? 'loaded' : 'loading';
  return (
    <img
      ref={ref}
      src={url ?? PLACEHOLDER}
      alt={error ? `${alt} (could not be loaded)` : alt}
      class={`api-image api-image-${state}${className ? ` ${className}` : ''}`}
      data-state={state}
      data-testid={testId}
      decoding="async"
    />
  );
}
