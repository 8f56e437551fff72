import type { ComponentChildren, RefObject } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { useImageUrl } from '../images.tsx';
import { type LightboxApi, LightboxContext, type LightboxItem } from './artifacts.tsx';

const TITLE_ID = 'lightbox-title';
const FOCUSABLE = 'button:not([disabled]), [href], input, select, textarea, [tabindex]:not([tabindex="-1"])';

/** Opens `dialog` as a modal with its close button focused; on unmount closes it and gives focus back. */
function useModal(dialog: RefObject<HTMLDialogElement | null>) {
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
}

/** The dialog is modal; Tab also stays inside it rather than reaching the browser's own controls. */
function keepTabInside(element: HTMLElement, event: KeyboardEvent) {
  const focusable = [...element.querySelectorAll<HTMLElement>(FOCUSABLE)];
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

/** Left and Right move to the image before and after, Escape closes, Tab stays inside the dialog. */
function onLightboxKey(event: KeyboardEvent, dialog: HTMLElement | null, back: () => void, on: () => void, close: () => void) {
  if (event.key === 'ArrowRight') {
    event.preventDefault();
    on();
  } else if (event.key === 'ArrowLeft') {
    event.preventDefault();
    back();
  } else if (event.key === 'Escape') {
    event.preventDefault();
    close();
  } else if (event.key === 'Tab' && dialog) {
    keepTabInside(dialog, event);
  }
}

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
  useModal(dialog);

  const move = (to: number) => {
    if (items.length === 0) return;
    onMove((to + items.length) % items.length);
  };

  if (!item) return null;
  return (
    <dialog
      ref={dialog}
      class="lightbox"
      aria-labelledby={TITLE_ID}
      aria-modal="true"
      onKeyDown={(event) =>
        onLightboxKey(
          event,
          dialog.current,
          () => move(index - 1),
          () => move(index + 1),
          onClose,
        )
      }
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
        <LightboxBar item={item} index={index} count={items.length} move={move} onClose={onClose} />
        <LightboxStage item={item} url={url} error={error} />
      </div>
    </dialog>
  );
}

/** The image's name, where it is in the list, and the buttons to move on and to close. */
function LightboxBar({
  item,
  index,
  count,
  move,
  onClose,
}: {
  item: LightboxItem;
  index: number;
  count: number;
  move: (to: number) => void;
  onClose: () => void;
}) {
  return (
    <header class="lightbox-bar">
      <h2 id={TITLE_ID} class="lightbox-title">
        {item.label}
      </h2>
      <span class="muted lightbox-count" aria-live="polite">
        {index + 1} of {count} · {item.width}×{item.height}
      </span>
      <button type="button" class="secondary" onClick={() => move(index - 1)} disabled={count < 2} aria-label="Previous image">
        ←
      </button>
      <button type="button" class="secondary" onClick={() => move(index + 1)} disabled={count < 2} aria-label="Next image">
        →
      </button>
      <button type="button" class="lightbox-close" onClick={onClose} aria-label="Close">
        ✕
      </button>
    </header>
  );
}

/** The image at full size once fetched; until then a note, or why it failed. */
function LightboxStage({ item, url, error }: { item: LightboxItem; url: string | undefined; error: Error | undefined }) {
  return (
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
