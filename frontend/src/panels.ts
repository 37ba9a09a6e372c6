// panels.ts: the Devices, Variables, Model and Checkpoints panels.

import type { Transport } from "./transport";
import type { RunInfo } from "./runs";
import { runScripts } from "./outputs";
import { el, errText, fmtBytes, throttle } from "./util";
import { emptyNote, watched, watchedError, watchingLine } from "./watched";
import "./variables.css";
import { exportControls, graphNote, type CheckpointEntry } from "./export";

function errorBox(id: string): HTMLElement {
  return el("div", { id, class: "error-box", hidden: "" });
}

function setError(box: HTMLElement, msg: string) {
  box.hidden = msg === "";
  box.textContent = msg;
}

function table(id: string, heads: string[]): { table: HTMLElement; body: HTMLElement } {
  const body = el("tbody", { id });
  return { table: el("table", { class: "grid" }, el("thead", {}, el("tr", {}, ...heads.map((h) => el("th", {}, h)))), body), body };
}

/** DevicesPanel lists the kernel's devices; choosing one sets the default. */
export class DevicesPanel {
  private body: HTMLElement;
  private err = errorBox("devices-error");
  constructor(private t: Transport, root: HTMLElement) {
    const tb = table("devices-list", ["", "device", "kind", "model", "vendor", "memory", "cores", "details", ""]);
    this.body = tb.body;
    const refresh = el("button", { id: "devices-refresh" }, "↻");
    refresh.onclick = () => this.refresh();
    root.append(el("div", { class: "toolbar" }, refresh, el("span", { class: "muted" }, "The chosen device is the kernel's default for new tensors.")), this.err, tb.table);
  }
  async refresh() {
    try {
      const r = await this.t.call<{ devices: any[] }>("devices.list");
      this.body.replaceChildren(
        ...(r.devices ?? []).map((d) => {
          const use = el("button", { class: "device-use" }, d.default ? "default" : "Use");
          if (d.default || d.error) use.setAttribute("disabled", "");
          if (d.error) use.setAttribute("title", "unavailable: " + d.error);
          use.onclick = () => this.choose(d.name);
          return el(
            "tr",
            { class: "device-row", "data-device": d.name, "data-default": String(!!d.default), "data-available": String(!d.error) },
            el("td", {}, d.default ? "●" : ""),
            el("td", { class: "device-name" }, d.name),
            el("td", {}, d.kind ?? ""),
            el("td", {}, d.model ?? ""),
            el("td", {}, (d.vendor ?? "") + (d.software && !(d.vendor ?? "").includes("software") ? " (software)" : "")),
            el("td", {}, typeof d.memory === "number" ? (d.memory ? fmtBytes(d.memory) : "") : String(d.memory ?? "")),
            el("td", {}, d.cores ? String(d.cores) : ""),
            el("td", { class: d.error ? "device-error" : "" }, d.error ? "unavailable: " + d.error : [d.detail ?? d.status ?? "", d.not_default ? "not the default: " + d.not_default : ""].filter((x) => x).join("; ")),
            el("td", {}, use),
          );
        }),
      );
      setError(this.err, "");
    } catch (e) {
      setError(this.err, "cannot list devices: " + errText(e));
    }
  }
  async choose(name: string) {
    try {
      await this.t.call("devices.set", { name });
      await this.refresh();
    } catch (e) {
      setError(this.err, `cannot use ${name}: ${errText(e)}`);
    }
  }
}

/** VarInfo is one variable as the kernel summarises it (kernel.VariableInfo). */
interface VarInfo {
  name: string;
  type?: string;
  kind?: string;
  value?: string;
  shape?: number[];
  dtype?: string;
  device?: string;
  bytes?: number;
  params?: number;
  len?: number;
}

/** VarDetail is the richer view of one variable (kernel.VariableDetail). */
interface VarDetail extends VarInfo {
  values?: string;
  parameters?: { name: string; shape: number[]; dtype: string; device: string; count: number; trainable: boolean }[];
  elements?: VarInfo[];
  more?: number;
}

/** VarList is variables.list's answer: the variables as of cell `cell`,
 *  with cell `running` running when busy. */
interface VarList {
  variables?: VarInfo[];
  cell?: number;
  busy?: boolean;
  running?: number;
  live?: boolean;
}

/** rawDump matches Go's %v of a pointer or struct (`&{0xc000…`), which the
 *  panel never shows. */
