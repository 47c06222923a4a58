"""bench/hardening.py (run it through bench/hardening.sh): what one abusive client costs the server,
for the cases of issue 28. Prints, per case: the server's peak RSS (VmHWM, reset before the case),
its RSS once the load has ended, a concurrent good client's GetConfiguration p50/p99 against its
quiet value, and for stalled responses the time to cut them off; then SIGTERM under the load of
defect 1, N times. Nothing here asserts; the goals are in issue 28 and the figures in the note.

The server runs on CPU 1; every client (h2load, python) on CPU 0. The clients share that core, so
the attacker (h2load) runs at nice 10 and the good client's thread at nice -5: what the good client
measures is then the server's delay, not its own wait for CPU 0 behind h2load.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import grpc

import h2_raw
import harness
import test_hardening as T
from xmtp.backend.v1 import backend_pb2

CONFIG_PATH = "/xmtp.backend.v1.ConfigurationService/GetConfiguration"
MIB = 1 << 20


def pinned_server(binary, config):
    """A harness.Server whose process runs on CPU 1."""
    server = harness.Server(config, binary="taskset")
    server.args = ["taskset", "-c", "1", binary] + server.args[1:]
    return server


class GoodClient:
    """GetConfiguration in a loop on its own channel: latencies in ms, and calls that failed."""

    def __init__(self, target):
        self.target = target
        self.latencies = []
        self.failures = 0
        self._stop = threading.Event()
        self._thread = None

    def _run(self):
        # The channel's threads are created by this one and inherit its priority.
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), -5)
        with grpc.insecure_channel(self.target) as ch:
            call = ch.unary_unary(CONFIG_PATH)
            request = backend_pb2.GetConfigurationRequest().SerializeToString()
            while not self._stop.is_set():
                started = time.monotonic()
                try:
                    call(request, timeout=2)
                    self.latencies.append((time.monotonic() - started) * 1000)
                except grpc.RpcError:
                    self.failures += 1
                time.sleep(0.005)

    def __enter__(self):
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def summary(self):
        if not self.latencies:
            return "no calls answered, %d failed" % self.failures
        xs = sorted(self.latencies)
        p99 = xs[min(len(xs) - 1, int(len(xs) * 0.99))]
        return "p50 %.2f ms, p99 %.2f ms over %d calls, %d failed" % (
            statistics.median(xs), p99, len(xs), self.failures)


class RssSampler:
    """Samples the server's anonymous and file-backed RSS, and its PSS, every 20 ms and keeps their
    maxima. VmHWM counts the SQLite database pages the server maps (page cache) as well, once per
    mapping: each reader connection maps the file, so a page read by several connections counts
    several times in RSS. PSS (/proc/PID/smaps_rollup) counts it once: the process's memory."""

    def __init__(self, pid):
        self.pid = pid
        self.anon = 0
        self.file = 0
        self.pss = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            try:
                with open("/proc/%d/status" % self.pid) as f:
                    for line in f:
                        if line.startswith("RssAnon:"):
                            self.anon = max(self.anon, int(line.split()[1]) * 1024)
                        elif line.startswith("RssFile:"):
                            self.file = max(self.file, int(line.split()[1]) * 1024)
                with open("/proc/%d/smaps_rollup" % self.pid) as f:
                    for line in f:
                        if line.startswith("Pss:"):
                            self.pss = max(self.pss, int(line.split()[1]) * 1024)
            except OSError:
                return
            time.sleep(0.02)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def summary(self):
        return "peak anon %d MiB, file %d MiB, PSS %d MiB" % (self.anon // MIB, self.file // MIB,
                                                              self.pss // MIB)


def anon_now(pid):
    return T.proc_status_bytes(pid, "RssAnon")


def measure_quiet(server, seconds):
    with GoodClient(server.target) as good:
        time.sleep(seconds)
    return good.summary()


def rss_after(server, settle):
    """RSS once the load has ended and the allocator trim (every 2 s) has had its turn."""
    time.sleep(settle)
    return T.rss_bytes(server.proc.pid)


def query_body_file(tmp, body):
    path = os.path.join(tmp, "query.grpc")
    with open(path, "wb") as f:
        f.write(h2_raw.grpc_frame(body))
    return path


def h2load_queries(server, body_file, clients, per_client):
    """h2load: `clients` connections, each with `per_client` concurrent Queries, every byte read."""
    cmd = ["taskset", "-c", "0", "nice", "-n", "10", "h2load", "-n", str(clients * per_client), "-c", str(clients),
           "-m", str(per_client), "-d", body_file, "-H", "content-type: application/grpc",
           "-H", "te: trailers", "http://%s%s" % (server.target, T.QUERY)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600).stdout
    return [l.strip() for l in out.splitlines() if l.startswith(("finished in", "requests:"))]


def case_response_load(args, server, body, clients):
    pid = server.proc.pid
    T.reset_peak_rss(pid)
    before = T.rss_bytes(pid)
    with tempfile.TemporaryDirectory() as tmp, GoodClient(server.target) as good, \
            RssSampler(pid) as sampled:
        summary = h2load_queries(server, query_body_file(tmp, body), clients, 100)
    peak = T.peak_rss_bytes(pid)
    after = rss_after(server, args.settle)
    print("  %d connection(s) x 100 concurrent 24 MB Queries, every byte read: %s" %
          (clients, "; ".join(summary)))
    print("    RSS before %d MiB, peak %d MiB (%s), after %d MiB (anon %d MiB); good client: %s" %
          (before // MIB, peak // MIB, sampled.summary(), after // MIB, anon_now(pid) // MIB,
           good.summary()))


def case_stalled(args, server, body, headers, what):
    pid = server.proc.pid
    T.reset_peak_rss(pid)
    client = h2_raw.Client(server.port, window=0, credit=False)
    started = time.monotonic()
    streams = [client.start(T.QUERY, body, headers) for _ in range(20)]
    ended_at = {}

    def all_ended():
        for s in streams:
            if s.ended and s.id not in ended_at:
                ended_at[s.id] = time.monotonic() - started
        return len(ended_at) == len(streams)

    with GoodClient(server.target) as good:
        client.run_until(all_ended, 120)
    client.close()
    cut = sorted(ended_at.values())
    print("  20 Queries stalled by a zero window, %s: %d ended, cut after %.2f-%.2f s; peak RSS "
          "%d MiB, after %d MiB; good client: %s" %
          (what, len(cut), cut[0] if cut else -1, cut[-1] if cut else -1,
           T.peak_rss_bytes(pid) // MIB, rss_after(server, args.settle) // MIB, good.summary()))


# Rounds of two concurrent 26 MB Publishes of 13,000,000 empty envelopes, from their own process (CPU 0, nice
# 10, as h2load): in this process they would hold the good client's GIL while grpc copies 26 MB.
AMPLIFY = """
import sys, threading, time, grpc
empty = b"\\x0a\\x00" * 13_000_000
def publish():
    with grpc.insecure_channel(sys.argv[1]) as ch:
        started = time.monotonic()
        try:
            ch.unary_unary(sys.argv[2])(empty, timeout=120)
            print("accepted %.2f" % (time.monotonic() - started), flush=True)
        except grpc.RpcError as e:
            print("%s %.2f" % (e.code().name, time.monotonic() - started), flush=True)
for _ in range(int(sys.argv[3])):
    threads = [threading.Thread(target=publish) for _ in range(2)]
    for t in threads: t.start()
    for t in threads: t.join()
"""


def case_amplification(args, server):
    pid = server.proc.pid
    T.reset_peak_rss(pid)
    with GoodClient(server.target) as good:
        out = subprocess.run(["taskset", "-c", "0", "nice", "-n", "10", sys.executable, "-c",
                              AMPLIFY, server.target, T.PUBLISH, str(args.amplify_rounds)],
                             capture_output=True, text=True, timeout=300).stdout
    results = [line.split() for line in out.splitlines() if line.strip()]
    codes = sorted(set(r[0] for r in results))
    seconds = sorted(float(r[1]) for r in results)
    print("  %d rounds of 2 concurrent 26 MB Publishes of 13,000,000 empty envelopes: %d answered "
          "%s in %.2f-%.2f s; peak RSS %d MiB, after %d MiB; good client: %s" %
          (args.amplify_rounds, len(results), "/".join(codes), seconds[0] if seconds else -1,
           seconds[-1] if seconds else -1, T.peak_rss_bytes(pid) // MIB,
           rss_after(server, args.settle) // MIB, good.summary()))


def sigterm_run(binary, drain_ms, index):
    """One run of defect 1's load: 3 connections x 100 concurrent 24 MB Queries, SIGTERM, the
    clients closing at the signal. Returns (exit status, seconds from the signal to the exit)."""
    with pinned_server(binary, T.server_config("max_drain_duration_ms = %d\n" % drain_ms)) as server:
        body = T.publish_big_topic(server, (b"sigterm-%d" % index).ljust(16, b"_")[:16])
        clients = [h2_raw.Client(server.port, window=1 << 20) for _ in range(3)]
        for c in clients:
            for _ in range(100):
                c.start(T.QUERY, body)
        clients[0].run_until(lambda: any(s.data for s in clients[0].streams.values()), 20)
        signalled = time.monotonic()
        server.proc.send_signal(15)
        for c in clients:
            c.close()
        try:
            code = server.proc.wait(timeout=drain_ms / 1000 + 60)
        except subprocess.TimeoutExpired:
            code = "still running"
        return code, time.monotonic() - signalled


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--budget-mib", type=int, default=256)
    parser.add_argument("--connection-mib", type=int, default=128)
    parser.add_argument("--sigterm-runs", type=int, default=20)
    parser.add_argument("--settle", type=float, default=5.0)
    parser.add_argument("--amplify-rounds", type=int, default=5)
    args = parser.parse_args()
    os.sched_setaffinity(0, {0})
    config = T.server_config(
        "stalled_write_timeout_ms = 5000\n",
        "[limits]\nmax_response_memory_bytes = %d\nmax_connection_response_bytes = %d\n" %
        (args.budget_mib * MIB, args.connection_mib * MIB))
    print("command: bench/hardening.sh --binary %s --budget-mib %d --connection-mib %d "
          "--sigterm-runs %d --amplify-rounds %d" % (args.binary, args.budget_mib,
                                                     args.connection_mib, args.sigterm_runs,
                                                     args.amplify_rounds))
    print("config:\n" + config.replace("{data}", "TMP"))
    with pinned_server(args.binary, config) as server:
        body = T.publish_big_topic(server, b"bench-hardening".ljust(16, b"_")[:16])
        print("quiet: RSS %d MiB; good client: %s" %
              (T.rss_bytes(server.proc.pid) // MIB, measure_quiet(server, 3)))
        print("defect 2, response memory (budget %d MiB, %d MiB per connection):" %
              (args.budget_mib, args.connection_mib))
        case_response_load(args, server, body, 1)
        case_response_load(args, server, body, 3)
        print("defect 2, stalled responses (server.stalled_write_timeout_ms = 5000):")
        case_stalled(args, server, body, [("grpc-timeout", "2S")], "grpc-timeout 2S")
        case_stalled(args, server, body, [], "no grpc-timeout")
        print("defect 3, request amplification:")
        case_amplification(args, server)
    drain_ms = 2000
    print("defect 1, SIGTERM under 3 x 100 concurrent 24 MB Queries (max_drain_duration_ms = %d, "
          "bound %.0f s):" % (drain_ms, drain_ms / 1000 + 5))
    runs = [sigterm_run(args.binary, drain_ms, i) for i in range(args.sigterm_runs)]
    clean = sum(1 for code, took in runs if code == 0 and took <= drain_ms / 1000 + 5)
    print("  %d of %d runs exited 0 within the bound; exit seconds: %s; statuses: %s" %
          (clean, len(runs), " ".join("%.1f" % t for _, t in runs),
           sorted(set(str(c) for c, _ in runs))))


if __name__ == "__main__":
    sys.exit(main())
