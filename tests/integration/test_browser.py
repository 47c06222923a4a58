"""Issue 33's acceptance with a released client, unchanged: @xmtp/browser-sdk 7.1.0 (its WASM
libxmtp core) in headless Debian Chromium, driven over the DevTools protocol
(tests/browser/driver.mjs), against this backend through `apiUrl` (gRPC-Web over HTTP/1.1 from
the page). The page (tests/browser/src/page.js) runs the scenario with fresh random wallets: two
inboxes, canMessage, a group, send, sync, both directions streamed, a third member added later,
a second installation opened and revoked; device sync on (the SDK default). Cross-view: one of
A's sends is held back by the driver and published here through xmtp.backend.v1 instead, and B's
V3 stream must deliver it; afterwards the group's rows read through xmtp.backend.v1 Query and
SubscribeStatic are the rows QueryGroupMessages returns. On SQLite and, with XB_PG_PRIMARY set,
on PostgreSQL. Needs tests/browser/setup (run by scripts/setup) and Debian's chromium."""
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

import harness
import stream_client as S
from mls.api.v1 import mls_pb2
from xmtp.backend.v1 import backend_pb2

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCES = os.path.join(ROOT, "tests", "browser")
PACKAGES = os.path.join(ROOT, "build-browser")  # tests/browser/setup's npm ci
PUBLISH = "/xmtp.backend.v1.PublishService/Publish"
QUERY_GROUP_MESSAGES = "/xmtp.mls.api.v1.MlsApi/QueryGroupMessages"
RUN_TIMEOUT_S = 300


def bundle(out):
    """The page and the SDK's workers bundled into `out` (esbuild, from build-browser/)."""
    for script in ("build.mjs", "driver.mjs"):  # node resolves their imports beside them
        shutil.copy(os.path.join(SOURCES, script), PACKAGES)
    subprocess.run(["node", "build.mjs", os.path.join(SOURCES, "src"), out], cwd=PACKAGES,
                   check=True, timeout=120)


class CapturedSends:
    """Publishes, through xmtp.backend.v1, each SendGroupMessages request the driver held back
    (CAPTURE_DIR/NNN.bin: a SendGroupMessagesRequest, which is a PublishRequest on the wire)."""

    def __init__(self, server, directory):
        self.server, self.directory = server, directory
        self.rows, self.errors = [], []  # rows: (topic, id) of what was published
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        done = set()
        while not self._stop.is_set():
            for name in sorted(os.listdir(self.directory)):
                if name in done or not name.endswith(".bin"):
                    continue
                done.add(name)
                with open(os.path.join(self.directory, name), "rb") as f:
                    body = f.read()
                try:
                    with self.server.channel() as ch:
                        reply, _ = harness.raw_unary(ch, PUBLISH, body, timeout=20)
                    metas = backend_pb2.PublishResponse.FromString(reply).envelope_metas
                    self.rows += [(m.topic.topic, m.cursor.sequence_id) for m in metas]
                except Exception as e:  # noqa: BLE001 - reported by the test
                    self.errors.append(repr(e))
            time.sleep(0.05)

    def stop(self):
        self._stop.set()
        self._thread.join()


class BrowserMixin:
    def run_page(self):
        with tempfile.TemporaryDirectory() as tmp:
            out, capture = os.path.join(tmp, "out"), os.path.join(tmp, "capture")
            os.mkdir(capture)
            bundle(out)
            sends = CapturedSends(self.server, capture)
            run = subprocess.run(
                ["node", "driver.mjs", "http://" + self.server.target, out, capture,
                 str(RUN_TIMEOUT_S)], cwd=PACKAGES, capture_output=True, text=True,
                timeout=RUN_TIMEOUT_S + 60)
            sends.stop()
        results = [l for l in run.stdout.splitlines() if l.startswith("RESULT ")]
        if not results or not results[-1].startswith("RESULT ok "):
            self.fail("the page failed: %s\n%s" % (results, run.stdout[-6000:]))
        self.assertEqual(sends.errors, [])
        return json.loads(results[-1][len("RESULT ok "):]), sends.rows

    # verifies: issue 33 (acceptance: a released client, unchanged; cross-view both ways)
    def test_released_browser_client(self):
        report, published_by_v1 = self.run_page()
        self.assertEqual(report["canMessage"], [True])
        self.assertEqual(report["bSynced"], ["one"])
        for streamed in (report["bStreamed"], report["aStreamed"]):
            self.assertEqual([t for t in streamed if t in ("two", "reply", "via-v1", "three")],
                             ["two", "reply", "via-v1", "three"])
        self.assertEqual(report["cSynced"], ["three"])  # joined after the earlier messages
        self.assertEqual(report["beforeRevoke"],
                         sorted([report["installationA"], report["installationA2"]]))
        self.assertEqual(report["seenByA"], [report["installationA"]])
        self.assertEqual(report["seenByB"], [report["installationA"]])
        group = bytes.fromhex(report["groupId"])
        # Other groups' sends (the device-sync group) may be held back too.
        via_v1 = [i for topic, i in published_by_v1 if topic == b"\x00" + group]
        self.assertTrue(via_v1, "none of the group's sends was held back for xmtp.backend.v1")
        self.check_views(group, via_v1)

    def check_views(self, group, via_v1):
        """The group's rows are the same through v1 Query, v1 SubscribeStatic and V3."""
        topic = b"\x00" + group
        with self.server.channel() as ch:
            v1_ids = S.read_topic(ch, topic)
            page, _ = harness.unary(ch, QUERY_GROUP_MESSAGES, mls_pb2.QueryGroupMessagesRequest(
                group_id=group, paging_info=mls_pb2.PagingInfo(
                    direction=mls_pb2.SORT_DIRECTION_ASCENDING)),
                mls_pb2.QueryGroupMessagesResponse, timeout=20)
        self.assertEqual([m.v1.id for m in page.messages], v1_ids)
        self.assertTrue(set(via_v1) <= set(v1_ids))
        with S.own_channel(self.server) as ch:
            stream = S.Static(ch, [(topic, 0)])
            stream.started(self)
            self.assertEqual(stream.ids(len(v1_ids), timeout=20), v1_ids)
            stream.cancel()


class SqliteBrowserTest(BrowserMixin, harness.ServerTestCase):
    pass


@unittest.skipUnless(os.environ.get("XB_PG_PRIMARY"), "needs XB_PG_PRIMARY")
class PostgresBrowserTest(BrowserMixin, harness.PgServerTestCase):
    pass


if __name__ == "__main__":
    unittest.main()
