// notebook.ts: the Notebook panel. It opens a .ipynb through the engine,
// shows code cells in CodeMirror 6 editors (Go highlighting, completion
// from the kernel) and Markdown cells rendered, runs cells one by one or
// all of them, and keeps the engine's copy of the cells up to date
// (notebook.update), which the engine autosaves.

import { EditorView, basicSetup } from "codemirror";
import { go } from "@codemirror/lang-go";
import { autocompletion, CompletionContext, CompletionResult } from "@codemirror/autocomplete";
import { Decoration, DecorationSet, keymap } from "@codemirror/view";
import { Prec, StateEffect, StateField } from "@codemirror/state";
import type { Transport } from "./transport";
import { Output, disposeCharts, errorLine, markdown, renderOutput } from "./outputs";
import { el, errText, throttle } from "./util";

/** A cell as the engine sends and takes it (nbformat fields). */
interface CellJSON {
  id: string;
  cell_type: "code" | "markdown" | string;
  source: string | string[];
  outputs?: Output[];
  execution_count?: number | null;
  metadata?: Record<string, unknown>;
}

interface ExecuteResult {
  execution_count: number | null;
  status: "ok" | "error" | string;
  outputs: Output[];
}

const setErrorLine = StateEffect.define<number>();
const errorLineField = StateField.define<DecorationSet>({
  create: () => Decoration.none,
  update(deco, tr) {
    deco = deco.map(tr.changes);
    for (const e of tr.effects) {
      if (!e.is(setErrorLine)) continue;
      const n = e.value;
      if (n < 1 || n > tr.state.doc.lines) deco = Decoration.none;
      else deco = Decoration.set([Decoration.line({ class: "cm-error-line" }).range(tr.state.doc.line(n).from)]);
    }
    return deco;
  },
  provide: (f) => EditorView.decorations.from(f),
});

let nextID = 1;
function newID(): string {
  return "wb-" + Date.now().toString(36) + "-" + (nextID++).toString(36);
}

class Cell {
  readonly root: HTMLElement;
  readonly view: EditorView;
  private outArea: HTMLElement;
  private countEl: HTMLElement;
  private mdView: HTMLElement;
  outputs: Output[];
  private stale = new Set<number>(); // indexes of outputs updated since they were drawn
  count: number | null;
  running = false;

  constructor(
    private nb: Notebook,
    public id: string,
    public type: string,
    source: string,
    outputs: Output[],
    count: number | null,
    public metadata: Record<string, unknown>,
    place: (root: HTMLElement) => void,
  ) {
    this.outputs = outputs;
    this.count = count;
    this.root = el("div", { class: "cell", "data-cell-id": id, "data-cell-type": type, "data-state": "idle" });
    this.countEl = el("span", { class: "cell-count" });
    const run = el("button", { class: "cell-run", title: "Run (Shift-Enter)" }, "▶");
    run.onclick = () => nb.runCell(this);
    const del = el("button", { class: "cell-delete", title: "Delete cell" }, "✕");
    del.onclick = () => nb.deleteCell(this);
    const addCode = el("button", { class: "cell-add-code", title: "Add a code cell below" }, "+code");
    addCode.onclick = () => nb.addCell("code", this);
    const addMd = el("button", { class: "cell-add-md", title: "Add a Markdown cell below" }, "+text");
    addMd.onclick = () => nb.addCell("markdown", this);
    const bar = el("div", { class: "cell-bar" }, this.countEl, run, addCode, addMd, del);
    const editor = el("div", { class: "cell-editor" });
    this.mdView = el("div", { class: "md-view" });
    this.mdView.ondblclick = () => this.editMarkdown(true);
    this.outArea = el("div", { class: "cell-outputs" });
    this.root.append(bar, editor, this.mdView, this.outArea);
    place(this.root); // attached before the editor exists, so it measures real line heights
    const runKeys = Prec.highest(
      keymap.of([
        { key: "Shift-Enter", run: () => (nb.runCell(this, true), true) },
        { key: "Ctrl-Enter", run: () => (nb.runCell(this), true) },
        { key: "Mod-s", run: () => (nb.save(), true), preventDefault: true },
      ]),
    );
    const exts = [
      runKeys,
      basicSetup,
      errorLineField,
      EditorView.updateListener.of((u) => {
        if (u.docChanged) nb.changed();
      }),
    ];
    if (type === "code") exts.push(go(), autocompletion({ override: [(c) => nb.complete(c)] }));
    this.view = new EditorView({ doc: source, extensions: exts, parent: editor });
    if (type === "markdown") this.editMarkdown(source.trim() === "");
    this.renderCount();
    this.renderOutputs();
  }

