import {
  defaultRangeExtractor,
  observeWindowOffset,
  observeWindowRect,
  type Range,
  type VirtualItem,
  Virtualizer,
  windowScroll,
} from '@tanstack/virtual-core';
import type { RefObject } from 'preact';
import { useLayoutEffect, useReducer, useRef, useState } from 'preact/hooks';

// Long lists (a job's 2,000 runs, a run's 5,000 steps, a test's 10,000 runs) draw only the rows
// near the viewport, the page itself scrolling (docs/web.md, "Pages at scale"). TanStack Virtual's
// framework-free core does the arithmetic and the measuring; this is its window-scrolling hook for
// Preact, as @tanstack/react-virtual's `useWindowVirtualizer` is for React.

/** Lists up to this long are drawn whole: virtualising them would save nothing worth its jumps. */
export const DRAW_WHOLE_UP_TO = 200;

export interface WindowList<T extends Element> {
  /** The list's element: where it starts on the page is the scroll margin. */
  ref: RefObject<T | null>;
  /** The rows to draw, in order, each with its index, key and the space to leave before it (in pixels). */
  items: (VirtualItem & { gap: number })[];
  /** The space to leave after the last row drawn. */
  after: number;
  /** Give to each row drawn (with `data-index`): its real height replaces the estimate. */
  measure: (element: Element | null) => void;
  /** Scrolls the page to row `index`. */
  scrollTo: (index: number) => void;
}

/** Where `element` starts, in pixels from the top of the document. */
const topOf = (element: Element) => element.getBoundingClientRect().top + window.scrollY;

/** What lies above the list changes height (a panel opens, an image arrives): its place is read again. */
function useListTop(ref: { current: Element | null }, setTop: (top: number) => void) {
  useLayoutEffect(() => {
    const element = ref.current;
    if (!element) return;
    const read = () => setTop(Math.round(topOf(element)));
    read();
    const observer = new ResizeObserver(read);
    observer.observe(document.body);
    return () => observer.disconnect();
  }, []);
}

/** Rows' places count from the top of the page; the gaps count from the list's own top (`margin`). */
function withGaps(rows: VirtualItem[], margin: number) {
  let end = margin;
  const items = rows.map((item) => {
    const gap = Math.max(0, item.start - end);
    end = item.end;
    return { ...item, gap };
  });
  return { items, end };
}

/**
 * The rows of a list of `count` to draw with the window as its scroller. `keep` names rows drawn
 * wherever the page is scrolled (the row holding the focus, so Tab never loses its place).
 */
export function useWindowList<T extends Element>({
  count,
  estimate,
  key,
  overscan = 8,
  keep,
}: {
  count: number;
  estimate: (index: number) => number;
  key?: (index: number) => string | number;
  overscan?: number;
  keep?: number | undefined;
}): WindowList<T> {
  const ref = useRef<T>(null);
  const [, rerender] = useReducer((n: number) => n + 1, 0);
  const [margin, setMargin] = useState(0);
  const rangeExtractor = (range: Range) => {
    const indexes = defaultRangeExtractor(range);
    if (keep === undefined || keep < 0 || keep >= count || indexes.includes(keep)) return indexes;
    return [...indexes, keep].sort((a, b) => a - b);
  };
  const options = {
    count,
    estimateSize: estimate,
    overscan,
    scrollMargin: margin,
    rangeExtractor,
    getScrollElement: () => window,
    observeElementRect: observeWindowRect,
    observeElementOffset: observeWindowOffset,
    scrollToFn: windowScroll,
    initialOffset: () => window.scrollY,
    onChange: () => rerender(undefined),
    ...(key ? { getItemKey: key } : {}),
  };
  const [virtualizer] = useState(() => new Virtualizer<Window, Element>(options));
  virtualizer.setOptions(options);
  useLayoutEffect(() => virtualizer._didMount(), []);
  useLayoutEffect(() => virtualizer._willUpdate());
  useListTop(ref, setMargin);
  const { items, end } = withGaps(virtualizer.getVirtualItems(), margin);
  return {
    ref,
    items,
    after: Math.max(0, virtualizer.getTotalSize() + margin - end),
    measure: (element) => {
      if (element) virtualizer.measureElement(element);
    },
    scrollTo: (index) => virtualizer.scrollToIndex(index, { align: 'center' }),
  };
}
