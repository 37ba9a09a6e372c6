# nbconvert configuration for kernel/kerneltest's TestNotebooks: run with
#
#   /usr/bin/python3 -m nbconvert --config kernel/testdata/kiln_record.py \
#       --to notebook --execute --RecordingExecutePreprocessor.record_dir=DIR ...
#
# It replaces nbconvert's ExecutePreprocessor by a subclass that executes
# the notebook the same way (the ExecutePreprocessor options still apply)
# and also records every display message the kernel sends, one JSON line
# each, in DIR/<notebook name>.jsonl: the message type, the display_id, the
# kernel's and the client's times, the size of the message content, and
# the text/html and metadata of messages that carry a display_id (live
# displays).
# nbclient applies update_display_data to the executed notebook, which then
# keeps only the final state; the record shows how it got there.

import json
import os
import time

from nbconvert.exporters.exporter import Exporter
from nbconvert.preprocessors import ExecutePreprocessor
from traitlets import Unicode


class RecordingExecutePreprocessor(ExecutePreprocessor):
    """An ExecutePreprocessor that records display messages."""

    record_dir = Unicode("", help="Folder for the <notebook>.jsonl records; empty records nothing.").tag(config=True)

    def preprocess(self, nb, resources=None, km=None):
        name = ((resources or {}).get("metadata") or {}).get("name") or "notebook"
        self._record = None
        if self.record_dir:
            os.makedirs(self.record_dir, exist_ok=True)
            self._record = open(os.path.join(self.record_dir, name + ".jsonl"), "w", encoding="utf-8")
        try:
            return super().preprocess(nb, resources, km)
        finally:
            if self._record is not None:
                self._record.close()
                self._record = None

    def process_message(self, msg, cell, cell_index):
        kind = msg.get("header", {}).get("msg_type", "")
        if getattr(self, "_record", None) is not None and kind in ("display_data", "update_display_data"):
            content = msg.get("content", {})
            display_id = (content.get("transient") or {}).get("display_id", "")
            sent = msg.get("header", {}).get("date", "")
            if not isinstance(sent, str):
                sent = sent.isoformat()
            rec = {
                "type": kind,
                "cell": cell_index,
                "display_id": display_id,
                "sent": sent,
                "received": time.time(),
                "bytes": len(json.dumps(content)),
                "metadata": content.get("metadata") or {},
                "html": (content.get("data") or {}).get("text/html", "") if display_id else "",
            }
            self._record.write(json.dumps(rec) + "\n")
            self._record.flush()
        return super().process_message(msg, cell, cell_index)


c = get_config()  # noqa: F821 (defined by traitlets when it loads this file)
c.Exporter.default_preprocessors = [
    RecordingExecutePreprocessor if p.endswith(".ExecutePreprocessor") else p
    for p in Exporter().default_preprocessors
]
