// watched.ts: where the workbench finds runs (its run folders and the run
// registry), told by the Runs and Checkpoints panels: in full when they
// have nothing to show, so that an empty table says where it looked and
// how to add a folder, and as one line above a table that has runs.

import type { Transport } from "./transport";
import { el, errText } from "./util";

/** Watched is what server.info says about where runs are found. */
export interface Watched {
  run_dirs?: string[];
  /** The run registry's folder; "" when it is off. */
  run_registry?: string;
  /** Why there is no run registry (off, or no home folder). */
  run_registry_note?: string;
}

let info: Promise<Watched> | null = null;

/** watched fetches server.info once (again after a failure). */
export function watched(t: Transport): Promise<Watched> {
  if (!info) {
    info = t.call<Watched>("server.info").catch((e) => {
      info = null;
      throw e;
    });
  }
  return info;
}

/** watchingLine is the one-line form: "watching DIR, DIR and the run registry". */
export function watchingLine(w: Watched): string {
  const dirs = w.run_dirs ?? [];
  return `watching ${dirs.join(", ") || "no folder"}` + (w.run_registry ? " and the run registry" : " (run registry off)");
}

/** emptyNote is the full explanation an empty view shows, with what it
 *  lacks ("runs" or "runs with checkpoints"). */
export function emptyNote(w: Watched, kind: "wails" | "http", what: string): HTMLElement {
  const code = (s: string) => el("code", {}, s);
  const dirs = w.run_dirs ?? [];
  const parts: HTMLElement[] = [
    el("p", { class: "empty-title" }, `No ${what} yet.`),
    el("p", {}, "The workbench lists every run (a folder holding an events.jsonl) in these folders:"),
    el("ul", { class: "watched-dirs" }, ...dirs.map((d) => el("li", {}, code(d)))),
  ];
  if (w.run_registry) {
    parts.push(
      el(
        "p",
        { class: "watched-registry" },
        "and every run in the run registry, ",
        code(w.run_registry),
        ": each ",
        code("Fit"),
        " or ",
        code("Resume"),
        " with a ",
        code("RunDir"),
        " registers its run there, wherever it is and whatever started it (a notebook cell, ",
        code("kiln demo"),
        ", your own program), and it shows here within seconds.",
      ),
    );
  } else {
    parts.push(
      el(
        "p",
        { class: "watched-registry" },
        `The run registry is not used (${w.run_registry_note || "off"}), so runs outside these folders do not show.`,
      ),
    );
  }
  const cmd = kind === "wails" ? "kiln workbench --runs DIR (or kiln-workbench --runs DIR)" : "kiln workbench --browser --runs DIR";
  parts.push(
    el(
      "p",
      { class: "watched-how" },
      "To watch another folder, start the workbench with ",
      code(cmd),
      " (repeat --runs for several), or train with ",
      code('train.Config{RunDir: "…"}'),
      " and the run registers itself.",
    ),
  );
  return el("div", { class: "empty-note" }, ...parts);
}

/** watchedError is what a view says when server.info failed. */
export function watchedError(e: unknown): string {
  return "cannot tell which folders are watched: " + errText(e);
}
