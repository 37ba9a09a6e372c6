// export.ts: checkpoint export controls, shared by the run view and the
// Checkpoints panel. Every format `kiln export` writes is offered:
// safetensors, GGUF (f32, f16, q8_0) and ONNX, which needs the run's
// model graph (RUN/model.onnx; the engine says so in graph_hint when it
// is missing). In a browser the file downloads from GET /api/export; in
// the desktop app the native save dialog asks where to write it
// (window.go.main.Exporter.ExportCheckpoint).

import type { Transport } from "./transport";
import { el, errText, fmtBytes } from "./util";

/** A checkpoints.list entry, as far as export needs it. */
export interface CheckpointEntry {
  path: string;
  name?: string;
  error?: string;
  /** The run's recorded ONNX graph, when it has one. */
  graph?: string;
  /** What to do to export ONNX, when the run has no graph. */
  graph_hint?: string;
}

/** exportChoices are the format menu's entries: value "format" or "format:gguf_type". */
const exportChoices: [string, string][] = [
  ["safetensors", "safetensors"],
  ["gguf", "GGUF (f32)"],
  ["gguf:f16", "GGUF (f16)"],
  ["gguf:q8_0", "GGUF (q8_0)"],
  ["onnx", "ONNX"],
];

/** exportControls returns a checkpoint's format menu and export button;
 *  the outcome shows beside them (data-state: exporting, done, cancelled,
 *  error). ONNX is disabled, with the reason as its title, when the run
 *  has no graph, and so is everything for a damaged checkpoint. */
export function exportControls(t: Transport, ck: CheckpointEntry): HTMLElement {
  const select = el("select", { class: "ckpt-format", title: "export format" }) as HTMLSelectElement;
  for (const [value, label] of exportChoices) {
    const noGraph = value === "onnx" && !ck.graph;
    const opt = el("option", { value }, noGraph ? "ONNX (no graph recorded)" : label) as HTMLOptionElement;
    if (noGraph) {
      opt.disabled = true;
      opt.title = ck.graph_hint || "no model graph recorded for this run";
    }
    select.append(opt);
  }
  const desktop = t.kind === "wails";
  const button = el("button", { class: "ckpt-download" }, desktop ? "Save as…" : "Download");
  const note = el("span", { class: "ckpt-export-note" });
  const box = el("span", { class: "ckpt-export-controls", "data-path": ck.path }, select, button, note);
  if (ck.error) {
    select.disabled = true;
    button.setAttribute("disabled", "");
    button.title = "a damaged checkpoint cannot be exported";
  }
  button.onclick = async () => {
    const [format, ggufType = ""] = select.value.split(":");
    note.dataset.state = "exporting";
    note.className = "ckpt-export-note muted";
    note.textContent = "exporting…";
    try {
      const msg = desktop ? await saveDesktop(ck.path, format, ggufType) : await download(ck.path, format, ggufType);
      note.dataset.state = msg === null ? "cancelled" : "done";
      note.className = "ckpt-export-note ok-text";
      note.textContent = msg ?? "";
    } catch (e) {
      note.dataset.state = "error";
      note.className = "ckpt-export-note error-text";
      note.textContent = "export failed: " + errText(e);
    }
  };
  return box;
}

/** graphNote says, once for a run, that its checkpoints cannot be exported
 *  as ONNX and what to do; null when the run has a graph or no checkpoint. */
export function graphNote(cks: CheckpointEntry[]): HTMLElement | null {
  const missing = cks.find((c) => !c.graph && c.graph_hint);
  if (!missing) return null;
  return el("div", { class: "ckpt-graph-hint muted" }, "ONNX export: " + missing.graph_hint);
}

/** exportURL is the download URL of a checkpoint in a format, carrying the
 *  page's token as the API calls do. */
export function exportURL(path: string, format: string, ggufType: string): string {
  const u = new URL("api/export", location.href);
  u.search = "";
  u.searchParams.set("path", path);
  u.searchParams.set("format", format);
  if (ggufType) u.searchParams.set("gguf_type", ggufType);
  const token = new URLSearchParams(location.search).get("token");
  if (token) u.searchParams.set("token", token);
  return u.toString();
}

/** download fetches the exported file and hands it to the browser as a
 *  download named as the engine says; an export the engine refuses is an
 *  error with its message. */
async function download(path: string, format: string, ggufType: string): Promise<string> {
  const resp = await fetch(exportURL(path, format, ggufType));
  if (!resp.ok) {
    let msg = `${resp.status} ${resp.statusText}`;
    try {
      msg = (await resp.json()).error || msg;
    } catch {
      // not JSON: keep the status
    }
    throw new Error(msg);
  }
  const blob = await resp.blob();
  const name = /filename="([^"]+)"/.exec(resp.headers.get("Content-Disposition") ?? "")?.[1] ?? "checkpoint." + format;
  const url = URL.createObjectURL(blob);
  const a = el("a", { href: url, download: name, hidden: "" });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
  return `downloaded ${name} (${fmtBytes(blob.size)})`;
}

/** saveDesktop asks where to save with the desktop app's native dialog and
 *  writes the file there; null when the user cancels. */
async function saveDesktop(path: string, format: string, ggufType: string): Promise<string | null> {
  const exporter = (window as any).go?.main?.Exporter;
  if (!exporter) throw new Error("the desktop app's export binding (window.go.main.Exporter) is missing");
  let out: string;
  try {
    out = await exporter.ExportCheckpoint(path, format, ggufType);
  } catch (e: any) {
    throw new Error(typeof e === "string" ? e : e?.message ?? String(e));
  }
  if (!out) return null;
  const r = JSON.parse(out) as { out: string; bytes: number };
  return `exported ${fmtBytes(r.bytes)} to ${r.out}`;
}