  get source(): string {
    return this.view.state.doc.toString();
  }

  editMarkdown(on: boolean) {
    this.root.dataset.editing = on ? "true" : "false";
    if (!on) this.mdView.innerHTML = markdown(this.source) || "<p class=muted>(empty Markdown cell: double-click to edit)</p>";
    else this.view.focus();
  }

  setState(s: "idle" | "queued" | "running" | "ok" | "error" | "aborted") {
    this.root.dataset.state = s;
    this.running = s === "running";
  }

  renderCount() {
    this.countEl.textContent = this.type === "code" ? `[${this.running ? "*" : (this.count ?? " ")}]` : "";
  }

  renderOutputs() {
    this.stale.clear();
    disposeCharts(this.outArea);
    this.outArea.replaceChildren();
    let line = 0;
    for (const [i, o] of this.outputs.entries()) {
      this.outArea.append(this.outputElement(o, i));
      if (o.output_type === "error") line = errorLine(o) || line;
    }
    this.view.dispatch({ effects: setErrorLine.of(line) });
  }

  /** updateOutput replaces output i (an update_display_data). It is drawn
   *  later, with the cell's other updated outputs (drawStale): a live
   *  dashboard updates several times a second, and only its latest version
   *  is worth drawing. */
  updateOutput(i: number, o: Output) {
    this.outputs[i] = o;
    this.stale.add(i);
    this.nb.drawSoon();
  }

  /** drawStale draws the outputs updated since they were drawn, and only
   *  them: the cell's other outputs, such as the chart library a live
   *  dashboard loaded once, are not rendered (nor their scripts run) again. */
  drawStale() {
    for (const i of this.stale) {
      const old = this.outArea.children[i];
      if (!old) {
        this.renderOutputs();
        return;
      }
      disposeCharts(old);
      old.replaceWith(renderOutput(this.outputs[i]));
    }
    this.stale.clear();
  }

  addOutput(o: Output) {
    this.outputs.push(o);
    this.outArea.append(this.outputElement(o, this.outputs.length - 1));
    if (o.output_type === "error") this.view.dispatch({ effects: setErrorLine.of(errorLine(o)) });
  }

  /** outputElement renders output i, or, while the notebook is hidden and
   *  the output is HTML (a chart, a live dashboard, the chart library: the
   *  scripts they run would slow the panel shown), a placeholder drawn
   *  when the notebook is shown again. */
  private outputElement(o: Output, i: number): HTMLElement {
    if (this.nb.hidden && o.data?.["text/html"] !== undefined) {
      this.stale.add(i);
      return el("div", { class: "output output-pending" });
    }
    return renderOutput(o);
  }

  toJSON(): CellJSON {
    const c: CellJSON = { id: this.id, cell_type: this.type, source: this.source, metadata: this.metadata };
    if (this.type === "code") {
      c.outputs = this.outputs;
      c.execution_count = this.count;
    }
    return c;
  }
}

/** Notebook is the Notebook panel. */
export class Notebook {
  path = "";
  cells: Cell[] = [];
  private list: HTMLElement;
  private select: HTMLSelectElement;
  private errorBox: HTMLElement;
  private saved: HTMLElement;
  private runAllToken = 0;
  private push: () => void;
  onCellDone: () => void = () => {};

  /** drawSoon draws the cells' updated outputs, at most 4 times a second,
   *  and not while the notebook is hidden (it is when shown again): a
   *  training cell's dashboard must not slow the Runs panel down. */
  readonly drawSoon = throttle(() => this.drawStale(), 250);

