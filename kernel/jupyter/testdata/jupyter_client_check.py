"""Drive a Kiln Jupyter kernel (running the Go tests' fake handler) with
Jupyter's own Python client, jupyter_client.BlockingKernelClient.

Usage: /usr/bin/python3 jupyter_client_check.py CONNECTION_FILE

Each check prints "PASS <name>"; the first failure raises and the script
exits non-zero. The last check shuts the kernel down. The fake handler's
command language is described in fake_test.go.
"""

import sys
import time
from queue import Empty

from jupyter_client import BlockingKernelClient
from jupyter_client.session import Session

TIMEOUT = 20


def check(cond, what):
    if not cond:
        raise AssertionError(what)


kc = BlockingKernelClient(connection_file=sys.argv[1])
kc.load_connection_file()
kc.start_channels()
kc.wait_for_ready(timeout=TIMEOUT)


def run(code, **kw):
    """Execute code; return the reply and the IOPub messages of the request."""
    outputs = []
    reply = kc.execute_interactive(code, output_hook=outputs.append, timeout=TIMEOUT, **kw)
    return reply, outputs


def shell_reply(msg_id):
    while True:
        msg = kc.get_shell_msg(timeout=TIMEOUT)
        if msg["parent_header"].get("msg_id") == msg_id:
            return msg


def stream_text(outputs, name="stdout"):
    return "".join(m["content"]["text"] for m in outputs
                   if m["msg_type"] == "stream" and m["content"]["name"] == name)


def of_type(outputs, msg_type):
    return [m for m in outputs if m["msg_type"] == msg_type]


checks = []


def case(fn):
    checks.append(fn)
    return fn


@case
def kernel_info():
    msg_id = kc.kernel_info()
    reply = shell_reply(msg_id)
    c = reply["content"]
    check(reply["msg_type"] == "kernel_info_reply", reply["msg_type"])
    check(reply["header"]["version"] == "5.3", reply["header"])
    check(c["status"] == "ok" and c["protocol_version"] == "5.3", c)
    check(c["language_info"]["name"] == "fake", c["language_info"])
    check(kc.is_alive(), "heartbeat")


@case
def execute_stdout():
    reply, out = run("echo hello")
    c = reply["content"]
    check(c["status"] == "ok" and isinstance(c["execution_count"], int), c)
    check(stream_text(out) == "hello\n", out)
    inputs = of_type(out, "execute_input")
    check(len(inputs) == 1 and inputs[0]["content"]["code"] == "echo hello", inputs)
    check(out[-1]["msg_type"] == "status" and out[-1]["content"]["execution_state"] == "idle", out[-1])


@case
def execute_result():
    reply, out = run("result 42")
    results = of_type(out, "execute_result")
    check(len(results) == 1 and results[0]["content"]["data"]["text/plain"] == "42", results)
    check(results[0]["content"]["execution_count"] == reply["content"]["execution_count"], results)


@case
def execute_error():
    reply, out = run("error Boom")
    c = reply["content"]
    check(c["status"] == "error" and c["ename"] == "Boom" and isinstance(c["traceback"], list), c)
    errors = of_type(out, "error")
    check(len(errors) == 1 and errors[0]["content"]["ename"] == "Boom", errors)


@case
def display_and_update():
    _, out = run("display")
    shown, updated = of_type(out, "display_data"), of_type(out, "update_display_data")
    check(len(shown) == 1 and shown[0]["content"]["transient"]["display_id"] == "d1", shown)
    check(len(updated) == 1 and updated[0]["content"]["data"]["text/html"] == "<b>v2</b>", updated)


@case
def complete_inspect_is_complete():
    reply = shell_reply(kc.complete("é pri", 5))["content"]
    check(reply["status"] == "ok" and set(reply["matches"]) == {"print", "println", "printf"}, reply)
    check(reply["cursor_start"] == 2 and reply["cursor_end"] == 5, reply)
    reply = shell_reply(kc.inspect("print", 3))["content"]
    check(reply["status"] == "ok" and reply["found"] and reply["data"]["text/plain"], reply)
    for code, status in (("x := 1", "complete"), ("func f() {", "incomplete"), ("}", "invalid")):
        reply = shell_reply(kc.is_complete(code))["content"]
        check(reply["status"] == status, (code, reply))


