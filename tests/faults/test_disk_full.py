"""SQLite's disk full under load (issue 32, deliverable 2): one instance (no balancer: SQLite is
one instance) whose data directory is a size-limited tmpfs, publishers, Subscribe streams and a
Query reader running (tests/cluster/load.py) while a filler file takes every free byte, then is
deleted. Publishes fail UNAVAILABLE "the store is unavailable" (SQLITE_FULL is the connection
kind of STORE.md 8; docs/cluster.md, "Faults"), reads keep working, the server recovers by itself,
every acknowledged envelope is readable, no failed publish was stored in part, and the database
passes `PRAGMA integrity_check` once the server has stopped. Prints the numbers the lead quotes."""
import os
import sqlite3
import subprocess
import tempfile
import time
import unittest

import faults as F
import harness
import load as L
import stream_client as S

LOAD_BEFORE_S = float(os.environ.get("XB_FAULT_LOAD_S", "2"))
LOAD_AFTER_S = float(os.environ.get("XB_FAULT_LOAD_S", "3"))
FULL_S = 3  # how long the disk stays full once the first publish failed
TMPFS_SIZE = "32m"
CHUNK = 1 << 20


def mount_tmpfs(path):
    """None once mounted, else why not (not root, no CAP_SYS_ADMIN in a container, ...)."""
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=" + TMPFS_SIZE, "tmpfs", path],
                          capture_output=True, text=True)
    return None if done.returncode == 0 else (done.stderr.strip() or "mount failed")


def fill(directory):
    """Writes a file into `directory` until the filesystem has no byte left; returns its path."""
    path = os.path.join(directory, "filler")
    with open(path, "wb", buffering=0) as f:
        size = CHUNK
        while size >= 512:
            try:
                f.write(b"\0" * size)
            except OSError:
                size //= 2  # ENOSPC: the rest in smaller pieces
    return path


class DiskFullTest(unittest.TestCase):
    def setUp(self):
        self.mount = tempfile.mkdtemp(prefix="xb-full-")
        why = mount_tmpfs(self.mount)
        if why is not None:
            os.rmdir(self.mount)
            self.skipTest("cannot mount a size-limited tmpfs (needs root): " + why)

    def tearDown(self):
        subprocess.run(["umount", "-l", self.mount], capture_output=True)
        os.rmdir(self.mount)

    # verifies: API-220 (nothing stored in part), STORE.md 8 (SQLITE_FULL -> UNAVAILABLE).
    def test_disk_full_under_load(self):
        database = os.path.join(self.mount, "xmtp.db")
        server = harness.Server(config=harness.minimal_config().replace("{data}", self.mount))
        with server:
            load = L.Load(server.target, "full%d" % os.getpid())
            load.start()
            time.sleep(LOAD_BEFORE_S)
            full_at = time.monotonic()
            filler = fill(self.mount)
            # A commit may still fit in pages SQLite already holds: the disk is full for the
            # server once a publish says so.
            harness.wait_for(lambda: any(p.failures for p in load.publishers), 20,
                             "a publish to fail on the full disk")
            failed_s = time.monotonic() - full_at
            seen = F.observe([server], FULL_S, S.gtopic("probe"))
            os.remove(filler)
            freed_at = time.monotonic()
            with S.own_channel(server) as ch:
                caught_up_s = F.catch_up_time(load, ch)
                time.sleep(LOAD_AFTER_S)
                metrics = S.scrape(server)
                load.finish(ch)
                report = load.verify([server], "SQLite disk full (tmpfs %s)" % TMPFS_SIZE)
                report.recover_s = max(F.recovered_after(load, full_at, freed_at),
                                       caught_up_s if caught_up_s is not None else float("inf"))
                resent, partial = F.partial_requests(load, ch)
            server.terminate()
            self.assertEqual(server.wait(timeout=30), 0)
        with sqlite3.connect(database) as db:
            integrity = db.execute("PRAGMA integrity_check").fetchall()
        print("SQLite disk full: first publish failed %.2f s after the disk filled; full for "
              "%.2f s" % (failed_s, freed_at - full_at))
        for line in seen.lines():
            print("  " + line)
        disk_full = S.value(metrics, "xmtp_db_failures_total", cause="disk_full")
        print("  xmtp_db_failures_total{cause=disk_full} %d" % disk_full)
        print("  failed publishes resent: %d, stored in part: %d" % (resent, partial))
        print("  PRAGMA integrity_check: %s" % integrity)
        F.check_no_loss(self, report)
        self.assertEqual(integrity, [("ok",)])
        self.assertEqual(partial, 0)
        # The answer to a publish on a full disk (documented in docs/cluster.md, "Faults").
        self.assertEqual(set(report.publish_failures), {"UNAVAILABLE"})
        # (A commit that fits in pages SQLite already holds may still succeed while it is full.)
        self.assertLessEqual(seen.codes("Publish"), {"UNAVAILABLE", "OK"}, seen.probes["Publish"])
        self.assertIn(("UNAVAILABLE", "the store is unavailable"), seen.probes["Publish"])
        self.assertGreater(disk_full, 0)
        self.assertGreater(S.value(metrics, "xmtp_db_errors_total", kind="connection"), 0)
        # The operator's line names the cause (api/store_status.h), once per interval.
        self.assertIn("store failed: disk full", [r.get("msg") for r in server.log_records()])
        # Reads keep working; the instance stays SERVING (a full disk is no drain).
        self.assertEqual(dict(report.query_failures), {})
        self.assertEqual(seen.codes("Query"), {"OK"}, seen.probes["Query"])
        self.assertEqual(seen.codes("QueryNewest"), {"OK"}, seen.probes["QueryNewest"])
        self.assertEqual(set(seen.health), {"SERVING"})
        self.assertEqual(seen.gauges["xmtp_backend_ready"], {1.0})
        self.assertLess(report.recover_s, 15)


if __name__ == "__main__":
    unittest.main()
