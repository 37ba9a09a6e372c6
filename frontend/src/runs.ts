// runs.ts: the Runs panel. It lists every run the engine follows, and shows
// one run (or several, compared side by side) as live charts: each metric
// (train vs valid), the learning rate, throughput and system usage, with
// progress, an ETA and a Stop button. Per-step series are smoothed as
// TensorBoard smooths them (a debiased exponential moving average, the raw
// values faint behind, a slider for the weight), a chart whose series are
// all constant (a fixed learning rate) shows as a value card instead, and
// one run's view lists its checkpoints with their export controls. A view fetches runs.snapshot, then
// applies run.update records from the snapshot's `next` on, so opening it
// late loses nothing. Redraws are throttled (never debounced), so a run
// that logs every few milliseconds still charts while it runs.

import * as echarts from "echarts";
import type { Transport } from "./transport";
import { el, errText, fmtDuration, throttle, throttleByCost } from "./util";
import { type CheckpointEntry, exportControls, graphNote } from "./export";
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
  /** The series ("chart\0series") logged per step, which the view smooths. */
  stepSeries = new Set<string>();
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
        for (const [k, v] of Object.entries(r.metrics ?? {})) {
          this.add(k, "train", [r.step, num(v)]);
          this.stepSeries.add(k + "\u0000train");
        }
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

/** smooth returns the exponential moving average of a series' values with
 *  weight w in [0, 1) (0: the values themselves), debiased as TensorBoard
 *  does (the early values are not pulled towards 0); values that are not
 *  finite pass through and do not enter the average. It is viz.Smooth. */
export function smooth(pts: Pt[], w: number): Pt[] {
  w = Math.max(0, Math.min(w, 0.999));
  let avg = 0;
  let weight = 0;
  return pts.map(([x, y]): Pt => {
    if (!isFinite(y)) return [x, y];
    avg = avg * w + (1 - w) * y;
    weight = weight * w + (1 - w);
    return [x, avg / weight];
  });
}

/** constantValue returns the one value a series holds (its finite values
 *  all equal), or undefined. */
function constantValue(pts: Pt[]): number | undefined {
  let v: number | undefined;
  for (const [, y] of pts) {
    if (!isFinite(y)) continue;
    if (v === undefined) v = y;
    else if (y !== v) return undefined;
  }
  return v;
}

/** fmtValue formats a value card's number: 4 significant digits. */
function fmtValue(v: number): string {
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a >= 1e-3 && a < 1e6) return String(+v.toPrecision(4));
  return v.toExponential(3).replace(/\.?0+e/, "e");
}

/** defaultSmoothing is the smoothing slider's first value, as the notebook dashboard's. */
const defaultSmoothing = 0.6;

