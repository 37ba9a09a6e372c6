// outputs.ts: renders nbformat outputs (stream, display_data,
// execute_result, error) into a cell's output area. HTML outputs are
// inserted and their scripts re-created so they run (viz's echarts charts
// find window.echarts, which main.ts sets).

/** An nbformat v4 output. */
export interface Output {
  output_type: "stream" | "display_data" | "execute_result" | "error" | string;
  name?: string;
  text?: string | string[];
  data?: Record<string, string | string[] | unknown>;
  metadata?: Record<string, unknown>;
  execution_count?: number | null;
  ename?: string;
  evalue?: string;
  traceback?: string[];
}

const ansi = /\x1b\[[0-9;]*[A-Za-z]/g;

/** joinText joins nbformat's multiline strings (a string or a list of lines). */
export function joinText(s: unknown): string {
  if (Array.isArray(s)) return s.join("");
  return typeof s === "string" ? s : s == null ? "" : JSON.stringify(s, null, 2);
}

/** errorLine returns the line (1-based) of the current cell an error points at, or 0. */
export function errorLine(o: Output): number {
  const v = o.evalue ?? "";
  let m = /^(\d+):(\d+)/.exec(v) ?? /(?:^|[\s(])(\d+):(\d+):/.exec(v);
  if (m) return +m[1];
  for (const t of o.traceback ?? []) {
    m = /^\s*(\d+) \| /.exec(t.replace(ansi, ""));
    if (m) return +m[1];
  }
  return 0;
}

/** runScripts re-creates the script elements under el so the browser runs them. */
export function runScripts(el: HTMLElement) {
  el.querySelectorAll("script").forEach((old) => {
    const s = document.createElement("script");
    for (const a of Array.from(old.attributes)) s.setAttribute(a.name, a.value);
    s.textContent = old.textContent;
    old.replaceWith(s);
  });
}

/** disposeCharts frees the echarts instances drawn under el before el
 *  leaves the page (echarts keeps every instance until it is disposed). */
export function disposeCharts(el: Element) {
  const ec = (window as any).echarts;
  if (!ec?.getInstanceByDom) return;
  el.querySelectorAll<HTMLElement>("div").forEach((n) => ec.getInstanceByDom(n)?.dispose());
}

/** renderOutput returns the element showing one output. */
export function renderOutput(o: Output): HTMLElement {
  const div = document.createElement("div");
  div.className = "output output-" + o.output_type;
  div.dataset.outputType = o.output_type;
  switch (o.output_type) {
    case "stream": {
      div.classList.add("stream-" + (o.name ?? "stdout"));
      const pre = document.createElement("pre");
      pre.textContent = joinText(o.text).replace(ansi, "");
      div.append(pre);
      break;
    }
    case "error": {
      const head = document.createElement("div");
      head.className = "error-head";
      const line = errorLine(o);
      head.textContent = `${o.ename ?? "Error"}: ${o.evalue ?? ""}`;
      if (line) {
        div.dataset.line = String(line);
        const b = document.createElement("span");
        b.className = "error-line-badge";
        b.textContent = `line ${line}`;
        head.prepend(b);
      }
      const pre = document.createElement("pre");
      pre.textContent = (o.traceback ?? []).map((t) => t.replace(ansi, "")).join("\n");
      div.append(head, pre);
      break;
    }
    default: {
      const d = o.data ?? {};
      if (d["text/html"] !== undefined) {
        div.classList.add("html");
        div.innerHTML = joinText(d["text/html"]);
        runScripts(div);
      } else if (d["image/svg+xml"] !== undefined) {
        div.innerHTML = joinText(d["image/svg+xml"]);
      } else if (d["image/png"] !== undefined || d["image/jpeg"] !== undefined) {
        const mime = d["image/png"] !== undefined ? "image/png" : "image/jpeg";
        const img = document.createElement("img");
        img.src = `data:${mime};base64,${joinText(d[mime]).replace(/\s/g, "")}`;
        div.append(img);
      } else if (d["text/markdown"] !== undefined) {
        div.innerHTML = markdown(joinText(d["text/markdown"]));
      } else if (d["application/json"] !== undefined) {
        const pre = document.createElement("pre");
        pre.textContent = JSON.stringify(d["application/json"], null, 2);
        div.append(pre);
      } else {
        const pre = document.createElement("pre");
        pre.textContent = joinText(d["text/plain"]).replace(ansi, "");
        div.append(pre);
      }
      if (o.output_type === "execute_result") div.classList.add("result");
    }
  }
  return div;
}

function esc(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

function inline(s: string): string {
  return esc(s)
    .replace(/`([^`]+)`/g, "<code>$1</code>")
    .replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^*])\*([^*]+)\*/g, "$1<em>$2</em>")
    .replace(/\[([^\]]+)\]\(([^)\s]+)\)/g, (_m, t, u) =>
      /^(https?:|#|\.{0,2}\/)/.test(u) ? `<a href="${u}" target="_blank" rel="noopener">${t}</a>` : t,
    );
}

/** markdown renders a small, safe subset of Markdown: headings, paragraphs,
 *  lists, fenced code, emphasis, inline code and links (all text escaped). */
export function markdown(src: string): string {
  const out: string[] = [];
  const lines = src.replace(/\r/g, "").split("\n");
  let para: string[] = [];
  let list: string | null = null;
  const flush = () => {
    if (para.length) out.push(`<p>${inline(para.join(" "))}</p>`);
    para = [];
  };
  const endList = () => {
    if (list) out.push(`</${list}>`);
    list = null;
  };
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i];
    let m: RegExpExecArray | null;
    if (/^```/.test(l)) {
      flush();
      endList();
      const code: string[] = [];
      for (i++; i < lines.length && !/^```/.test(lines[i]); i++) code.push(lines[i]);
      out.push(`<pre><code>${esc(code.join("\n"))}</code></pre>`);
    } else if ((m = /^(#{1,6})\s+(.*)$/.exec(l))) {
      flush();
      endList();
      out.push(`<h${m[1].length}>${inline(m[2])}</h${m[1].length}>`);
    } else if ((m = /^\s*([-*]|\d+\.)\s+(.*)$/.exec(l))) {
      flush();
      const kind = /\d/.test(m[1]) ? "ol" : "ul";
      if (list !== kind) {
        endList();
        out.push(`<${kind}>`);
        list = kind;
      }
      out.push(`<li>${inline(m[2])}</li>`);
    } else if (l.trim() === "") {
      flush();
      endList();
    } else {
      if (list && /^\s+/.test(l)) {
        out[out.length - 1] = out[out.length - 1].replace(/<\/li>$/, " " + inline(l.trim()) + "</li>");
        continue;
      }
      endList();
      para.push(l);
    }
  }
  flush();
  endList();
  return out.join("\n");
}
