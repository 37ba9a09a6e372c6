// files.ts: the Files panel, the page the workbench opens on: the root's
// folders, notebooks, runs, checkpoints and model files, recent notebooks
// on top; clicking an entry opens it in its own panel.

import type { Transport } from "./transport";
import { el, errText, fmtBytes } from "./util";
import "./files.css";

/** FileEntry is one row of files.list. */
export interface FileEntry {
  name: string;
  path: string;
  kind: "dir" | "notebook" | "run" | "checkpoint" | "model" | "file";
  size: number;
  modified: string;
  dir?: string;
}

/** Opener opens what a click on an entry asks for. */
export interface Opener {
  notebook(path: string): void;
  run(dir: string): void;
  checkpoint(runDir: string, path: string): void;
}

/** FilesPanel browses the workbench's root. */
export class FilesPanel {
  private body = el("tbody", { id: "files-list" });
  private recent = el("ul", { id: "files-recent" });
  private crumbs = el("span", { id: "files-path", class: "files-path" });
  private err = el("div", { id: "files-error", class: "error-box", hidden: "" });
  private detail = el("div", { id: "files-detail", hidden: "" });
  /** path is the folder shown, relative to the root ("" for the root). */
  path = "";

  constructor(private t: Transport, root: HTMLElement, private opener: Opener) {
    const refresh = el("button", { id: "files-refresh" }, "↻");
    refresh.onclick = () => this.list(this.path);
    root.append(
      el("section", { id: "files-recent-box" }, el("h3", {}, "Recent notebooks"), this.recent),
      el("div", { class: "toolbar" }, refresh, this.crumbs),
      this.err,
      this.detail,
      el("table", { class: "grid files-table" }, el("thead", {}, el("tr", {}, ...["name", "kind", "size", "modified"].map((h) => el("th", {}, h)))), this.body),
    );
  }

  /** list shows the folder path (relative to the root). */
  async list(path: string) {
    try {
      const r = await this.t.call<{ path: string; entries: FileEntry[]; recent: FileEntry[] }>("files.list", { path });
      const before = this.path;
      this.path = r.path ?? "";
      this.err.hidden = true;
      // A refresh of the same folder (the tab shown again) keeps the
      // details of a file still listed, even when it answers after a click.
      if (this.path !== before || !(r.entries ?? []).some((e) => e.path === this.detail.dataset.path)) this.detail.hidden = true;
      this.showCrumbs();
      const rows = (r.entries ?? []).map((e) => this.row(e));
      if (this.path) {
        const up = this.path.split("/").slice(0, -1).join("/");
        const link = el("a", { href: "#", class: "file-open" }, "..");
        link.onclick = (ev) => {
          ev.preventDefault();
          this.list(up);
        };
        rows.unshift(el("tr", { class: "file-row", "data-kind": "up" }, el("td", {}, link), el("td", {}), el("td", {}), el("td", {})));
      }
      this.body.replaceChildren(...rows);
      this.recent.replaceChildren(
        ...(r.recent ?? []).map((e) => {
          const a = el("a", { href: "#", class: "recent-open", "data-path": e.path }, e.path);
          a.onclick = (ev) => {
            ev.preventDefault();
            this.open(e);
          };
          return el("li", {}, a, el("span", { class: "muted" }, " " + fmtTime(e.modified)));
        }),
      );
      if (!r.recent?.length) this.recent.replaceChildren(el("li", { class: "muted" }, "no notebooks under the root yet"));
    } catch (e) {
      this.err.hidden = false;
      this.err.textContent = "cannot list files: " + errText(e);
    }
  }

  private showCrumbs() {
    const parts = this.path ? this.path.split("/") : [];
    const link = (label: string, to: string) => {
      const a = el("a", { href: "#", class: "crumb", "data-path": to }, label);
      a.onclick = (ev) => {
        ev.preventDefault();
        this.list(to);
      };
      return a;
    };
    const items: (Node | string)[] = [link("root", "")];
    parts.forEach((p, i) => items.push(" / ", link(p, parts.slice(0, i + 1).join("/"))));
    this.crumbs.replaceChildren(...items);
  }

  private row(e: FileEntry): HTMLElement {
    const isDir = e.kind === "dir" || e.kind === "run" || e.kind === "checkpoint";
    const a = el("a", { href: "#", class: "file-open" }, isDir ? e.name + "/" : e.name);
    a.onclick = (ev) => {
      ev.preventDefault();
      this.open(e);
    };
    return el(
      "tr",
      { class: "file-row", "data-kind": e.kind, "data-path": e.path },
      el("td", { class: "file-name" }, a),
      el("td", { class: "file-kind" }, e.kind),
      el("td", { class: "file-size" }, isDir ? "" : fmtBytes(e.size)),
      el("td", { class: "file-modified" }, fmtTime(e.modified)),
    );
  }

  /** open opens an entry: a folder here, the others in their panels. */
  open(e: FileEntry) {
    switch (e.kind) {
      case "dir":
        this.list(e.path);
        break;
      case "notebook":
        this.opener.notebook(e.path);
        break;
      case "run":
        this.opener.run(e.dir ?? e.path);
        break;
      case "checkpoint":
        this.opener.checkpoint(e.dir ?? "", e.path);
        break;
      default:
        this.showDetail(e);
    }
  }

  /** showDetail shows what the workbench knows of a file it cannot open:
   * for a model file, the report `kiln inspect` prints (files.inspect),
   * with onnx.Load's verdict for ONNX. */
  private showDetail(e: FileEntry) {
    this.detail.hidden = false;
    this.detail.dataset.path = e.path;
    delete this.detail.dataset.loads;
    const head = [el("strong", {}, e.path), el("div", {}, `${e.kind} · ${fmtBytes(e.size)} · modified ${fmtTime(e.modified)}`)];
    if (e.kind !== "model") {
      this.detail.dataset.state = "file";
      this.detail.replaceChildren(...head);
      return;
    }
    this.detail.dataset.state = "loading";
    const title = el("div", { class: "muted" }, `kiln inspect ${e.path}`);
    this.detail.replaceChildren(...head, title, el("div", { class: "muted files-inspecting" }, "inspecting…"));
    this.t
      .call<ModelReport>("files.inspect", { path: e.path })
      .then((r) => {
        if (this.detail.dataset.path !== e.path) return; // another file was clicked since
        const parts: Node[] = [...head, title];
        if (r.verdict) {
          this.detail.dataset.loads = String(!!r.loads);
          parts.push(el("div", { id: "files-verdict", class: r.loads ? "files-verdict ok" : "files-verdict refused" }, r.verdict));
        }
        parts.push(el("pre", { id: "files-report", class: "files-report", "data-format": r.format }, r.report));
        this.detail.dataset.state = "report";
        this.detail.replaceChildren(...parts);
      })
      .catch((err) => {
        if (this.detail.dataset.path !== e.path) return;
        this.detail.dataset.state = "error";
        this.detail.replaceChildren(...head, title, el("div", { id: "files-report-error", class: "error-box" }, "cannot inspect: " + errText(err)));
      });
  }
}

/** ModelReport is what files.inspect says of a model file. */
export interface ModelReport {
  path: string;
  format: "safetensors" | "gguf" | "onnx";
  size: number;
  report: string;
  loads?: boolean;
  verdict?: string;
}

function fmtTime(s: string): string {
  const d = new Date(s);
  return isNaN(d.getTime()) ? "" : d.toLocaleString();
}
