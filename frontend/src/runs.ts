// runs.ts: the Runs panel. It lists every run the engine follows, and shows
// one run (or several, compared side by side) as live charts: each metric
// (train vs valid), the learning rate, throughput and system usage, with
// progress, an ETA and a Stop button. A view fetches runs.snapshot, then
// applies run.update records from the snapshot's `next` on, so opening it
// late loses nothing. Redraws are throttled (never debounced), so a run
// that logs every few milliseconds still charts while it runs.

import * as echarts from "echarts";
import type { Transport } from "./transport";
import { el, errText, fmtDuration, throttle, throttleByCost } from "./util";
import { emptyNote, watched, watchedError, watchingLine } from "./watched";

/** A run as runs.list describes it. */
export interface RunInfo {
  dir: string;
  name: string;
  status: string;
  /** Why a run whose process is gone is "killed" or "stale". */
  why?: string;
  started?: string;
  epochs?: number;
  step?: number;
  /** The data-parallel ranks of a run trained by several; absent for one process. */
  world_size?: number;
  /** Found through the run registry, outside the watched folders. */
  registered?: boolean;
}

/** applyRecord updates a runs.list entry with a record of its log, as the
 *  engine's summary would, so that the table follows a live run without
 *  asking for the whole list again. */
function applyRecord(r: RunInfo, rec: Rec) {
  switch (rec.kind) {
    case "start":
      r.status = "running";
      r.started = rec.time;
      r.world_size = rec.world_size;
      delete r.why;
      break;
    case "resume":
      r.status = "running";
      delete r.why;
      break;
    case "end":
      r.status = rec.reason || "ended";
      delete r.why;
      break;
  }
  if (rec.step > 0) r.step = rec.step;
  if (rec.kind === "epoch" || rec.kind === "end" || rec.kind === "checkpoint") r.epochs = rec.epoch;
}

/** A row of the Runs table and the cells it updates in place. */
interface Row {
  tr: HTMLElement;
  check: HTMLInputElement;
  name: HTMLElement;
  status: HTMLElement;
  epochs: HTMLElement;
  step: HTMLElement;
  started: HTMLElement;
}

/** One events.jsonl record (train.Event). */
interface Rec {
  kind: string;
  time: string;
  epoch: number;
  step: number;
  split?: string;
  metrics?: Record<string, number | string>;
  lr?: number;
  reason?: string;
  error?: string;
  config?: any;
  system?: Record<string, number | string>;
  batches?: number;
  batch?: number;
  samples?: number;
  world_size?: number;
}

type Pt = [number, number];

/** RunData accumulates one run's records into chart series. */
class RunData {
  next = 0;
  loaded = false;
  pending: { index: number; record: Rec }[] = [];
  series = new Map<string, Map<string, Pt[]>>(); // chart → series name → points
  epochs = 0;
  batches = 0;
  startTime = 0;
  lastTime = 0;
  epoch = 0;
  batch = 0;
  step = 0;
  status = "running";
  worldSize = 0; // data-parallel ranks (0 or 1: one process)
  stopping = false; // Stop was pressed; the run has not ended yet
  error = "";
  private lastStep: { t: number; step: number; samples: number; epoch: number } | null = null;

  constructor(public dir: string, public name: string) {}

  private add(chart: string, series: string, p: Pt) {
    let c = this.series.get(chart);
    if (!c) this.series.set(chart, (c = new Map()));
    let s = c.get(series);
    if (!s) c.set(series, (s = []));
    s.push(p);
  }

