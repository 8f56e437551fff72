import type { ComponentChildren } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { useImageUrl } from '../images.tsx';
import { type LightboxApi, LightboxContext, type LightboxItem } from './artifacts.tsx';

const FOCUSABLE = 'button:not([disabled]), [href], input, select, textarea, [tabindex]:not([tabindex="-1"])';

/**
 * A full-size image in a modal dialog: Escape closes it, Left and Right move through `items`,
 * focus stays inside and goes back where it was on close. Neighbours are fetched ahead.
 */
export function Lightbox({
  items,
  index,
  onMove,
  onClose,
}: {
  items: LightboxItem[];
  index: number;
  onMove: (index: number) => void;
  onClose: () => void;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const item = items[index];
  const { url, error } = useImageUrl(item?.imageId, false);
  // The images either side, so moving on shows them at once.
  useImageUrl(items[index + 1]?.imageId, false, url !== undefined);
  useImageUrl(items[index - 1]?.imageId, false, url !== undefined);

  useEffect(() => {
    const element = dialog.current;
    if (!element) return;
    const before = document.activeElement as HTMLElement | null;
    if (!element.open) element.showModal();
    element.querySelector<HTMLElement>('.lightbox-close')?.focus();
    return () => {
      if (element.open) element.close();
      before?.focus?.();
    };
  }, []);

  const move = (to: number) => {
    if (items.length === 0) return;
    onMove((to + items.length) % items.length);
  };

  const onKeyDown = (event: KeyboardEvent) => {
    if (event.key === 'ArrowRight') {
      event.preventDefault();
      move(index + 1);
    } else if (event.key === 'ArrowLeft') {
      event.preventDefault();
      move(index - 1);
    } else if (event.key === 'Escape') {
      event.preventDefault();
      onClose();
    } else if (event.key === 'Tab' && dialog.current) {
      // The dialog is modal; Tab also stays inside it rather than reaching the browser's own controls.
      const focusable = [...dialog.current.querySelectorAll<HTMLElement>(FOCUSABLE)];
      const first = focusable[0];
      const last = focusable[focusable.length - 1];
      if (!first || !last) return;
      if (event.shiftKey && document.activeElement === first) {
        event.preventDefault();
        last.focus();
      } else if (!event.shiftKey && document.activeElement === last) {
        event.preventDefault();
        first.focus();
      }
    }
  };

  if (!item) return null;
  const titleId = 'lightbox-title';
  return (
    <dialog
      ref={dialog}
      class="lightbox"
      aria-labelledby={titleId}
      aria-modal="true"
      onKeyDown={onKeyDown}
      onCancel={(event) => {
        event.preventDefault();
        onClose();
      }}
      onClick={(event) => {
        // A click on the backdrop (the dialog itself, outside its content) closes it.
        if (event.target === dialog.current) onClose();
      }}
    >
      <div class="lightbox-body">
        <header class="lightbox-bar">
          <h2 id={titleId} class="lightbox-title">
            {item.label}
          </h2>
          <span class="muted lightbox-count" aria-live="polite">
            {index + 1} of {items.length} · {item.width}×{item.height}
          </span>
          <button type="button" class="secondary" onClick={() => move(index - 1)} disabled={items.length < 2} aria-label="Previous image">
            ←
          </button>
          <button type="button" class="secondary" onClick={() => move(index + 1)} disabled={items.length < 2} aria-label="Next image">
            →
          </button>
          <button type="button" class="lightbox-close" onClick={onClose} aria-label="Close">
            ✕
          </button>
        </header>
        <div class="lightbox-stage">
          {url ? (
            <img src={url} alt={item.label} data-testid="lightbox-image" width={item.width} height={item.height} />
          ) : error ? (
            <p class="error" role="alert">
              The image could not be loaded: {error.message}
            </p>
          ) : (
            <p class="lightbox-loading" aria-live="polite">
              Loading…
            </p>
          )}
        </div>
      </div>
    </dialog>
  );
}

/**
 * Lets everything inside open the lightbox (through `LightboxContext`) on one of `screenshots`, or
 * on a list of its own, and shows it after them while it is open.
 */
export function LightboxHost({ screenshots, children }: { screenshots: LightboxItem[]; children: ComponentChildren }) {
  const [shown, setShown] = useState<{ items: LightboxItem[]; index: number } | undefined>();
  const api = useMemo<LightboxApi>(
    () => ({
      open(imageId, items) {
        const list = items ?? screenshots;
        const index = list.findIndex((item) => item.imageId === imageId);
        if (index >= 0) setShown({ items: list, index });
      },
    }),
    [screenshots],
  );
  return (
    <LightboxContext.Provider value={api}>
      {children}
      {shown ? (
        <Lightbox
          items={shown.items}
          index={shown.index}
          onMove={(index) => setShown((old) => (old ? { ...old, index } : old))}
          onClose={() => setShown(undefined)}
        />
      ) : null}
    </LightboxContext.Provider>
  );
}
