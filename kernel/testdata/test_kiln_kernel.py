"""Jupyter's kernel conformance suite (jupyter_kernel_test, Debian's
python3-jupyter-kernel-test) against the real Kiln kernel, `kiln kernel run`.

jupyter_client's KernelManager starts the kernel from the kernelspec named by
$KILN_KERNEL_NAME (default "kiln"), found the usual way (JUPYTER_DATA_DIR,
JUPYTER_PATH, ~/.local/share/jupyter). The Go test kernel/kerneltest builds
bin/kiln, installs the kernelspec into a temporary JUPYTER_DATA_DIR and runs

    /usr/bin/python3 -m unittest -v kernel/testdata/test_kiln_kernel.py

Every sample the suite offers is filled in, so nothing is skipped.

KilnFrontendTests adds what JupyterLab and VS Code do beyond the suite:
interrupting a running cell (interrupt_mode "message"), aborting queued cells
after an error, restarting, comm_info (ipywidgets asks for it), reading
stdin through input_request, updating a display in place, and completing at
a cursor in the middle of a cell.
"""

import os
import time
import unittest
from queue import Empty

import jupyter_kernel_test as jkt
from jupyter_client.manager import start_new_kernel

# A 1x1 PNG built in the cell with the standard library, shown through
# Kiln's display package (auto-imported on first use, like image and png).
PNG_CELL = """img := image.NewGray(image.Rect(0, 0, 1, 1))
var buf bytes.Buffer
if err := png.Encode(&buf, img); err != nil {
	panic(err)
}
display.Display(display.PNG(buf.Bytes()))"""


class KilnKernelTests(jkt.KernelTests):
    kernel_name = os.environ.get("KILN_KERNEL_NAME", "kiln")
    language_name = "go"
    file_extension = ".go"

    # stdout through fmt (interpreted), stderr through os.Stderr in a cell
    code_hello_world = 'fmt.Println("hello, world")'
    code_stderr = 'fmt.Fprintln(os.Stderr, "oops")'

    completion_samples = [
        # package members of Kiln's compiled packages
        {"text": "tensor.Ze", "matches": {"Zeros", "ZerosLike", "ZerosOf"}},
        {"text": "fmt.Sprin", "matches": {"Sprint", "Sprintf", "Sprintln"}},
        # a keyword
        {"text": "fallt", "matches": {"fallthrough"}},
        # a variable and a function declared earlier in the same cell
        {"text": "kilnAnswer := 42\nkilnAns", "matches": {"kilnAnswer"}},
        {"text": "func kilnHelper() int { return 1 }\nkilnHel", "matches": {"kilnHelper"}},
        # methods of a value whose type is inferred from the cell
        {
            "text": "x := tensor.Ones(tensor.CPU(), 2)\nx.Su",
            "matches": {"Sub", "SubScalar", "Sum", "SumKeep"},
        },
    ]

    complete_code_samples = [
        "1",
        'fmt.Println("x")',
        "func f() {\n}",
        "x := tensor.Zeros(tensor.CPU(), 2, 3)",
        "%help",
        "tensor.Zeros?",
    ]
    incomplete_code_samples = [
        "func f() {",
        "x := []int{1,",
        "for i := 0; i < 3; i++ {\n\tfmt.Println(i)",
        "s := `raw",
    ]
    invalid_code_samples = ["}", "x := (1 + 2))"]

    # `name?` pages the kernel's description of name (IPython's syntax)
    code_page_something = "tensor.Zeros?"

    # exactly one output message, an error with a list-of-strings traceback
    code_generate_error = "undefinedThing + 1"

    code_execute_result = [
        {"code": "1+2", "result": "3"},
        {"code": "tensor.Ones(tensor.CPU(), 2, 3).Sum().Item()", "result": "6"},
        # a string shows as its text, as fmt.Print would print it
        {"code": 'strings.ToUpper("kiln")', "result": "KILN"},
    ]
    # matches exactly one of the codes above (glob, as IPython's history)
    code_history_pattern = "1+*"
    supported_history_operations = ("tail", "range", "search")

    code_display_data = [
        {"code": 'display.Display(display.HTML("<b>kiln</b>"))', "mime": "text/html"},
        {"code": PNG_CELL, "mime": "image/png"},
        {"code": 'display.Display(display.Markdown("**kiln**"))', "mime": "text/markdown"},
    ]

    code_inspect_sample = "tensor.Zeros"

    code_clear_output = 'fmt.Println("soon gone")\ndisplay.Clear(false)'


TIMEOUT = 20