  apply(r: Rec) {
    const t = Date.parse(r.time) / 1000;
    if (isFinite(t)) {
      if (!this.startTime) this.startTime = t;
      this.lastTime = t;
    }
    switch (r.kind) {
      case "start":
      case "resume":
        this.epochs = r.config?.epochs || this.epochs || 1;
        if (r.batches) this.batches = r.batches;
        if (r.kind === "start" && isFinite(t)) this.startTime = t;
        if (r.kind === "start") this.worldSize = r.world_size ?? 0;
        this.status = "running";
        break;
      case "step": {
        this.epoch = r.epoch;
        this.step = r.step;
        if (r.batches) this.batches = r.batches;
        if (r.batch) this.batch = r.batch;
        for (const [k, v] of Object.entries(r.metrics ?? {})) this.add(k, "train", [r.step, num(v)]);
        if (r.lr) this.add("learning rate", "lr", [r.step, r.lr]);
        // Samples per second over at least half a second (records come
        // faster than the clock is worth reading): steps per second times
        // the samples per step (the epoch's samples over its batches).
        if (isFinite(t)) {
          const a = this.lastStep;
          if (!a || r.step < a.step) this.lastStep = { t, step: r.step, samples: 0, epoch: r.epoch };
          else if (t - a.t >= 0.5) {
            const perStep = r.batch && r.samples ? r.samples / r.batch : 1;
            this.add("throughput (samples/s)", "samples/s", [r.step, ((r.step - a.step) / (t - a.t)) * perStep]);
            this.lastStep = { t, step: r.step, samples: 0, epoch: r.epoch };
          }
        }
        break;
      }
      case "epoch": {
        this.epoch = r.epoch;
        this.step = r.step;
        const split = r.split || "train";
        for (const [k, v] of Object.entries(r.metrics ?? {})) this.add(k, split === "train" ? "train (epoch)" : split, [r.step, num(v)]);
        if (split === "train" && r.lr) this.add("learning rate", "lr", [r.step, r.lr]);
        if (split === "train") this.batch = this.batches;
        break;
      }
      case "end":
        this.status = r.reason || "ended";
        this.error = r.error ?? "";
        break;
    }
    if (r.system) {
      const x = isFinite(t) && this.startTime ? +(t - this.startTime).toFixed(2) : r.step;
      for (const [k, v] of Object.entries(r.system)) this.add(systemChart(k), k, [x, num(v)]);
    }
  }

  /** progress returns the fraction done and the ETA in seconds. */
  progress(): { frac: number; eta: number } {
    if (!this.epochs || !this.batches) return { frac: 0, eta: NaN };
    const done = Math.max(0, this.epoch - 1) * this.batches + Math.min(this.batch, this.batches);
    const frac = Math.min(1, done / (this.epochs * this.batches));
    const el = this.lastTime - this.startTime;
    return { frac, eta: frac > 0 ? (el * (1 - frac)) / frac : NaN };
  }
}

/** systemChart names the chart a system value goes to, one per unit, so
 *  that percentages and MiB never share an axis. */
function systemChart(key: string): string {
  if (key.endsWith("_percent")) return "system usage (%)";
  if (key.endsWith("_mib")) return "system usage (MiB)";
  return "system usage";
}

/** runColors are the compare view's colours, one per run. */
const runColors = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#db2777", "#65a30d", "#4b5563", "#ca8a04"];

/** lineTypes tell a run's series apart in the compare view, where they share its colour. */
const lineTypes = ["solid", "dashed", "dotted"];

function num(v: number | string): number {
  if (typeof v === "number") return v;
  return v === "inf" ? Infinity : v === "-inf" ? -Infinity : NaN;
}

/** RunsPanel is the Runs panel. */
export class RunsPanel {
  private table: HTMLElement;
  private view: HTMLElement;
  private runs: RunInfo[] = [];
  private shown: RunData[] = [];
  private charts = new Map<string, { chart: echarts.ECharts; box: HTMLElement }>();
  private head: HTMLElement;
  private legend: HTMLElement;
  private redraw: () => void;
  private errorBox: HTMLElement;
  private rows = new Map<string, Row>();
  private dirty = new Set<string>(); // rows whose run changed since they were drawn
  private paintRows: () => void;
  private refreshSoon: () => void;
  private watching: HTMLElement;
  private empty: HTMLElement;

