"""Jupyter's kernel conformance suite (jupyter_kernel_test, Debian's
python3-jupyter-kernel-test) against the Go tests' fake kernel.

The Go test installs a kernelspec named "kiln-fake" under a temporary
JUPYTER_PATH whose argv starts the test binary as a kernel process; here
jupyter_client's KernelManager launches it, as Jupyter would. The fake
handler's command language is described in fake_test.go.
"""

import unittest

import jupyter_kernel_test as jkt


class FakeKernelTests(jkt.KernelTests):
    kernel_name = "kiln-fake"
    language_name = "fake"
    file_extension = ".fake"

    code_hello_world = "echo hello, world"
    code_stderr = "stderr oops"
    completion_samples = [{"text": "pri", "matches": {"print", "println", "printf"}}]
    complete_code_samples = ["x := 1"]
    incomplete_code_samples = ["func f() {"]
    invalid_code_samples = ["}"]
    code_generate_error = "error Boom"
    code_execute_result = [{"code": "result 6", "result": "6"}]
    code_display_data = [{"code": "display", "mime": "text/html"}]
    supported_history_operations = ("tail", "range", "search")
    code_history_pattern = "result*"
    code_inspect_sample = "print"
    code_clear_output = "clear"
    code_page_something = "page some help text"


if __name__ == "__main__":
    unittest.main(verbosity=2)