  constructor(
    private t: Transport,
    private root: HTMLElement,
  ) {
    this.select = el("select", { id: "nb-select" }) as HTMLSelectElement;
    const open = button("nb-open", "Open", () => this.open(this.select.value));
    const refresh = button("nb-refresh", "↻", () => this.refreshList());
    const save = button("nb-save", "Save", () => this.save());
    const runAll = button("nb-run-all", "Run all", () => this.runAll());
    const intr = button("nb-interrupt", "Interrupt", () => this.interrupt());
    const restart = button("nb-restart", "Restart kernel", () => this.restart());
    const addCode = button("nb-add-code", "+ Code", () => this.addCell("code"));
    const addMd = button("nb-add-md", "+ Markdown", () => this.addCell("markdown"));
    this.saved = el("span", { id: "nb-saved", class: "muted" });
    this.errorBox = el("div", { id: "nb-error", class: "error-box", hidden: "" });
    const title = el("span", { id: "nb-path", class: "nb-path" });
    this.list = el("div", { id: "cells" });
    root.append(
      el("div", { class: "toolbar" }, this.select, refresh, open, save, runAll, intr, restart, addCode, addMd, title, this.saved),
      this.errorBox,
      this.list,
    );
    this.push = throttle(() => this.sendUpdate(), 500);
    t.subscribe((u) => {
      const d = u.data ?? {};
      if (u.topic === "cell.output" && d.path === this.path) {
        const c = this.cells.find((c) => c.id === d.cell_id);
        if (!c || !c.running) return;
        if (d.clear) {
          c.outputs = [];
          c.renderOutputs();
        } else if (typeof d.index === "number" && d.index < c.outputs.length) {
          c.updateOutput(d.index, d.output); // an update of an earlier display
        } else c.addOutput(d.output);
      } else if (u.topic === "notebook.saved" && d.path === this.path) {
        this.saved.textContent = "saved " + new Date().toLocaleTimeString();
      }
    });
  }

  showError(msg: string) {
    this.errorBox.hidden = msg === "";
    this.errorBox.textContent = msg;
  }

  async refreshList() {
    try {
      const files = (await this.t.call<{ path: string }[]>("notebook.list")) ?? [];
      const cur = this.select.value || this.path;
      this.select.replaceChildren(...files.map((f) => el("option", { value: f.path }, f.path)));
      if (cur && files.some((f) => f.path === cur)) this.select.value = cur;
    } catch (e) {
      this.showError("cannot list notebooks: " + errText(e));
    }
  }

  async open(path: string) {
    if (!path) return;
    try {
      if (this.path) await this.flush();
      const nb = await this.t.call<{ path: string; cells: CellJSON[] }>("notebook.open", { path });
      this.path = nb.path || path;
      this.select.value = this.path;
      document.getElementById("nb-path")!.textContent = this.path;
      this.cells.forEach((c) => c.view.destroy());
      this.list.replaceChildren();
      const place = (root: HTMLElement) => this.list.append(root);
      this.cells = (nb.cells ?? []).map(
        (c) =>
          new Cell(this, c.id || newID(), c.cell_type, joinSource(c.source), c.outputs ?? [], c.execution_count ?? null, (c.metadata as any) ?? {}, place),
      );
      this.remeasure();
      this.list.dataset.path = this.path;
      this.showError("");
      this.saved.textContent = "";
    } catch (e) {
      this.showError(`cannot open ${path}: ${errText(e)}`);
    }
  }

  /** remeasure makes the editors measure themselves again (they were
   *  created before being attached, or while their panel was hidden). */
  remeasure() {
    this.drawStale();
    requestAnimationFrame(() => this.cells.forEach((c) => c.view.requestMeasure()));
  }

  /** hidden reports whether the notebook's panel is hidden. */
  get hidden(): boolean {
    return this.root.hidden;
  }

  private drawStale() {
    if (!this.root.hidden) this.cells.forEach((c) => c.drawStale());
  }

  changed() {
    if (this.path) this.push();
  }

  private async sendUpdate() {
    if (!this.path) return;
    try {
      await this.t.call("notebook.update", { path: this.path, cells: this.cells.map((c) => c.toJSON()) });
    } catch (e) {
      this.showError("cannot update the notebook: " + errText(e));
    }
  }

  /** flush sends the cells now (run before executing, saving, closing). */
  flush(): Promise<void> {
    return this.sendUpdate();
  }

  async save() {
    if (!this.path) return;
    try {
      await this.flush();
      await this.t.call("notebook.save", { path: this.path });
      this.saved.textContent = "saved " + new Date().toLocaleTimeString();
    } catch (e) {
      this.showError("cannot save: " + errText(e));
    }
  }