const rawDump = /&\{0x[0-9a-f]+|^\{0x[0-9a-f]+/;

function shapeText(v: VarInfo): string {
  if (v.shape) return v.shape.length ? `[${v.shape.join(", ")}]` : "[] (scalar)";
  return v.dtype ? "[] (scalar)" : "";
}

function summary(v: VarInfo): string {
  const s = v.value ?? "";
  return rawDump.test(s) ? "" : s;
}

/** VariablesPanel lists the kernel session's variables with their
 *  summaries at once, from the kernel's snapshot when a cell is running
 *  (marked "as of cell N; running cell M…"), and expands a row on click
 *  into its values, parameter table or elements. */
export class VariablesPanel {
  private body: HTMLElement;
  private err = errorBox("variables-error");
  private state = el("span", { id: "variables-state", class: "muted" });
  private seq = 0;
  private open = new Set<string>();
  names: string[] = [];
  constructor(private t: Transport, root: HTMLElement) {
    const tb = table("variables-list", ["", "name", "type", "value", "shape", "dtype", "device", "memory", "parameters"]);
    this.body = tb.body;
    const refresh = el("button", { id: "variables-refresh", title: "refresh" }, "↻");
    refresh.onclick = () => this.refresh();
    root.append(el("div", { class: "toolbar" }, refresh, this.state), this.err, tb.table);
  }
  async refresh() {
    const seq = ++this.seq;
    const started = performance.now();
    this.state.dataset.state = "loading";
    if (!this.body.childElementCount) this.state.textContent = "listing variables…";
    try {
      const r = await this.t.call<VarList>("variables.list");
      const answered = performance.now();
      if (seq !== this.seq) return; // a newer refresh answers
      const vars = r.variables ?? [];
      this.names = vars.map((v) => v.name);
      const rows: HTMLElement[] = [];
      for (const v of vars) {
        rows.push(this.row(v));
        if (this.open.has(v.name)) rows.push(this.detailRow(v.name));
      }
      this.body.replaceChildren(...rows);
      this.body.dataset.count = String(vars.length);
      this.body.dataset.ms = String(Math.round(answered - started));
      this.body.dataset.renderMs = String(Math.round(performance.now() - answered));
      for (const n of this.open) if (this.names.includes(n)) this.expand(n);
      this.showState(r, vars.length);
      setError(this.err, "");
    } catch (e) {
      if (seq !== this.seq) return;
      this.state.dataset.state = "error";
      this.state.textContent = "";
      setError(this.err, "cannot list variables: " + errText(e));
    }
  }
  private showState(r: VarList, n: number) {
    const count = n === 1 ? "1 variable" : `${n} variables`;
    this.state.dataset.state = r.busy ? "stale" : "live";
    this.state.dataset.cell = String(r.cell ?? 0);
    this.state.dataset.running = String(r.running ?? 0);
    if (r.busy) {
      const asOf = r.cell ? `as of cell ${r.cell}` : "as of the kernel's start";
      const running = r.running ? `running cell ${r.running}…` : "a cell is running…";
      this.state.replaceChildren(el("span", { class: "var-running" }, running), ` ${count} ${asOf}; refreshed when it finishes`);
    } else {
      this.state.textContent = n ? `${count}${r.cell ? ` after cell ${r.cell}` : ""}; click a row for more` : "no variables yet: run a cell that declares some";
    }
  }
  private row(v: VarInfo): HTMLElement {
    const toggle = el("span", { class: "var-toggle" }, this.open.has(v.name) ? "▾" : "▸");
    const params = v.params ? Number(v.params).toLocaleString() : v.len != null && v.kind !== "tensor" ? `len ${v.len}` : "";
    const tr = el(
      "tr",
      { class: "var-row", "data-name": v.name, "data-kind": v.kind ?? "", "data-device": v.device ?? "", "data-open": String(this.open.has(v.name)) },
      el("td", {}, toggle),
      el("td", { class: "var-name" }, v.name),
      el("td", { class: "var-type" }, v.type ?? ""),
      el("td", { class: "var-value" }, summary(v)),
      el("td", { class: "var-shape" }, shapeText(v)),
      el("td", {}, v.dtype ?? ""),
      el("td", {}, v.device ?? ""),
      el("td", {}, v.bytes ? fmtBytes(v.bytes) : ""),
      el("td", { class: "var-params" }, params),
    );
    tr.onclick = () => this.toggle(v.name);
    return tr;
  }
  private detailRow(name: string): HTMLElement {
    return el("tr", { class: "var-detail", "data-name": name }, el("td", { colspan: "9" }, el("span", { class: "muted" }, "loading…")));
  }
  /** toggle expands or collapses the variable's detail row. */
  toggle(name: string) {
    const row = this.body.querySelector<HTMLElement>(`tr.var-row[data-name="${CSS.escape(name)}"]`);
    if (!row) return;
    const next = row.nextElementSibling as HTMLElement | null;
    if (this.open.has(name)) {
      this.open.delete(name);
      if (next?.classList.contains("var-detail")) next.remove();
      row.dataset.open = "false";
      row.querySelector(".var-toggle")!.textContent = "▸";
      return;
    }
    this.open.add(name);
    row.dataset.open = "true";
    row.querySelector(".var-toggle")!.textContent = "▾";
    row.after(this.detailRow(name));
    this.expand(name);
  }
  /** expand fills the detail row of name with the kernel's richer view; a
   *  busy kernel says so instead of waiting. */
  async expand(name: string) {
    const cellOf = () => this.body.querySelector<HTMLElement>(`tr.var-detail[data-name="${CSS.escape(name)}"] td`);
    let content: HTMLElement;
    try {
      const d = await this.t.call<VarDetail>("variables.inspect", { name });
      content = this.detail(d);
    } catch (e) {
      const msg = errText(e);
      content = el("div", { class: /busy/.test(msg) ? "var-busy muted" : "error-box" }, msg);
    }
    const td = cellOf();
    if (td) td.replaceChildren(content);
  }
  private detail(d: VarDetail): HTMLElement {
    const box = el("div", { class: "var-detail-box" });
    if (d.values) box.append(el("pre", { class: "var-values" }, d.values));
    if (d.parameters?.length) {
      const total = d.parameters.reduce((a, p) => a + p.count, 0);
      box.append(
        el("div", { class: "muted" }, `${d.type ?? ""}: ${d.parameters.length} parameter tensors, ${total.toLocaleString()} parameters`),
        el(
          "table",
          { class: "grid var-params-table" },
          el("thead", {}, el("tr", {}, ...["parameter", "shape", "dtype", "device", "count", "trainable"].map((h) => el("th", {}, h)))),
          el(
            "tbody",
            {},
            ...d.parameters.map((p) =>
              el("tr", { class: "var-param" }, el("td", {}, p.name), el("td", {}, `[${(p.shape ?? []).join(", ")}]`), el("td", {}, p.dtype), el("td", {}, p.device), el("td", {}, p.count.toLocaleString()), el("td", {}, p.trainable ? "yes" : "no")),
            ),
          ),
        ),
      );
    }
    if (d.elements?.length) {
      box.append(
        el(
          "table",
          { class: "grid var-elements" },
          el("thead", {}, el("tr", {}, ...["element", "type", "value"].map((h) => el("th", {}, h)))),
          el("tbody", {}, ...d.elements.map((e) => el("tr", { class: "var-element" }, el("td", {}, e.name), el("td", {}, e.type ?? ""), el("td", {}, summary(e) || shapeText(e))))),
        ),
      );
      if (d.more) box.append(el("div", { class: "muted" }, `… and ${d.more.toLocaleString()} more`));
    }
    if (!box.childElementCount) box.append(el("span", { class: "muted" }, summary(d) || `${d.type ?? ""}: nothing more to show`));
    return box;
  }
}

/** ModelInfo is a module of the session, as `%who --json` lists it. */
interface ModelInfo {
  name: string;
  type?: string;
  params?: number;
}

/** ModelPanel offers the session's modules (the variables with parameters)
 *  to pick, and shows the chosen one's module tree and computation graph. */
export class ModelPanel {
  private pick: HTMLSelectElement;
  private example: HTMLInputElement;
  private tree = el("div", { id: "model-tree" });
  private graph = el("div", { id: "model-graph" });
  private err = errorBox("model-error");
  private none = el("div", { id: "model-none", class: "muted", hidden: "" }, "No module in the session yet: define one in a notebook cell (e.g. net := nn.NewSequential(…)) and it is offered here.");
  /** models are the modules last listed. */
  models: ModelInfo[] = [];
  constructor(private t: Transport, root: HTMLElement) {
    this.pick = el("select", { id: "model-name", title: "the session's modules" }) as HTMLSelectElement;
    this.example = el("input", { id: "model-input", placeholder: "example input (Go expression; optional)", size: "40" }) as HTMLInputElement;
    const refresh = el("button", { id: "model-refresh", title: "List the session's modules again" }, "↻");
    refresh.onclick = () => this.refresh();
    const show = el("button", { id: "model-show" }, "Show");
    show.onclick = () => this.show(this.pick.value);
    this.pick.onchange = () => this.show(this.pick.value);
    this.example.onkeydown = (e) => e.key === "Enter" && this.show(this.pick.value);
    root.append(
      el("div", { class: "toolbar" }, "Module ", this.pick, refresh, this.example, show),
      this.err,
      this.none,
      el("div", { class: "model-split" }, el("section", {}, el("h3", {}, "Module tree"), this.tree), el("section", {}, el("h3", {}, "Graph"), this.graph)),
    );
  }
  /** refresh lists the session's modules (variables with parameters); the
   *  module picked stays picked while it exists. */
  async refresh() {
    try {
      const r = await this.t.call<{ variables: ModelInfo[] }>("variables.list");
      this.models = (r.variables ?? []).filter((v) => (v.params ?? 0) > 0);
    } catch (e) {
      setError(this.err, "cannot list the session's modules: " + errText(e));
      return;
    }
    const cur = this.pick.value;
    this.pick.replaceChildren(
      el("option", { value: "" }, this.models.length ? "choose a module…" : "(no modules)"),
      ...this.models.map((m) => el("option", { value: m.name, class: "model-option" }, `${m.name} · ${m.type ?? ""} · ${Number(m.params).toLocaleString()} params`)),
    );
    if (this.models.some((m) => m.name === cur)) this.pick.value = cur;
    this.none.hidden = this.models.length > 0;
    this.pick.dataset.count = String(this.models.length);
  }
  async show(name: string) {
    if (!name) return;
    const msgs: string[] = [];
    this.tree.replaceChildren();
    this.graph.replaceChildren();
    this.tree.dataset.name = this.graph.dataset.name = name;
    await Promise.all([
      this.t
        .call<{ html: string }>("model.tree", { name })
        .then((r) => {
          this.tree.innerHTML = r.html ?? "";
          runScripts(this.tree);
        })
        .catch((e) => msgs.push("tree: " + errText(e))),
      this.t
        .call<{ svg: string }>("model.graph", this.example.value.trim() ? { name, input: this.example.value.trim() } : { name })
        .then((r) => {
          this.graph.innerHTML = r.svg ?? "";
        })
        .catch((e) => msgs.push("graph: " + errText(e))),
    ]);
    setError(this.err, msgs.join("\n"));
  }
}

/** CheckpointsPanel lists a run's checkpoints and exports one. While it is
 *  shown it follows the engine: new runs join the run list, and a
 *  checkpoint the chosen run writes joins the table. */
export class CheckpointsPanel {
  private run: HTMLSelectElement;
  private out: HTMLInputElement;
  private body: HTMLElement;
  private result = el("div", { id: "ckpt-result" });
  private err = errorBox("ckpt-error");
  private watching = el("div", { id: "ckpt-watching", class: "muted" });
  private empty = el("div", { id: "ckpt-empty", hidden: "" });
  private graphHint = el("div", { id: "ckpt-graph" });
  private runsCount = 0;
  constructor(private t: Transport, private root: HTMLElement) {
    this.run = el("select", { id: "ckpt-run" }) as HTMLSelectElement;
    this.run.onchange = () => this.list();
    this.out = el("input", { id: "ckpt-out", placeholder: "export to (path ending in .safetensors)", size: "50" }) as HTMLInputElement;
    const refresh = el("button", { id: "ckpt-refresh" }, "↻");
    refresh.onclick = () => this.refresh();
    const tb = table("ckpt-list", ["checkpoint", "epoch", "step", "metrics", "status", "", "any format"]);
    this.body = tb.body;
    root.append(el("div", { class: "toolbar" }, "Run ", this.run, refresh, " Export to ", this.out), this.watching, this.err, this.empty, this.result, this.graphHint, tb.table);
    const runsSoon = throttle(() => this.refreshRuns(), 500);
    const listSoon = throttle(() => this.list(), 500);
    t.subscribe((u) => {
      if (this.root.hidden) return;
      if (u.topic === "runs.changed") runsSoon();
      else if (u.topic === "run.update") {
        if (!Array.from(this.run.options).some((o) => o.value === u.data?.dir)) runsSoon();
        else if (u.data?.dir === this.run.value && (u.data?.record?.kind === "checkpoint" || u.data?.record?.kind === "end")) listSoon();
      }
    });
  }
  async refresh() {
    if (await this.refreshRuns()) await this.list();
  }
  /** refreshRuns lists the runs in the run chooser; it lists the chosen
   *  run's checkpoints again when the choice changed, and reports whether
   *  the runs could be listed. */
  private async refreshRuns(): Promise<boolean> {
    let runs: RunInfo[];
    try {
      runs = (await this.t.call<RunInfo[]>("runs.list")) ?? [];
    } catch (e) {
      setError(this.err, "cannot list runs: " + errText(e));
      return false;
    }
    const cur = this.run.value;
    const same = runs.length === this.run.options.length && runs.every((r, i) => this.run.options[i].value === r.dir);
    if (!same) {
      this.run.replaceChildren(...runs.map((r) => el("option", { value: r.dir, title: r.dir }, r.name || r.dir)));
      if (runs.some((r) => r.dir === cur)) this.run.value = cur;
    }
    this.runsCount = runs.length;
    this.showWatched();
    if (this.run.value !== cur) await this.list();
    return true;
  }
  /** showWatched says which folders are watched: in full while there is no run. */
  private async showWatched() {
    try {
      const w = await watched(this.t);
      this.watching.textContent = watchingLine(w);
      this.empty.hidden = this.runsCount > 0;
      if (!this.empty.hidden) this.empty.replaceChildren(emptyNote(w, this.t.kind, "runs, so no checkpoints"));
    } catch (e) {
      this.watching.textContent = watchedError(e);
    }
  }
  /** select shows the checkpoints of run dir. */
  async select(dir: string) {
    await this.refresh();
    this.run.value = dir;
    await this.list();
  }
  async list() {
    const dir = this.run.value;
    this.body.replaceChildren();
    this.graphHint.replaceChildren();
    if (this.result.dataset.dir !== dir) {
      this.result.textContent = "";
      delete this.result.dataset.state;
    }
    this.result.dataset.dir = dir;
    if (!dir) return;
    try {
      const cks = (await this.t.call<any[]>("checkpoints.list", { dir })) ?? [];
      if (dir !== this.run.value) return; // another run was chosen meanwhile
      if (!cks.length) {
        const note = `no checkpoints in ${dir}/checkpoints yet: a run with a RunDir writes one after each epoch by default (train.Checkpoints sets when)`;
        this.body.replaceChildren(el("tr", { id: "ckpt-none" }, el("td", { colspan: "7", class: "muted" }, note)));
        setError(this.err, "");
        return;
      }
      this.body.replaceChildren(
        ...cks.map((c) => {
          const exp = el("button", { class: "ckpt-export" }, "Export");
          if (c.error) exp.setAttribute("disabled", "");
          exp.onclick = () => this.export(c.path);
          const metrics = Object.entries(c.metrics ?? {})
            .map(([k, v]) => `${k}=${typeof v === "number" ? +v.toPrecision(4) : v}`)
            .join("  ");
          return el(
            "tr",
            { class: "ckpt-row", "data-path": c.path, "data-damaged": String(!!c.error) },
            el("td", {}, (c.name || String(c.path).split("/").pop()) + (c.best ? " ★ best" : "")),
            el("td", {}, String(c.epoch ?? "")),
            el("td", {}, String(c.step ?? "")),
            el("td", {}, metrics),
            c.error ? el("td", { class: "ckpt-error error-text" }, c.error) : el("td", {}, "ok"),
            el("td", {}, exp),
            el("td", {}, exportControls(this.t, c as CheckpointEntry)),
          );
        }),
      );
      const hint = graphNote(cks as CheckpointEntry[]);
      if (hint) this.graphHint.replaceChildren(hint);
      setError(this.err, "");
    } catch (e) {
      setError(this.err, "cannot list checkpoints: " + errText(e));
    }
  }
  async export(path: string) {
    const out = this.out.value.trim();
    if (!out) {
      setError(this.err, "choose a path to export to first");
      return;
    }
    this.result.dataset.state = "exporting";
    this.result.textContent = "exporting…";
    try {
      const r = await this.t.call<{ out: string; bytes: number }>("checkpoints.export", { path, format: "safetensors", out });
      this.result.dataset.state = "done";
      this.result.dataset.out = r.out;
      this.result.textContent = `exported ${fmtBytes(r.bytes)} to ${r.out}`;
      setError(this.err, "");
    } catch (e) {
      this.result.dataset.state = "error";
      this.result.textContent = "";
      setError(this.err, "export failed: " + errText(e));
    }
  }
}
