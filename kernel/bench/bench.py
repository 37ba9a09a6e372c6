#!/usr/bin/python3
"""Speed of the Kiln kernel as a Jupyter front end sees it.

    JUPYTER_DATA_DIR=... /usr/bin/python3 kernel/bench/bench.py [--kernel kiln] [--runs 200] [--starts 10]

Measures, with jupyter_client (Debian's python3-jupyter-client) and pyzmq:

- start: from KernelManager.start_kernel() (writing the connection file and
  spawning `kiln kernel run`) to the first kernel_info_reply on the shell
  channel, over --starts fresh kernels (after one uncounted start). Target:
  median < 500 ms. It includes up to 100 ms of libzmq's reconnect interval:
  the client's first connection attempt comes before the kernel listens.
- round trip of a trivial cell: from sending an execute_request to receiving
  the cell's idle status on IOPub (the reply has arrived by then), over
  --runs cells after a few warm-up ones. Target: median < 3 ms. Cells: `_ = 0`
  (shows nothing), `1+2` (an execute_result) and `fmt.Println("x")` (a
  stream). The kernel's CPU time per cell (from /proc) is shown beside it:
  unlike wall time, it hardly depends on what else the machine is doing.

By default (--client raw) the requests go through raw zmq sockets with
jupyter_client's Session (the signing and framing every front end does).
--client blocking uses jupyter_client's BlockingKernelClient instead
(kc.execute, then kc.get_iopub_msg until the cell's idle status and
kc.get_shell_msg for the reply), as a script or a test drives a kernel; its
own message handling adds a little to each figure.

The kernel must be installed (`kiln kernel install`, or with JUPYTER_DATA_DIR
set). Prints a table and, with --json, the figures as JSON.
"""

import argparse
import json
import os
import statistics
import sys
import time

import zmq
from jupyter_client.manager import KernelManager
from jupyter_client.session import Session


def connect(km, ctx):
    """Shell (DEALER) and IOPub (SUB) sockets to km's kernel."""
    info = km.get_connection_info(session=True)
    session = info["session"]
    shell = ctx.socket(zmq.DEALER)
    shell.setsockopt(zmq.LINGER, 0)
    shell.connect("%s://%s:%d" % (info["transport"], info["ip"], info["shell_port"]))
    iopub = ctx.socket(zmq.SUB)
    iopub.setsockopt(zmq.LINGER, 0)
    iopub.setsockopt(zmq.SUBSCRIBE, b"")
    iopub.connect("%s://%s:%d" % (info["transport"], info["ip"], info["iopub_port"]))
    return session, shell, iopub


def recv(session, sock, timeout):
    if not sock.poll(int(timeout * 1000)):
        raise TimeoutError("no message within %.1f s" % timeout)
    _, parts = session.feed_identities(sock.recv_multipart(copy=True))
    return session.deserialize(parts, content=True)


def time_start(name, ctx):
    """Seconds from start_kernel to the first kernel_info_reply."""
    km = KernelManager(kernel_name=name)
    t0 = time.perf_counter()
    km.start_kernel()
    session, shell, iopub = connect(km, ctx)
    try:
        session.send(shell, "kernel_info_request", {})
        while True:
            msg = recv(session, shell, 30)
            if msg["msg_type"] == "kernel_info_reply":
                return time.perf_counter() - t0
    finally:
        shell.close()
        iopub.close()
        km.shutdown_kernel(now=True)


def wait_ready(session, shell, iopub):
    """Repeats kernel_info until IOPub delivers (the SUB has subscribed)."""
    for _ in range(100):
        session.send(shell, "kernel_info_request", {})
        recv(session, shell, 30)
        try:
            recv(session, iopub, 0.2)
            break
        except TimeoutError:
            continue
    while True:  # drain
        try:
            recv(session, iopub, 0.2)
        except TimeoutError:
            return