class KilnFrontendTests(unittest.TestCase):
    kernel_name = KilnKernelTests.kernel_name

    @classmethod
    def setUpClass(cls):
        cls.km, cls.kc = start_new_kernel(kernel_name=cls.kernel_name)

    @classmethod
    def tearDownClass(cls):
        cls.kc.stop_channels()
        cls.km.shutdown_kernel()

    def drain_iopub(self):
        while True:
            try:
                self.kc.get_iopub_msg(timeout=0.1)
            except Empty:
                return

    def reply(self, msg_id):
        """The shell reply to msg_id (skipping others)."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            msg = self.kc.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
            if msg["parent_header"].get("msg_id") == msg_id:
                return msg

    def outputs(self, msg_id):
        """The IOPub messages of msg_id up to its idle status."""
        out = []
        deadline = time.monotonic() + TIMEOUT
        while True:
            msg = self.kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "status":
                if msg["content"]["execution_state"] == "idle":
                    return out
                continue
            if msg["msg_type"] != "execute_input":
                out.append(msg)

    def execute(self, code, **kw):
        msg_id = self.kc.execute(code, **kw)
        reply = self.reply(msg_id)
        return reply["content"], self.outputs(msg_id)

    def result(self, code):
        reply, outs = self.execute(code)
        self.assertEqual(reply["status"], "ok", reply)
        for m in outs:
            if m["msg_type"] == "execute_result":
                return m["content"]["data"]["text/plain"]
        self.fail("no execute_result for %r: %r" % (code, outs))

    def test_interrupt(self):
        self.drain_iopub()
        msg_id = self.kc.execute("spins := 0\nfor {\n\tspins++\n}")
        time.sleep(0.5)
        start = time.monotonic()
        self.km.interrupt_kernel()  # interrupt_request on control ("message" mode)
        reply = self.reply(msg_id)["content"]
        self.assertLess(time.monotonic() - start, 5)
        self.assertEqual(reply["status"], "error")
        self.outputs(msg_id)
        # the session survives, with the loop's progress
        self.assertEqual(self.result("spins > 0"), "true")

    def test_abort_queued_after_error(self):
        self.drain_iopub()
        # the failing cell takes a while, so the next request is surely
        # queued (arrived) before it fails: only those are aborted
        failing = self.kc.execute('time.Sleep(300 * time.Millisecond)\npanic("first")', stop_on_error=True)
        queued = self.kc.execute("1+1")
        self.assertEqual(self.reply(failing)["content"]["status"], "error")
        self.assertEqual(self.reply(queued)["content"]["status"], "aborted")
        self.drain_iopub()
        self.assertEqual(self.result("2+2"), "4")

    def test_comm_info(self):
        msg_id = self.kc.comm_info()
        reply = self.reply(msg_id)["content"]
        self.assertEqual(reply["status"], "ok")
        self.assertIsInstance(reply["comms"], dict)

    def test_stdin(self):
        self.drain_iopub()
        code = 'var name string\nfmt.Print("name? ")\nfmt.Scanln(&name)\n"hello " + name'
        msg_id = self.kc.execute(code, allow_stdin=True)
        req = self.kc.get_stdin_msg(timeout=TIMEOUT)
        self.assertEqual(req["msg_type"], "input_request")
        self.kc.input("kiln")
        reply = self.reply(msg_id)["content"]
        self.assertEqual(reply["status"], "ok")
        outs = self.outputs(msg_id)
        texts = [m["content"]["data"]["text/plain"] for m in outs if m["msg_type"] == "execute_result"]
        self.assertEqual(texts, ["hello kiln"])

    def test_stdin_not_allowed(self):
        # nbconvert and other batch runners send allow_stdin=False: reads see EOF
        self.drain_iopub()
        code = 'var line string\n_, err := fmt.Scanln(&line)\nerr != nil'
        reply, outs = self.execute(code, allow_stdin=False)
        self.assertEqual(reply["status"], "ok")
        texts = [m["content"]["data"]["text/plain"] for m in outs if m["msg_type"] == "execute_result"]
        self.assertEqual(texts, ["true"])

    def test_update_display(self):
        self.drain_iopub()
        code = 'h := display.New(display.HTML("<i>step 1</i>"))\nh.Update(display.HTML("<i>step 2</i>"))'
        reply, outs = self.execute(code)
        self.assertEqual(reply["status"], "ok")
        kinds = [m["msg_type"] for m in outs]
        self.assertEqual(kinds, ["display_data", "update_display_data"], outs)
        shown, updated = outs
        display_id = shown["content"]["transient"]["display_id"]
        self.assertTrue(display_id)
        self.assertEqual(updated["content"]["transient"]["display_id"], display_id)
        self.assertIn("step 2", updated["content"]["data"]["text/html"])

    def test_complete_mid_cell(self):
        code = "x := tensor.Ze(tensor.CPU(), 2)"
        cursor = code.index("(")
        msg_id = self.kc.complete(code, cursor)
        reply = self.reply(msg_id)["content"]
        self.assertEqual(set(reply["matches"]), {"Zeros", "ZerosLike", "ZerosOf"})
        self.assertEqual((reply["cursor_start"], reply["cursor_end"]), (code.index("Ze"), cursor))

    def test_unicode_cursor(self):
        # cursor positions count code points: the é before the cursor is one
        code = 's := "é"\ntensor.Ze'
        msg_id = self.kc.complete(code, len(code))
        reply = self.reply(msg_id)["content"]
        self.assertEqual(set(reply["matches"]), {"Zeros", "ZerosLike", "ZerosOf"})
        self.assertEqual(reply["cursor_start"], len(code) - 2)

    def test_zz_restart(self):  # last: the session starts over
        self.drain_iopub()
        self.assertEqual(self.result('restartMarker := "before"\nrestartMarker'), "before")
        self.km.restart_kernel()
        self.kc.wait_for_ready(timeout=TIMEOUT)
        self.drain_iopub()
        reply, outs = self.execute("restartMarker")
        self.assertEqual(reply["status"], "error")
        self.assertIn("undefined", reply["evalue"])
        self.assertEqual(self.result("1+2"), "3")


if __name__ == "__main__":
    unittest.main(verbosity=2)