  constructor(private t: Transport, root: HTMLElement) {
    this.table = el("tbody", { id: "runs-list" });
    this.watching = el("span", { id: "runs-watching", class: "muted" });
    this.empty = el("div", { id: "runs-empty", hidden: "" });
    const refresh = el("button", { id: "runs-refresh" }, "↻");
    refresh.onclick = () => this.refresh();
    const compare = el("button", { id: "runs-compare", title: "Compare the checked runs side by side" }, "Compare checked");
    compare.onclick = () => {
      const dirs = Array.from(this.table.querySelectorAll<HTMLInputElement>("input.run-check:checked")).map((c) => c.value);
      if (dirs.length) this.show(dirs);
    };
    this.errorBox = el("div", { id: "runs-error", class: "error-box", hidden: "" });
    this.head = el("div", { id: "run-head" });
    this.legend = el("div", { id: "run-legend", hidden: "" });
    this.view = el("div", { id: "run-charts", class: "chart-grid" });
    root.append(
      el("div", { class: "toolbar" }, refresh, compare, this.watching),
      this.errorBox,
      this.empty,
      el(
        "table",
        { class: "grid runs-table" },
        el("thead", {}, el("tr", {}, ...["", "run", "status", "epochs", "step", "started", ""].map((h) => el("th", {}, h)))),
        this.table,
      ),
      el("div", { id: "run-view" }, this.head, this.legend, this.view),
    );
    // At most 4 times a second, and at most a fifth of the page's time: a
    // long run's charts get slower to draw, and the table must keep up.
    this.redraw = throttleByCost(() => this.draw(), 250, 0.2);
    this.paintRows = throttle(() => {
      for (const dir of this.dirty) {
        const info = this.runs.find((r) => r.dir === dir);
        if (info) this.row(info);
      }
      this.dirty.clear();
    }, 100);
    this.refreshSoon = throttle(() => this.refresh(), 500);
    t.subscribe((u) => {
      if (u.topic === "runs.changed") this.refresh();
      else if (u.topic === "run.update") this.onUpdate(u.data);
      else if (u.topic === "transport.open") {
        this.refresh();
        if (this.shown.length) this.show(this.shown.map((r) => r.dir));
      }
    });
    window.addEventListener("resize", () => this.charts.forEach((c) => c.chart.resize()));
  }

  async refresh() {
    try {
      this.runs = (await this.t.call<RunInfo[]>("runs.list")) ?? [];
      this.errorBox.hidden = true;
    } catch (e) {
      this.errorBox.hidden = false;
      this.errorBox.textContent = "cannot list runs: " + errText(e);
      return;
    }
    const rows = this.runs.map((r) => this.row(r).tr);
    for (const [dir, row] of this.rows) {
      if (!this.runs.some((r) => r.dir === dir)) {
        row.tr.remove();
        this.rows.delete(dir);
      }
    }
    // Rows are moved only when the order changed: a row being clicked stays put.
    const current = Array.from(this.table.children);
    if (current.length !== rows.length || rows.some((r, i) => current[i] !== r)) this.table.replaceChildren(...rows);
    this.dirty.clear();
    for (const d of this.shown) {
      const info = this.runs.find((r) => r.dir === d.dir);
      if (info && d.loaded && info.status !== "running" && d.status === "running") d.status = info.status;
    }
    this.redraw();
    this.showWatched();
  }

  /** showWatched says which folders are watched: in full while the table is empty. */
  private async showWatched() {
    try {
      const w = await watched(this.t);
      this.watching.textContent = watchingLine(w);
      this.empty.hidden = this.runs.length > 0;
      if (!this.empty.hidden) this.empty.replaceChildren(emptyNote(w, this.t.kind, "runs"));
    } catch (e) {
      this.watching.textContent = watchedError(e);
    }
  }

  /** row creates or updates the table row of run r. */
  private row(r: RunInfo): Row {
    let row = this.rows.get(r.dir);
    if (!row) {
      const check = el("input", { type: "checkbox", class: "run-check", value: r.dir }) as HTMLInputElement;
      const open = el("button", { class: "run-open" }, "Open");
      open.onclick = () => this.show([r.dir]);
      row = {
        tr: el("tr", { class: "run-row", "data-dir": r.dir }),
        check,
        name: el("td", { class: "run-name", title: r.dir }),
        status: el("td", { class: "run-status" }),
        epochs: el("td", { class: "run-epochs" }),
        step: el("td", { class: "run-step" }),
        started: el("td", { class: "run-started" }),
      };
      row.tr.append(el("td", {}, check), row.name, row.status, row.epochs, row.step, row.started, el("td", {}, open));
      this.rows.set(r.dir, row);
    }
    row.tr.dataset.status = r.status;
    row.tr.dataset.step = String(r.step ?? 0);
    row.tr.dataset.registered = String(!!r.registered);
    const where = r.registered ? [el("div", { class: "run-where", title: "from the run registry" }, parent(r.dir))] : [];
    row.name.replaceChildren(r.name || r.dir, ...ranksBadge(r.world_size), ...where);
    row.status.replaceChildren(r.status, ...(r.why ? [el("div", { class: "run-why" }, r.why)] : []));
    row.epochs.textContent = String(r.epochs ?? "");
    row.step.textContent = String(r.step ?? "");
    row.started.textContent = r.started ? new Date(r.started).toLocaleString() : "";
    return row;
  }

