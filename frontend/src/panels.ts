// panels.ts: the Devices, Variables, Model and Checkpoints panels.

import type { Transport } from "./transport";
import type { RunInfo } from "./runs";
import { runScripts } from "./outputs";
import { el, errText, fmtBytes } from "./util";

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
    const tb = table("devices-list", ["", "device", "kind", "memory", "cores", "status", ""]);
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
            el("td", {}, typeof d.memory === "number" ? fmtBytes(d.memory) : String(d.memory ?? "")),
            el("td", {}, String(d.cores ?? "")),
            el("td", {}, d.status ?? ""),
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
  models: string[] = [];
  constructor(private t: Transport, root: HTMLElement) {
    const tb = table("variables-list", ["name", "type", "shape", "dtype", "device", "memory", "parameters"]);
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
      this.models = vars.filter((v) => v.params != null).map((v) => v.name);
      this.body.replaceChildren(
        ...vars.map((v) =>
          el(
            "tr",
            { class: "var-row", "data-name": v.name, "data-device": v.device ?? "" },
            el("td", { class: "var-name" }, v.name),
            el("td", {}, v.type ?? ""),
            el("td", {}, v.shape ? `[${v.shape.join(", ")}]` : ""),
            el("td", {}, v.dtype ?? ""),
            el("td", {}, v.device ?? ""),
            el("td", {}, fmtBytes(v.bytes)),
            el("td", {}, v.params != null ? Number(v.params).toLocaleString() : ""),
          ),
        ),
      );
      setError(this.err, "");
      const dl = document.getElementById("model-names");
      if (dl) dl.replaceChildren(...(this.models.length ? this.models : this.names).map((n) => el("option", { value: n })));
    } catch (e) {
      setError(this.err, "cannot list variables: " + errText(e));
    }
  }
}

/** ModelPanel shows a model variable's module tree and computation graph. */
export class ModelPanel {
  private input: HTMLInputElement;
  private tree = el("div", { id: "model-tree" });
  private graph = el("div", { id: "model-graph" });
  private err = errorBox("model-error");
  constructor(private t: Transport, root: HTMLElement) {
    this.input = el("input", { id: "model-name", list: "model-names", placeholder: "model variable, e.g. net" }) as HTMLInputElement;
    const show = el("button", { id: "model-show" }, "Show");
    show.onclick = () => this.show(this.input.value.trim());
    this.input.onkeydown = (e) => e.key === "Enter" && this.show(this.input.value.trim());
    root.append(
      el("div", { class: "toolbar" }, this.input, el("datalist", { id: "model-names" }), show),
      this.err,
      el("div", { class: "model-split" }, el("section", {}, el("h3", {}, "Module tree"), this.tree), el("section", {}, el("h3", {}, "Graph"), this.graph)),
    );
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
        .call<{ svg: string }>("model.graph", { name })
        .then((r) => {
          this.graph.innerHTML = r.svg ?? "";
        })
        .catch((e) => msgs.push("graph: " + errText(e))),
    ]);
    setError(this.err, msgs.join("\n"));
  }
}

/** CheckpointsPanel lists a run's checkpoints and exports one. */
export class CheckpointsPanel {
  private run: HTMLSelectElement;
  private out: HTMLInputElement;
  private body: HTMLElement;
  private result = el("div", { id: "ckpt-result" });
  private err = errorBox("ckpt-error");
  constructor(private t: Transport, root: HTMLElement) {
    this.run = el("select", { id: "ckpt-run" }) as HTMLSelectElement;
    this.run.onchange = () => this.list();
    this.out = el("input", { id: "ckpt-out", placeholder: "export to (path ending in .safetensors)", size: "50" }) as HTMLInputElement;
    const refresh = el("button", { id: "ckpt-refresh" }, "↻");
    refresh.onclick = () => this.refresh();
    const tb = table("ckpt-list", ["checkpoint", "epoch", "step", "metrics", "status", ""]);
    this.body = tb.body;
    root.append(el("div", { class: "toolbar" }, "Run ", this.run, refresh, " Export to ", this.out), this.err, this.result, tb.table);
  }
  async refresh() {
    try {
      const runs = (await this.t.call<RunInfo[]>("runs.list")) ?? [];
      const cur = this.run.value;
      this.run.replaceChildren(...runs.map((r) => el("option", { value: r.dir }, r.name || r.dir)));
      if (runs.some((r) => r.dir === cur)) this.run.value = cur;
      await this.list();
    } catch (e) {
      setError(this.err, "cannot list runs: " + errText(e));
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
    if (!dir) return;
    try {
      const cks = (await this.t.call<any[]>("checkpoints.list", { dir })) ?? [];
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
            el("td", {}, String(c.path).split("/").pop() ?? c.path),
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
