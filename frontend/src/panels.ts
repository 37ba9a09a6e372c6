// panels.ts: the Devices, Variables, Model and Checkpoints panels.

import type { Transport } from "./transport";
import type { RunInfo } from "./runs";
import { runScripts } from "./outputs";
import { el, errText, fmtBytes, throttle } from "./util";
import { emptyNote, watched, watchedError, watchingLine } from "./watched";

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
    const tb = table("devices-list", ["", "device", "kind", "model", "memory", "cores", "details", ""]);
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
          if (d.default) use.setAttribute("disabled", "");
          use.onclick = () => this.choose(d.name);
          return el(
            "tr",
            { class: "device-row", "data-device": d.name, "data-default": String(!!d.default) },
            el("td", {}, d.default ? "●" : ""),
            el("td", { class: "device-name" }, d.name),
            el("td", {}, d.kind ?? ""),
            el("td", {}, d.model ?? ""),
            el("td", {}, typeof d.memory === "number" ? (d.memory ? fmtBytes(d.memory) : "") : String(d.memory ?? "")),
            el("td", {}, d.cores ? String(d.cores) : ""),
            el("td", {}, d.detail ?? d.status ?? ""),
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

/** VariablesPanel lists the kernel session's variables. */
export class VariablesPanel {
  private body: HTMLElement;
  private err = errorBox("variables-error");
  names: string[] = [];
  constructor(private t: Transport, root: HTMLElement) {
    const tb = table("variables-list", ["name", "type", "value", "shape", "dtype", "device", "memory", "parameters"]);
    this.body = tb.body;
    const refresh = el("button", { id: "variables-refresh" }, "↻");
    refresh.onclick = () => this.refresh();
    root.append(el("div", { class: "toolbar" }, refresh), this.err, tb.table);
  }
  async refresh() {
    try {
      const r = await this.t.call<{ variables: any[] }>("variables.list");
      const vars = r.variables ?? [];
      this.names = vars.map((v) => v.name);
      this.body.replaceChildren(
        ...vars.map((v) =>
          el(
            "tr",
            { class: "var-row", "data-name": v.name, "data-device": v.device ?? "" },
            el("td", { class: "var-name" }, v.name),
            el("td", {}, v.type ?? ""),
            el("td", { class: "var-value" }, v.value ?? ""),
            el("td", {}, v.shape ? `[${v.shape.join(", ")}]` : v.dtype ? "[] (scalar)" : ""),
            el("td", {}, v.dtype ?? ""),
            el("td", {}, v.device ?? ""),
            el("td", {}, fmtBytes(v.bytes)),
            el("td", {}, v.params != null ? Number(v.params).toLocaleString() : ""),
          ),
        ),
      );
      setError(this.err, "");
    } catch (e) {
      setError(this.err, "cannot list variables: " + errText(e));
    }
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
  private runsCount = 0;
  constructor(private t: Transport, private root: HTMLElement) {
    this.run = el("select", { id: "ckpt-run" }) as HTMLSelectElement;
    this.run.onchange = () => this.list();
    this.out = el("input", { id: "ckpt-out", placeholder: "export to (path ending in .safetensors)", size: "50" }) as HTMLInputElement;
    const refresh = el("button", { id: "ckpt-refresh" }, "↻");
    refresh.onclick = () => this.refresh();
    const tb = table("ckpt-list", ["checkpoint", "epoch", "step", "metrics", "status", ""]);
    this.body = tb.body;
    root.append(el("div", { class: "toolbar" }, "Run ", this.run, refresh, " Export to ", this.out), this.watching, this.err, this.empty, this.result, tb.table);
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
        this.body.replaceChildren(el("tr", { id: "ckpt-none" }, el("td", { colspan: "6", class: "muted" }, note)));
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
          );
        }),
      );
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
