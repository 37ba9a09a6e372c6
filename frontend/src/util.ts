// util.ts: small DOM and timing helpers shared by the panels.

/** el creates an element with attributes and children. */
export function el(tag: string, attrs: Record<string, string> = {}, ...children: (Node | string)[]): HTMLElement {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  e.append(...children);
  return e;
}

/** errText returns an error's message. */
export function errText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** throttle returns a function that calls fn at most once per ms
 *  milliseconds: the first call runs at once, calls within the interval
 *  make one more run at its end (never postponed further, unlike a
 *  debounce, so a steady stream of calls still runs fn steadily). */
export function throttle(fn: () => void, ms: number): () => void {
  let last = 0;
  let timer: ReturnType<typeof setTimeout> | null = null;
  return () => {
    if (timer) return;
    const wait = last + ms - Date.now();
    if (wait <= 0) {
      last = Date.now();
      fn();
      return;
    }
    timer = setTimeout(() => {
      timer = null;
      last = Date.now();
      fn();
    }, wait);
  };
}

/** throttleByCost is throttle for work whose cost grows (charts redrawn
 *  with every point so far): fn runs at most once per ms milliseconds, and
 *  never more often than keeps it under share of the time (after a run
 *  that took d ms, the next waits at least d / share), so that the page
 *  stays responsive however long fn becomes. */
export function throttleByCost(fn: () => void, ms: number, share: number): () => void {
  let last = 0;
  let cost = 0;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const run = () => {
    timer = null;
    const t0 = performance.now();
    fn();
    cost = performance.now() - t0;
    last = Date.now();
  };
  return () => {
    if (timer) return;
    timer = setTimeout(run, Math.max(0, last + Math.max(ms, cost / share) - Date.now()));
  };
}

/** fmtBytes formats a byte count. */
export function fmtBytes(n: number | undefined): string {
  if (n == null) return "";
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) {
    n /= 1024;
    i++;
  }
  return `${i ? n.toFixed(1) : n} ${u[i]}`;
}

/** fmtDuration formats seconds as h:mm:ss or m:ss. */
export function fmtDuration(s: number): string {
  if (!isFinite(s) || s < 0) return "?";
  s = Math.round(s);
  const h = Math.floor(s / 3600),
    m = Math.floor((s % 3600) / 60),
    sec = s % 60;
  const mm = h ? String(m).padStart(2, "0") : String(m);
  return (h ? h + ":" : "") + mm + ":" + String(sec).padStart(2, "0");
}
