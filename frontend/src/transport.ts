// transport.ts: how the UI reaches the workbench engine. Inside the desktop
// app (Wails) it calls the bound App.Call and listens to "workbench" events;
// in a browser it POSTs to /api/call/{method} and reads a WebSocket at /ws,
// both carrying the token from the page's URL.

/** A live update pushed by the engine. */
export interface Update {
  topic: string;
  data: any;
}

/** Transport carries calls to the engine and updates from it. */
export interface Transport {
  readonly kind: "wails" | "http";
  call<T = any>(method: string, params?: unknown): Promise<T>;
  /** subscribe registers fn for every update; "transport.open" is sent
   *  (as a synthetic update) whenever the live stream (re)connects. */
  subscribe(fn: (u: Update) => void): void;
}

declare global {
  interface Window {
    go?: { main?: { App?: { Call(method: string, params: string): Promise<string> } } };
    runtime?: { EventsOn(name: string, fn: (...args: any[]) => void): () => void };
  }
}

class WailsTransport implements Transport {
  readonly kind = "wails" as const;
  private fns: ((u: Update) => void)[] = [];
  constructor() {
    const hook = () => {
      if (!window.runtime) {
        setTimeout(hook, 50);
        return;
      }
      window.runtime.EventsOn("workbench", (msg: any) => {
        const u: Update = typeof msg === "string" ? JSON.parse(msg) : msg;
        this.fns.forEach((f) => f(u));
      });
      this.fns.forEach((f) => f({ topic: "transport.open", data: {} }));
    };
    hook();
  }
  async call<T>(method: string, params: unknown = {}): Promise<T> {
    try {
      const out = await window.go!.main!.App!.Call(method, JSON.stringify(params ?? {}));
      return (out === "" ? null : JSON.parse(out)) as T;
    } catch (e: any) {
      throw new Error(typeof e === "string" ? e : e?.message ?? String(e));
    }
  }
  subscribe(fn: (u: Update) => void) {
    this.fns.push(fn);
  }
}

class HTTPTransport implements Transport {
  readonly kind = "http" as const;
  private fns: ((u: Update) => void)[] = [];
  private token: string;
  private delay = 250;
  constructor() {
    this.token = new URLSearchParams(location.search).get("token") ?? "";
    this.connect();
  }
  private url(path: string): string {
    const u = new URL(path, location.href);
    if (this.token) u.searchParams.set("token", this.token);
    return u.toString();
  }
  private connect() {
    const u = new URL(this.url("ws"));
    u.protocol = location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(u.toString());
    ws.onopen = () => {
      this.delay = 250;
      this.emit({ topic: "transport.open", data: {} });
    };
    ws.onmessage = (ev) => {
      try {
        this.emit(JSON.parse(ev.data));
      } catch (e) {
        console.error("workbench: bad update", e);
      }
    };
    ws.onclose = () => {
      this.emit({ topic: "transport.closed", data: {} });
      setTimeout(() => this.connect(), this.delay);
      this.delay = Math.min(this.delay * 2, 5000);
    };
  }
  private emit(u: Update) {
    this.fns.forEach((f) => {
      try {
        f(u);
      } catch (e) {
        console.error("workbench: update handler", u.topic, e);
      }
    });
  }
  async call<T>(method: string, params: unknown = {}): Promise<T> {
    const res = await fetch(this.url("api/call/" + method), {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(params ?? {}),
    });
    let body: any;
    try {
      body = await res.json();
    } catch {
      throw new Error(`${method}: HTTP ${res.status} ${res.statusText}`);
    }
    if (!res.ok || (body && body.error !== undefined)) {
      throw new Error(body?.error ?? `${method}: HTTP ${res.status}`);
    }
    return body.result as T;
  }
  subscribe(fn: (u: Update) => void) {
    this.fns.push(fn);
  }
}

/** connect picks the Wails transport inside the desktop app, else HTTP. */
export function connect(): Transport {
  return window.go?.main?.App ? new WailsTransport() : new HTTPTransport();
}
