"""Robustness checks of the real Kiln kernel with Jupyter's own client
library: jupyter_client's KernelManager starts `kiln kernel run` from its
kernelspec, as JupyterLab does.

Usage: JUPYTER_PATH=DIR /usr/bin/python3 robust_check.py KERNEL_NAME STDERR_FILE

The kernel's stderr goes to STDERR_FILE. Each check prints "PASS <name>";
the first failure raises and the script exits non-zero; "ALL PASSED" ends
a good run.
"""

import os
import sys
import time
import zmq
from jupyter_client import KernelManager
from jupyter_client.session import Session

TIMEOUT = 20
kernel_name, stderr_path = sys.argv[1], sys.argv[2]


def check(cond, what):
    if not cond:
        raise AssertionError(what)


stderr_file = open(stderr_path, "w")
km = KernelManager(kernel_name=kernel_name)
km.start_kernel(stderr=stderr_file)
check(km.kernel_spec.interrupt_mode == "message", km.kernel_spec.interrupt_mode)


def connect():
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=TIMEOUT)
    return kc


kc = connect()


def run(code, timeout=TIMEOUT, **kw):
    """Execute code; return the reply content and the request's IOPub messages."""
    outputs = []
    reply = kc.execute_interactive(code, output_hook=outputs.append, timeout=timeout, **kw)
    return reply["content"], outputs


def shows(code):
    c, out = run(code)
    check(c["status"] == "ok", (code, c))
    results = [m["content"]["data"]["text/plain"] for m in out if m["msg_type"] == "execute_result"]
    check(len(results) == 1, (code, out))
    return results[0]


def interrupt():
    c, _ = run("n := 0")
    check(c["status"] == "ok", c)
    msg_id = kc.execute("for {\n\tn++\n}")
    time.sleep(0.5)
    start = time.monotonic()
    km.interrupt_kernel()  # interrupt_request on control: interrupt_mode "message"
    while True:
        msg = kc.get_shell_msg(timeout=TIMEOUT)
        if msg["parent_header"].get("msg_id") == msg_id:
            break
    took = time.monotonic() - start
    c = msg["content"]
    check(c["status"] == "error" and c["ename"] == "Interrupted", c)
    check(took < 2, "interrupted after %.2fs" % took)
    check(shows("n > 0") == "true", "n after the interrupt")


def forged_signature():
    # A raw client that knows the ports but not the key.
    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.DEALER)
    sock.linger = 0
    sock.connect("%s://%s:%d" % (km.transport, km.ip, km.shell_port))
    forger = Session(key=b"not-the-key")
    forger.send(sock, "execute_request", content={
        "code": "forged := 1", "silent": False, "store_history": True,
        "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
    check(sock.poll(1000) == 0, "the kernel answered a forged request")
    sock.close()
    c, _ = run("forged")
    check(c["status"] == "error" and "undefined" in c["evalue"], c)


def stdin():
    asked = []

    def answer(msg):
        asked.append(msg["content"]["prompt"])
        kc.input("Ada")

    c, out = run('var who string\nfmt.Print("who? ")\nfmt.Scanln(&who)\nfmt.Println("hi", who)',
                 allow_stdin=True, stdin_hook=answer)
    check(c["status"] == "ok", c)
    text = "".join(m["content"]["text"] for m in out if m["msg_type"] == "stream")
    check(text == "who? hi Ada\n" and len(asked) == 1, (text, asked))


def goroutine_panic():
    # A go statement's goroutine panics: the kernel reports it on the cell
    # and keeps running.
    c, out = run("done := make(chan bool)\ngo func() {\n\tdefer close(done)\n\tpanic(\"from a goroutine\")\n}()\n<-done\ntime.Sleep(50 * time.Millisecond)")
    check(c["status"] == "ok", c)
    err = "".join(m["content"]["text"] for m in out if m["msg_type"] == "stream" and m["content"]["name"] == "stderr")
    check("panic: from a goroutine [recovered by the kernel" in err, err)
    check(km.is_alive(), "the kernel died")
    check(shows("y := 41\ny + 1") == "42", "after the goroutine's panic")


def crash_and_restart():
    global kc
    c, _ = run("x := 41")
    check(c["status"] == "ok", c)
    # A goroutine that compiled code starts is not guarded: it ends the
    # process, and the crash monitor names the panic.
    kc.execute("time.AfterFunc(0, func() {\n\tpanic(\"from a goroutine\")\n})\ntime.Sleep(10 * time.Second)")
    deadline = time.monotonic() + 10
    while km.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    check(not km.is_alive(), "the kernel did not die")
    time.sleep(0.5)  # the crash monitor writes its last line after the kernel died
    stderr_file.flush()
    with open(stderr_path) as f:
        lines = f.read().rstrip("\n").split("\n")
    check(lines[-1].startswith("kiln kernel: the process ended: panic: from a goroutine"), lines[-3:])
    kc.stop_channels()
    km.restart_kernel(now=True)
    kc = connect()
    check(shows("x := 1\nx + 41") == "42", "after the restart")


def shutdown():
    kc.stop_channels()
    km.shutdown_kernel(now=False)
    check(not km.is_alive(), "alive after shutdown")


try:
    for check_fn in (interrupt, forged_signature, stdin, goroutine_panic, crash_and_restart, shutdown):
        check_fn()
        print("PASS", check_fn.__name__, flush=True)
finally:
    if km.is_alive():
        kc.stop_channels()
        km.shutdown_kernel(now=True)
print("ALL PASSED", flush=True)
# Skip interpreter teardown, where jupyter_client 7's KernelClient.__del__
# logs through a logging module already torn down.
os._exit(0)