  /** show opens the runs in dirs (one: a run view; several: a comparison). */
  async show(dirs: string[]) {
    this.charts.forEach((c) => c.chart.dispose());
    this.charts.clear();
    this.view.replaceChildren();
    this.shown = dirs.map((d) => new RunData(d, this.runs.find((r) => r.dir === d)?.name || d.split("/").pop() || d));
    const runView = document.getElementById("run-view")!;
    runView.dataset.dirs = dirs.join("\n");
    runView.dataset.mode = dirs.length > 1 ? "compare" : "single";
    const shown = this.shown;
    await Promise.all(
      shown.map(async (d) => {
        try {
          const snap = await this.t.call<{ records: Rec[]; next: number }>("runs.snapshot", { dir: d.dir });
          (snap.records ?? []).forEach((r) => d.apply(r));
          d.next = snap.next ?? snap.records?.length ?? 0;
        } catch (e) {
          d.error = "cannot read the run: " + errText(e);
          d.status = "error";
        }
        d.loaded = true;
        for (const p of d.pending.sort((a, b) => a.index - b.index)) {
          if (p.index >= d.next) {
            d.apply(p.record);
            d.next = p.index + 1;
          }
        }
        d.pending = [];
      }),
    );
    if (shown === this.shown) this.draw();
  }

  private onUpdate(u: { dir: string; index: number; record: Rec }) {
    let hit = false;
    for (const d of this.shown) {
      if (d.dir !== u.dir) continue;
      if (!d.loaded) d.pending.push({ index: u.index, record: u.record });
      else if (u.index >= d.next) {
        d.apply(u.record);
        d.next = u.index + 1;
        hit = true;
      }
    }
    if (hit) this.redraw();
    const info = this.runs.find((r) => r.dir === u.dir);
    if (info && u.record) {
      applyRecord(info, u.record);
      this.dirty.add(u.dir);
      this.paintRows();
    } else if (!info) this.refreshSoon(); // a run the table has not listed yet
    if (u.record?.kind === "end" || u.record?.kind === "start") this.refresh();
  }

  private stop(dir: string) {
    this.t.call("runs.stop", { dir }).catch((e) => {
      this.errorBox.hidden = false;
      this.errorBox.textContent = "cannot stop the run: " + errText(e);
    });
  }

  private draw() {
    // Progress lines, one per run shown.
    this.head.replaceChildren(
      ...this.shown.map((d) => {
        const { frac, eta } = d.progress();
        const stop = el("button", { class: "run-stop", "data-dir": d.dir }, "Stop");
        stop.onclick = () => {
          d.stopping = true;
          this.stop(d.dir);
          this.draw();
        };
        if (d.status !== "running" || d.stopping) stop.setAttribute("disabled", "");
        if (d.stopping && d.status === "running") stop.textContent = "Stopping…";
        const bar = el("progress", { max: "1", value: String(frac) });
        const text =
          `${d.name}: ${d.status}` +
          (d.epochs ? ` · epoch ${d.epoch}/${d.epochs}` : "") +
          (d.batches ? ` · batch ${d.batch}/${d.batches}` : "") +
          ` · step ${d.step} · ${(frac * 100).toFixed(0)}%` +
          (d.status === "running" ? ` · ETA ${fmtDuration(eta)}` : "") +
          (d.error ? ` · ${d.error}` : "");
        const ranks =
          d.worldSize > 1
            ? [el("span", { class: "run-ranks", "data-world-size": String(d.worldSize), title: ranksTitle(d.worldSize) }, `data-parallel · ${d.worldSize} ranks`)]
            : [];
        return el(
          "div",
          { class: "run-progress", "data-dir": d.dir, "data-status": d.status, "data-step": String(d.step) },
          bar,
          el("span", { class: "run-progress-text" }, text),
          ...ranks,
          stop,
        );
      }),
    );
    // Compared runs keep one colour each across every chart; the legend is
    // a table of the runs, and a run's series differ by line style.
    const compare = this.shown.length > 1;
    const color = new Map(this.shown.map((d, i) => [d.dir, runColors[i % runColors.length]]));
    const styles = new Map<string, string>(); // series name → line type
    const lineType = (s: string) => {
      if (!styles.has(s)) styles.set(s, lineTypes[styles.size % lineTypes.length]);
      return styles.get(s)!;
    };
    this.shown.forEach((d) => d.series.forEach((m) => m.forEach((_p, s) => lineType(s))));
    this.legend.hidden = !compare;
    if (compare) this.drawLegend(color, styles);
    // One chart per metric, every run's series in it.
    const names = new Set<string>();
    this.shown.forEach((d) => d.series.forEach((_s, k) => names.add(k)));
    const order = [...names].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
    for (const name of order) {
      let c = this.charts.get(name);
      if (!c) {
        const box = el("div", { class: "run-chart", "data-metric": name });
        this.view.append(box);
        c = { chart: echarts.init(box, null, { renderer: "canvas" }), box };
        this.charts.set(name, c);
      }
      const series: any[] = [];
      let points = 0;
      for (const d of this.shown) {
        for (const [s, pts] of d.series.get(name) ?? []) {
          points += pts.length;
          const runStyle = compare ? { color: color.get(d.dir), lineStyle: { color: color.get(d.dir), type: lineType(s) }, itemStyle: { color: color.get(d.dir) } } : {};
          series.push({
            id: `${d.dir}\u0000${s}`,
            name: compare ? `${d.name} ${s}` : s,
            type: "line",
            ...runStyle,
            showSymbol: pts.length < 50,
            sampling: "lttb", // thousands of points drawn as the few hundred that show

            data: pts.filter((p) => isFinite(p[1])),
          });
        }
      }
      c.box.dataset.points = String(points);
      c.chart.setOption(
        {
          animation: false,
          title: { text: name, left: "center", textStyle: { fontSize: 13 } },
          tooltip: { trigger: "axis" },
          legend: { show: !compare, bottom: 0, type: "scroll" },
          grid: { left: 55, right: 20, top: 35, bottom: compare ? 35 : 60 },
          xAxis: { type: "value", name: name.startsWith("system usage") ? "seconds" : "step", nameLocation: "middle", nameGap: 22, scale: true },
          yAxis: { type: "value", scale: true, name: unitOf(name) },
          series,
        },
        { replaceMerge: ["series"] },
      );
    }
  }

