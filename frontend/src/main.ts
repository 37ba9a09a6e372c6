// main.ts: the workbench UI's entry point: tabs for the panels (the
// Files browser first, the page it opens on), the kernel
// status indicator and the restart notice.

import * as echarts from "echarts";
import "./style.css";
import { connect } from "./transport";
import { Notebook } from "./notebook";
import { RunsPanel } from "./runs";
import { FilesPanel } from "./files";
import { CheckpointsPanel, DevicesPanel, ModelPanel, VariablesPanel } from "./panels";
import { el, errText } from "./util";

// viz's chart outputs draw with window.echarts when it is there.
(window as any).echarts = echarts;

const t = connect();
const app = document.getElementById("app")!;

const status = el("span", { id: "kernel-status", "data-status": "unknown" }, "kernel: …");
const notice = el("div", { id: "restart-notice", hidden: "" });
const tabs = el("nav", { id: "tabs" });
const body = el("main", { id: "panels" });
app.append(el("header", {}, el("strong", { class: "brand" }, "Kiln workbench"), tabs, status), notice, body);

const names = ["files", "notebook", "devices", "variables", "runs", "model", "checkpoints"] as const;
type Tab = (typeof names)[number];
const roots = {} as Record<Tab, HTMLElement>;
for (const n of names) {
  const b = el("button", { class: "tab", "data-tab": n }, n[0].toUpperCase() + n.slice(1));
  b.onclick = () => show(n);
  tabs.append(b);
  roots[n] = el("section", { id: "panel-" + n, class: "panel", hidden: "" });
  body.append(roots[n]);
}

const notebook = new Notebook(t, roots.notebook);
const devices = new DevicesPanel(t, roots.devices);
const variables = new VariablesPanel(t, roots.variables);
const runs = new RunsPanel(t, roots.runs);
const model = new ModelPanel(t, roots.model);
const checkpoints = new CheckpointsPanel(t, roots.checkpoints);
const files = new FilesPanel(t, roots.files, {
  notebook: async (path) => {
    show("notebook");
    await notebook.open(path);
  },
  run: async (dir) => {
    show("runs");
    await runs.refresh();
    await runs.show([dir]);
  },
  checkpoint: async (runDir) => {
    show("checkpoints");
    await checkpoints.select(runDir);
  },
});
let current: Tab = "files";

// The panels, for scripts and tests driving the page (the end-to-end test
// adds cells with workbench.notebook.addCell).
(window as any).workbench = { transport: t, files, notebook, devices, variables, runs, model, checkpoints, show: (n: Tab) => show(n) };

function show(n: Tab) {
  current = n;
  for (const m of names) roots[m].hidden = m !== n;
  tabs.querySelectorAll<HTMLElement>(".tab").forEach((b) => (b.dataset.active = String(b.dataset.tab === n)));
  document.body.dataset.tab = n;
  if (n === "devices") devices.refresh();
  if (n === "variables") variables.refresh();
  if (n === "model") model.refresh();
  if (n === "runs") runs.refresh();
  if (n === "checkpoints") checkpoints.refresh();
  if (n === "files") files.list(files.path);
  if (n === "runs") window.dispatchEvent(new Event("resize"));
  if (n === "notebook") notebook.remeasure();
}

notebook.onCellDone = () => {
  if (current === "variables") variables.refresh();
  if (current === "model") model.refresh();
  if (current === "devices") devices.refresh();
};

let restarts = -1;
function setStatus(s: { status?: string; restarts?: number; message?: string; last_error?: string }) {
  const st = s.status ?? "unknown";
  status.dataset.status = st;
  status.textContent = "kernel: " + st;
  const r = s.restarts ?? 0;
  status.dataset.restarts = String(r);
  const msg = s.message || (restarts >= 0 && r > restarts ? `the kernel restarted${s.last_error ? ": " + s.last_error : ""}` : "");
  if (msg) {
    notice.hidden = false;
    notice.replaceChildren(el("span", { class: "notice-text" }, msg), closeButton());
    notice.dataset.restarts = String(r);
  }
  if (st === "dead" || st === "restarting") notebook.stopRunAll();
  restarts = r;
}

function closeButton(): HTMLElement {
  const b = el("button", { id: "restart-notice-close", title: "Dismiss" }, "✕");
  b.onclick = () => (notice.hidden = true);
  return b;
}

t.subscribe((u) => {
  if (u.topic === "kernel.status") setStatus(u.data ?? {});
  else if (u.topic === "transport.open") syncStatus();
  else if (u.topic === "transport.closed") {
    status.dataset.status = "disconnected";
    status.textContent = "kernel: (disconnected)";
  }
});

async function syncStatus() {
  try {
    setStatus(await t.call("kernel.status"));
  } catch (e) {
    status.dataset.status = "unknown";
    status.textContent = "kernel: " + errText(e);
  }
}

async function start() {
  const want = new URLSearchParams(location.search).get("notebook");
  show(want ? "notebook" : "files");
  document.body.dataset.transport = t.kind;
  try {
    const info = await t.call<any>("server.info");
    document.title = `Kiln workbench: ${info.root ?? ""}`;
    if (info.kernel) setStatus(info.kernel);
  } catch (e) {
    notebook.showError("cannot reach the workbench: " + errText(e));
  }
  await notebook.refreshList();
  if (want) await notebook.open(want);
  document.body.dataset.ready = "true";
}

start();