@case
def history():
    reply = shell_reply(kc.history(hist_access_type="tail", n=3, output=True))["content"]
    hist = reply["history"]
    check(reply["status"] == "ok" and len(hist) == 3, reply)
    check(hist[0][2] == ["result 42", "42"], hist)
    reply = shell_reply(kc.history(hist_access_type="search", pattern="echo*", output=False))["content"]
    check([h[2] for h in reply["history"]] == ["echo hello"], reply)


@case
def comm_info():
    reply = shell_reply(kc.comm_info())["content"]
    check(reply["status"] == "ok" and reply["comms"] == {}, reply)


@case
def stdin_round_trip():
    prompts = []

    def answer(msg):
        prompts.append(msg["content"]["prompt"])
        kc.input("Ada")

    reply, out = run("input Your name?", allow_stdin=True, stdin_hook=answer)
    check(reply["content"]["status"] == "ok", reply["content"])
    check(prompts == ["Your name?"], prompts)
    results = of_type(out, "execute_result")
    check(results and results[0]["content"]["data"]["text/plain"] == "Ada", out)


@case
def interrupt_request_on_control():
    msg_id = kc.execute("sleep 30s")
    time.sleep(0.5)
    t0 = time.time()
    req = kc.session.msg("interrupt_request", {})
    kc.control_channel.send(req)
    rep = kc.get_control_msg(timeout=TIMEOUT)
    check(rep["msg_type"] == "interrupt_reply" and rep["content"]["status"] == "ok", rep)
    check(rep["parent_header"]["msg_id"] == req["header"]["msg_id"], rep["parent_header"])
    reply = shell_reply(msg_id)["content"]
    check(reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt", reply)
    check(time.time() - t0 < 3, "interrupt took %.1fs" % (time.time() - t0))


@case
def stop_on_error_aborts_queued():
    ids = [kc.execute("slowerror 300ms"), kc.execute("echo queued 1"), kc.execute("echo queued 2")]
    statuses = [shell_reply(i)["content"]["status"] for i in ids]
    check(statuses == ["error", "aborted", "aborted"], statuses)
    reply, _ = run("echo after")
    check(reply["content"]["status"] == "ok", reply["content"])


@case
def output_coalescing():
    t0 = time.time()
    reply, out = run("print 20000")
    elapsed = time.time() - t0
    streams = of_type(out, "stream")
    text = stream_text(out)
    check(reply["content"]["status"] == "ok", reply["content"])
    check(text.count("\n") == 20000 and text.endswith("line 19999\n"), len(text))
    check(len(streams) < 2000 and elapsed < 3, "%d messages in %.2fs" % (len(streams), elapsed))
    print("  20000 lines: %d stream messages in %.2fs" % (len(streams), elapsed))


@case
def bad_signature_not_executed():
    forger = Session(key=b"not the key", username="mallory")
    forger.send(kc.shell_channel.socket, "execute_request",
                {"code": "echo forged", "silent": False, "store_history": True,
                 "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
    try:
        msg = kc.get_shell_msg(timeout=1)
        raise AssertionError("forged request answered: %r" % msg)
    except Empty:
        pass
    reply, out = run("echo genuine")
    check(stream_text(out) == "genuine\n", out)


@case
def malformed_messages_dropped():
    sock = kc.shell_channel.socket
    sock.send_multipart([b"no delimiter here"])
    sock.send_multipart([b"<IDS|MSG>", b"deadbeef", b"{"])
    sock.send_multipart([b"<IDS|MSG>", b"", b"{", b"}", b"{}", b"{}"])
    reply, out = run("echo survived")
    check(reply["content"]["status"] == "ok" and stream_text(out) == "survived\n", out)


@case
def shutdown():
    kc.shutdown()
    rep = kc.get_control_msg(timeout=TIMEOUT)
    check(rep["msg_type"] == "shutdown_reply" and rep["content"]["restart"] is False, rep)


for fn in checks:
    fn()
    print("PASS", fn.__name__, flush=True)
kc.stop_channels()
print("ALL PASSED")