def round_trip(session, shell, iopub, code):
    """Seconds from execute_request to the cell's idle status; checks the reply."""
    t0 = time.perf_counter()
    req = session.send(shell, "execute_request", {
        "code": code, "silent": False, "store_history": True,
        "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
    msg_id = req["header"]["msg_id"]
    while True:
        msg = recv(session, iopub, 10)
        if (msg["msg_type"] == "status" and msg["parent_header"].get("msg_id") == msg_id
                and msg["content"]["execution_state"] == "idle"):
            dt = time.perf_counter() - t0
            break
    reply = recv(session, shell, 10)
    if reply["content"]["status"] != "ok":
        raise RuntimeError("cell %r failed: %r" % (code, reply["content"]))
    return dt


def round_trip_blocking(kc, code):
    """round_trip through a BlockingKernelClient."""
    t0 = time.perf_counter()
    msg_id = kc.execute(code, silent=False, store_history=True, allow_stdin=False, stop_on_error=True)
    while True:
        msg = kc.get_iopub_msg(timeout=10)
        if (msg["msg_type"] == "status" and msg["parent_header"].get("msg_id") == msg_id
                and msg["content"]["execution_state"] == "idle"):
            dt = time.perf_counter() - t0
            break
    while True:
        reply = kc.get_shell_msg(timeout=10)
        if reply["parent_header"].get("msg_id") == msg_id:
            break
    if reply["content"]["status"] != "ok":
        raise RuntimeError("cell %r failed: %r" % (code, reply["content"]))
    return dt


def cpu_seconds(pid):
    """User+system CPU time of process pid (Linux), or None."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def summary(xs):
    xs = sorted(xs)
    return {"n": len(xs), "median_ms": statistics.median(xs) * 1e3, "min_ms": xs[0] * 1e3,
            "p90_ms": xs[int(0.9 * (len(xs) - 1))] * 1e3, "max_ms": xs[-1] * 1e3}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernel", default="kiln", help="kernelspec name")
    ap.add_argument("--runs", type=int, default=200, help="trivial cells per kind")
    ap.add_argument("--starts", type=int, default=10, help="kernel starts")
    ap.add_argument("--cells", nargs="+", default=["_ = 0", "1+2", 'fmt.Println("x")'],
                    help="the trivial cells to time (for another kernel, cells in its language)")
    ap.add_argument("--client", choices=["raw", "blocking"], default="raw",
                    help="raw zmq sockets with jupyter_client's Session, or its BlockingKernelClient")
    ap.add_argument("--json", action="store_true", help="also print the figures as JSON")
    args = ap.parse_args()

    ctx = zmq.Context.instance()
    results = {}

    # The first start in a Python process also pays for jupyter_client's
    # one-off work (kernelspec and provisioner discovery, about 0.5 s): a
    # notebook server pays it once, so it is not counted.
    time_start(args.kernel, ctx)
    starts = [time_start(args.kernel, ctx) for _ in range(args.starts)]
    results["start"] = summary(starts)

    km = KernelManager(kernel_name=args.kernel)
    km.start_kernel()
    if args.client == "blocking":
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=30)
        while True:  # drain what came before
            try:
                kc.get_iopub_msg(timeout=0.2)
            except Exception:
                break
        once = lambda code: round_trip_blocking(kc, code)
        close = kc.stop_channels
    else:
        session, shell, iopub = connect(km, ctx)
        wait_ready(session, shell, iopub)
        once = lambda code: round_trip(session, shell, iopub, code)

        def close():
            shell.close()
            iopub.close()
    try:
        pid = km.provisioner.process.pid
        for code in args.cells:
            for _ in range(10):
                once(code)
            cpu0 = cpu_seconds(pid)
            results["cell " + code] = summary([once(code) for _ in range(args.runs)])
            cpu1 = cpu_seconds(pid)
            if cpu0 is not None and cpu1 is not None:
                results["cell " + code]["kernel_cpu_ms"] = (cpu1 - cpu0) / args.runs * 1e3
    finally:
        close()
        km.shutdown_kernel(now=True)

    targets = {"start": 500.0}
    print("%-26s %5s %9s %9s %9s %9s %11s   %s" % ("measure", "n", "median", "min", "p90", "max", "kernel CPU", "target"))
    ok = True
    for name, r in results.items():
        target = targets.get(name, 3.0)
        good = r["median_ms"] < target
        ok = ok and good
        cpu = "%9.2fms" % r["kernel_cpu_ms"] if "kernel_cpu_ms" in r else ""
        print("%-26s %5d %7.2fms %7.2fms %7.2fms %7.2fms %11s   median < %g ms %s" % (
            name, r["n"], r["median_ms"], r["min_ms"], r["p90_ms"], r["max_ms"], cpu, target,
            "ok" if good else "MISSED"))
    if args.json:
        print(json.dumps(results, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