/** seriesColors colour a single run's series, one per series name. */
const seriesColors = ["#2563eb", "#ea580c", "#16a34a", "#9333ea", "#dc2626", "#0891b2"];

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
  private redrawHead: () => void;
  private errorBox: HTMLElement;
  private rows = new Map<string, Row>();
  private dirty = new Set<string>(); // rows whose run changed since they were drawn
  private paintRows: () => void;
  private refreshSoon: () => void;
  private watching: HTMLElement;
  private empty: HTMLElement;
  private values: HTMLElement;
  private smoothing = defaultSmoothing;
  private smoothingValue: HTMLElement;
  private controls: HTMLElement;
  private checkpoints: HTMLElement;
  private listCheckpointsSoon: () => void;

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
    this.values = el("div", { id: "run-values", class: "run-values" });
    this.checkpoints = el("div", { id: "run-checkpoints", hidden: "" });
    const saved = Number(localStorage.getItem("kiln.smoothing"));
    if (localStorage.getItem("kiln.smoothing") !== null && saved >= 0 && saved <= 0.99) this.smoothing = saved;
    const slider = el("input", { id: "run-smoothing", type: "range", min: "0", max: "0.99", step: "0.01", value: String(this.smoothing) }) as HTMLInputElement;
    this.smoothingValue = el("span", { id: "run-smoothing-value" }, this.smoothing.toFixed(2));
    slider.oninput = () => this.setSmoothing(Number(slider.value));
    this.controls = el(
      "div",
      { class: "run-controls", hidden: "" },
      el("label", { title: "weight of the exponential moving average drawn over per-step series (0: none); the raw values stay faint behind" }, "smoothing ", slider, " ", this.smoothingValue),
    );
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
      el("div", { id: "run-view" }, this.head, this.controls, this.legend, this.values, this.view, this.checkpoints),
    );
    // At most 4 times a second, and at most a fifth of the page's time: a
    // long run's charts get slower to draw, and the table must keep up.
    this.redraw = throttleByCost(() => this.draw(), 250, 0.2);
    // The progress lines are cheap: they follow the log as the table does,
    // whatever the charts cost.
    this.redrawHead = throttle(() => this.drawHead(), 100);
    this.paintRows = throttle(() => {
      for (const dir of this.dirty) {
        const info = this.runs.find((r) => r.dir === dir);
        if (info) this.row(info);
      }
      this.dirty.clear();
    }, 100);
    this.refreshSoon = throttle(() => this.refresh(), 500);
    this.listCheckpointsSoon = throttle(() => this.listCheckpoints(), 1000);
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
    this.values.replaceChildren();
    this.controls.hidden = false;
    this.checkpoints.replaceChildren();
    this.checkpoints.hidden = dirs.length !== 1;
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
    if (shown === this.shown) {
      this.draw();
      if (shown.length === 1) this.listCheckpoints();
    }
  }

  /** setSmoothing sets the smoothing slider's weight and redraws. */
  setSmoothing(w: number) {
    this.smoothing = Math.max(0, Math.min(0.99, w));
    this.smoothingValue.textContent = this.smoothing.toFixed(2);
    const slider = document.getElementById("run-smoothing") as HTMLInputElement | null;
    if (slider && Number(slider.value) !== this.smoothing) slider.value = String(this.smoothing);
    localStorage.setItem("kiln.smoothing", String(this.smoothing));
    this.draw();
  }

  /** listCheckpoints lists the checkpoints of the run shown alone, each with
   *  its export controls. */
  private async listCheckpoints() {
    if (this.shown.length !== 1) return;
    const dir = this.shown[0].dir;
    let cks: CheckpointEntry[];
    try {
      cks = (await this.t.call<CheckpointEntry[]>("checkpoints.list", { dir })) ?? [];
    } catch (e) {
      if (this.shown.length === 1 && this.shown[0].dir === dir) this.checkpoints.replaceChildren(el("div", { class: "error-text" }, "cannot list checkpoints: " + errText(e)));
      return;
    }
    if (this.shown.length !== 1 || this.shown[0].dir !== dir) return;
    if (!cks.length) {
      this.checkpoints.replaceChildren(el("h3", {}, "Checkpoints"), el("div", { class: "muted", id: "run-checkpoints-none" }, "no checkpoints yet"));
      return;
    }
    const rows = cks.map((c: any) =>
      el(
        "tr",
        { class: "run-ckpt", "data-path": c.path },
        el("td", {}, (c.name || String(c.path).split("/").pop()) + (c.best ? " ★ best" : "")),
        el("td", {}, String(c.epoch ?? "")),
        el("td", {}, String(c.step ?? "")),
        c.error ? el("td", { class: "error-text" }, c.error) : el("td", {}, "ok"),
        el("td", {}, exportControls(this.t, c)),
      ),
    );
    const note = graphNote(cks);
    this.checkpoints.replaceChildren(
      el("h3", {}, "Checkpoints"),
      el(
        "table",
        { class: "grid run-ckpt-table" },
        el("thead", {}, el("tr", {}, ...["checkpoint", "epoch", "step", "", "export"].map((h) => el("th", {}, h)))),
        el("tbody", {}, ...rows),
      ),
      ...(note ? [note] : []),
    );
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
        if (u.record?.kind === "checkpoint" && this.shown.length === 1) this.listCheckpointsSoon();
      }
    }
    if (hit) {
      this.redrawHead();
      this.redraw();
    }
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
    this.drawHead();
    this.drawCharts();
  }

  /** drawHead draws the progress lines, one per run shown. */
  private drawHead() {
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
  }

  /** drawCharts draws the value cards, the legend and the charts. */
  private drawCharts() {
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
    // One chart per metric, every run's series in it; a metric whose
    // series are all constant is a value card instead.
    const names = new Set<string>();
    this.shown.forEach((d) => d.series.forEach((_s, k) => names.add(k)));
    const order = [...names].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
    const cards: HTMLElement[] = [];
    let added = false;
    for (const name of order) {
      const card = this.valueCard(name, compare, color);
      let c = this.charts.get(name);
      if (card) {
        cards.push(card);
        if (c) {
          c.chart.dispose();
          c.box.remove();
          this.charts.delete(name);
        }
        continue;
      }
      if (!c) {
        const box = el("div", { class: "run-chart", "data-metric": name });
        this.view.append(box);
        c = { chart: echarts.init(box, null, { renderer: "canvas" }), box };
        this.charts.set(name, c);
        added = true;
      }
      const series: any[] = [];
      let points = 0;
      let lo = Infinity;
      let hi = -Infinity;
      const colourOf = new Map<string, number>(); // series name → colour index, one run shown
      for (const d of this.shown) {
        for (const [s, pts] of d.series.get(name) ?? []) {
          points += pts.length;
          const data = pts.filter((p) => isFinite(p[1]));
          for (const p of data) {
            lo = Math.min(lo, p[1]);
            hi = Math.max(hi, p[1]);
          }
          if (!colourOf.has(s)) colourOf.set(s, colourOf.size);
          const col = compare ? color.get(d.dir)! : seriesColors[colourOf.get(s)! % seriesColors.length];
          const base = {
            type: "line",
            color: col,
            itemStyle: { color: col },
            showSymbol: data.length < 50,
            sampling: "lttb", // thousands of points drawn as the few hundred that show
          };
          const label = compare ? `${d.name} ${s}` : s;
          const type = compare ? lineType(s) : "solid";
          const id = `${d.dir}\u0000${s}`;
          if (d.stepSeries.has(name + "\u0000" + s) && this.smoothing > 0) {
            // The raw values faint behind the smoothed ones, under the same
            // name: the legend shows and hides both.
            series.push({ ...base, id: id + "\u0000raw", name: label, data, silent: true, showSymbol: false, lineStyle: { color: col, type, opacity: 0.25, width: 1 }, z: 1, tooltip: { show: false } });
            series.push({ ...base, id, name: label, data: smooth(data, this.smoothing), showSymbol: false, lineStyle: { color: col, type, width: 2 }, z: 2 });
          } else {
            series.push({ ...base, id, name: label, data, lineStyle: { color: col, type } });
          }
        }
      }
      c.box.dataset.points = String(points);
      c.box.dataset.smoothing = String(this.smoothing);
      // Accuracy-like metrics stay within [0, 1] when their values do.
      const unit = /acc|precision|recall|f1/i.test(name) && lo >= 0 && hi <= 1 ? { min: 0, max: 1 } : {};
      c.chart.setOption(
        {
          animation: false,
          title: { text: name, left: "center", textStyle: { fontSize: 13 } },
          tooltip: { trigger: "axis" },
          legend: { show: !compare, bottom: 0, type: "scroll" },
          grid: { left: 55, right: 20, top: 35, bottom: compare ? 35 : 60 },
          xAxis: { type: "value", name: name.startsWith("system usage") ? "seconds" : "step", nameLocation: "middle", nameGap: 22, scale: true },
          yAxis: { type: "value", scale: true, name: unitOf(name), ...unit },
          series,
        },
        { replaceMerge: ["series"] },
      );
    }
    this.values.replaceChildren(...cards);
    this.controls.hidden = !this.shown.some((d) => d.stepSeries.size > 0);
    // Charts keep the metrics' order when one comes back from a card.
    if (added) this.view.append(...order.flatMap((n) => (this.charts.has(n) ? [this.charts.get(n)!.box] : [])));
  }

  /** valueCard returns the card that stands for a chart whose series, in
   *  every run shown, are all constant ("lr 0.001 (constant)"), or null
   *  when one of them varies. */
  private valueCard(name: string, compare: boolean, color: Map<string, string>): HTMLElement | null {
    const items: HTMLElement[] = [];
    let n = 0;
    let x = 0;
    for (const d of this.shown) {
      for (const [s, pts] of d.series.get(name) ?? []) {
        const v = constantValue(pts);
        if (v === undefined) return null;
        n = Math.max(n, pts.length);
        x = pts[0][0];
        const label = rank(name) >= 2 ? s : `${name} ${s}`; // "lr", "samples/s", "cpu_percent"; "accuracy valid"
        items.push(
          el(
            "span",
            { class: "run-value-item", "data-dir": d.dir, "data-series": s, "data-value": String(v) },
            ...(compare ? [el("span", { class: "legend-swatch", style: `background: ${color.get(d.dir)}` })] : []),
            el("span", { class: "run-value-name" }, label),
            " ",
            el("span", { class: "run-value-num" }, fmtValue(v)),
          ),
        );
      }
    }
    if (!items.length) return null;
    const note = n > 1 ? "constant" : (name.startsWith("system usage") ? "at " + x + " s" : "at step " + x);
    return el("div", { class: "run-value", "data-metric": name, "data-note": note, title: name }, ...items, el("span", { class: "run-value-note muted" }, `(${note})`));
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