  /** drawLegend draws the compare view's legend: a table of the runs, each
   *  with its colour, and the line style of each series name. */
  private drawLegend(color: Map<string, string>, styles: Map<string, string>) {
    const rows = this.shown.map((d) =>
      el(
        "tr",
        { class: "legend-run", "data-dir": d.dir, "data-color": color.get(d.dir)! },
        el("td", {}, el("span", { class: "legend-swatch", style: `background: ${color.get(d.dir)}` })),
        el("td", { class: "legend-name", title: d.dir }, d.name),
        el("td", {}, d.status),
        el("td", {}, d.epochs ? `${d.epoch}/${d.epochs}` : ""),
        el("td", {}, String(d.step)),
      ),
    );
    const key = [...styles].map(([s, type]) => el("span", { class: "legend-style", "data-line": type }, el("span", { class: "legend-line", style: `border-top-style: ${type}` }), s));
    this.legend.replaceChildren(
      el(
        "table",
        { class: "grid legend-table" },
        el("thead", {}, el("tr", {}, ...["", "run", "status", "epoch", "step"].map((h) => el("th", {}, h)))),
        el("tbody", {}, ...rows),
      ),
      el("div", { class: "legend-styles muted" }, "line styles: ", ...key),
    );
  }
}

/** unitOf names a chart's y axis unit, where it has one. */
function unitOf(chart: string): string {
  if (chart.endsWith("(%)")) return "%";
  if (chart.endsWith("(MiB)")) return "MiB";
  return "";
}

/** ranksBadge is the Runs table's mark of a data-parallel run: "×N". */
function ranksBadge(n?: number): HTMLElement[] {
  if (!n || n <= 1) return [];
  return [el("span", { class: "run-ranks", "data-world-size": String(n), title: ranksTitle(n) }, `×${n}`)];
}

function ranksTitle(n: number): string {
  return `trained data-parallel on ${n} ranks; rank 0 wrote this run directory`;
}

/** parent returns the folder a run directory is in. */
function parent(dir: string): string {
  const i = Math.max(dir.lastIndexOf("/"), dir.lastIndexOf("\\"));
  return i > 0 ? dir.slice(0, i) : dir;
}

function rank(name: string): number {
  if (name === "learning rate") return 2;
  if (name.startsWith("throughput")) return 3;
  if (name.startsWith("system usage")) return 4;
  return name === "loss" ? 0 : 1;
}