  /** addCell adds a cell after the given one (or at the end) and returns it. */
  addCell(type: "code" | "markdown", after?: Cell, source = ""): Cell {
    const c = new Cell(this, newID(), type, source, [], null, {}, (root) => (after ? after.root.after(root) : this.list.append(root)));
    const i = after ? this.cells.indexOf(after) + 1 : this.cells.length;
    this.cells.splice(i, 0, c);
    c.view.focus();
    this.changed();
    return c;
  }

  deleteCell(c: Cell) {
    this.cells = this.cells.filter((x) => x !== c);
    c.view.destroy();
    c.root.remove();
    this.changed();
  }

  /** runCell runs one cell; advance moves the focus to the next cell. It
   *  returns false when the cell failed, "aborted" when it never finished
   *  (interrupted, or its kernel died). */
  async runCell(c: Cell, advance = false): Promise<boolean | "aborted"> {
    if (advance) {
      const i = this.cells.indexOf(c);
      const next = this.cells[i + 1] ?? this.addCell(c.type === "markdown" ? "markdown" : "code", c);
      setTimeout(() => next.view.focus(), 0);
    }
    if (c.type !== "code") {
      c.editMarkdown(false);
      return true;
    }
    if (c.running) return false;
    c.outputs = [];
    c.renderOutputs();
    c.setState("running");
    c.renderCount();
    let status = "error";
    try {
      await this.flush();
      const r = await this.t.call<ExecuteResult>("kernel.execute", { path: this.path, cell_id: c.id, code: c.source });
      c.outputs = r.outputs ?? c.outputs;
      c.count = r.execution_count ?? c.count;
      status = r.status;
    } catch (e) {
      c.outputs.push({ output_type: "error", ename: "WorkbenchError", evalue: errText(e), traceback: [] });
      status = "aborted";
    }
    c.setState(status === "ok" ? "ok" : status === "aborted" ? "aborted" : "error");
    c.renderCount();
    c.renderOutputs();
    this.changed();
    this.onCellDone();
    return status === "aborted" ? "aborted" : status === "ok";
  }

  /** runAll runs every cell in order, going on past cells that fail, until
   *  the end, an interrupt, a restart or a dead kernel. */
  async runAll() {
    const token = ++this.runAllToken;
    const todo = this.cells.filter((c) => c.type === "code");
    todo.forEach((c) => c.setState("queued"));
    this.list.dataset.runAll = "running";
    for (const c of this.cells) {
      if (token !== this.runAllToken) break;
      if ((await this.runCell(c)) === "aborted") break;
    }
    todo.forEach((c) => c.root.dataset.state === "queued" && c.setState("idle"));
    if (token === this.runAllToken) this.list.dataset.runAll = "done";
  }

  stopRunAll() {
    this.runAllToken++;
    this.list.dataset.runAll = "stopped";
  }

  async interrupt() {
    this.stopRunAll();
    try {
      await this.t.call("kernel.interrupt");
    } catch (e) {
      this.showError("cannot interrupt: " + errText(e));
    }
  }

  async restart() {
    this.stopRunAll();
    try {
      await this.t.call("kernel.restart");
    } catch (e) {
      this.showError("cannot restart: " + errText(e));
    }
  }

  async complete(ctx: CompletionContext): Promise<CompletionResult | null> {
    const word = ctx.matchBefore(/[\w.]*/);
    if (!ctx.explicit && (!word || word.from === word.to)) return null;
    try {
      const code = ctx.state.doc.toString();
      const r = await this.t.call<{ matches: string[]; cursor_start: number; cursor_end: number }>("kernel.complete", {
        code,
        cursor: ctx.pos,
      });
      if (!r || !r.matches?.length) return null;
      return {
        from: r.cursor_start,
        to: r.cursor_end,
        options: r.matches.map((m) => ({ label: m })),
      };
    } catch {
      return null;
    }
  }
}

function joinSource(s: string | string[]): string {
  return Array.isArray(s) ? s.join("") : (s ?? "");
}

function button(id: string, label: string, fn: () => void): HTMLButtonElement {
  const b = el("button", { id }, label) as HTMLButtonElement;
  b.onclick = fn;
  return b;
}
