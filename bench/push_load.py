"""The load side of bench/push.sh (issue 30): registers APNs recipients with NotificationService,
publishes push-eligible group messages, and joins the sink's arrivals with the publish times.

  push_load.py run    --target HOST:PORT --server-pid PID --sink-status FILE --out DIR
                      [--recipients N] [--topics T] [--duration S] [--batch B]
                      [--publishers W] [--metrics HOST:PORT] [--repeats R]
  push_load.py report --out DIR --records FILE [--poll-ms MS]

`run` repeats phases (a) max, (b) half and (c) light R times and writes DIR/publishes.txt (one
line per stored envelope: phase, the CLOCK_REALTIME ns at which its Publish call returned,
sequence id, base64 topic) and DIR/phases.json (per phase: the publish window, server CPU seconds
at its start, at the end of publishing and when the sink had every expected push). `report` reads
those and the sink's records and prints the markdown table of medians.
Needs /usr/bin/python3 with python3-grpcio and PYTHONPATH holding build/python and
tests/integration (envelopes.py builds the MLS PrivateMessage bytes)."""
import argparse
import base64
import collections
import json
import os
import sys
import threading
import time
import urllib.request

import grpc

import envelopes as E
from xmtp.backend.v1 import backend_pb2 as pb

REGISTER = "/xmtp.backend.v1.NotificationService/Register"
UPDATE = "/xmtp.backend.v1.NotificationService/UpdateSubscriptions"
PUBLISH = "/xmtp.backend.v1.PublishService/Publish"
CLK_TCK = os.sysconf("SC_CLK_TCK")
GATE_TIMEOUT_S = 20
DRAIN_IDLE_S = 10  # give up waiting for pushes after this long without a new one
DRAIN_MAX_S = 300
# Phase (b) batches envelopes so that it makes at most this many Publish calls a second: beyond
# that python3-grpcio on CPU 0 falls behind the schedule.
MAX_PACED_CALLS = 500
# Phase (c), for context: the latency floor at a light load (the poll interval's share).
LIGHT_DELIVERIES_S = 1000


def log(text):
    print("[push_load] " + text, file=sys.stderr, flush=True)


def server_cpu_s(pid):
    """utime + stime of the process, in seconds (/proc/PID/stat fields 14 and 15)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def sink_status(status_file):
    """The sink's status line as a dict of ints (requests, bad, connections, last_ns)."""
    try:
        with open(status_file) as f:
            return {k: int(v) for k, v in (w.split("=", 1) for w in f.read().split())}
    except (OSError, ValueError):
        return {}


def sink_requests(status_file):
    status = sink_status(status_file)
    return status.get("requests", 0), status.get("bad", 0)


class Caller:
    """Unary calls by path on one channel (one per thread)."""

    def __init__(self, target):
        self.channel = grpc.insecure_channel(target)
        self.methods = {}

    def call(self, path, request, response_type, timeout=30):
        method = self.methods.get(path)
        if method is None:
            method = self.channel.unary_unary(path,
                                              request_serializer=lambda m: m.SerializeToString(),
                                              response_deserializer=response_type.FromString)
            self.methods[path] = method
        return method(request, timeout=timeout)


def in_threads(count, work):
    """Runs work(index) in `count` threads; re-raises the first failure."""
    errors = []

    def body(i):
        try:
            work(i)
        except Exception as e:  # reported below, after every thread ended
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def register_all(args, topics):
    """N recipients with 64-hex-digit APNs tokens; recipient i subscribes to topic i % T."""
    counter = iter(range(args.recipients))
    lock = threading.Lock()

    def work(_):
        caller = Caller(args.target)
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            rid, secret = os.urandom(32), os.urandom(32)
            req = pb.RegisterRequest(recipient_id=rid, recipient_secret=secret)
            req.apns.token = os.urandom(32).hex()
            caller.call(REGISTER, req, pb.RecipientState)
            caller.call(UPDATE, pb.UpdateSubscriptionsRequest(
                recipient_id=rid, recipient_secret=secret,
                adds=[pb.Subscription(topic=topics[i % len(topics)])]), pb.RecipientState)

    started = time.monotonic()
    in_threads(8, work)
    return time.monotonic() - started


def envelope(group_id, n):
    data = E.private_message(group_id, 1, n.to_bytes(8, "big") + os.urandom(24))
    return pb.ClientEnvelope(group_message=pb.GroupMessage(data=data, should_push=True))


class Publisher:
    """Publishes envelopes round-robin over the topics and keeps (returned_ns, seq, topic)."""

    def __init__(self, args, group_ids):
        self.args = args
        self.group_ids = group_ids
        self.b64 = [base64.b64encode(E.group_topic(g)).decode() for g in group_ids]
        self.lock = threading.Lock()
        self.next_envelope = 0
        self.rows = []  # (returned_ns, sequence_id, topic b64)

    def take(self, count):
        with self.lock:
            first = self.next_envelope
            self.next_envelope += count
        return first

    def publish(self, caller, first, count):
        idx = [(first + k) % len(self.group_ids) for k in range(count)]
        req = pb.PublishRequest(envelopes=[envelope(self.group_ids[i], first + k)
                                           for k, i in enumerate(idx)])
        resp = caller.call(PUBLISH, req, pb.PublishResponse)
        returned = time.time_ns()
        rows = [(returned, m.cursor.sequence_id, self.b64[i])
                for m, i in zip(resp.envelope_metas, idx)]
        if len(rows) != count:
            raise RuntimeError("Publish returned %d metas for %d envelopes" % (len(rows), count))
        with self.lock:
            self.rows.extend(rows)

    def closed_loop(self, duration):
        """As fast as `publishers` threads, one call in flight each, can go for `duration` s."""
        end = time.monotonic() + duration

        def work(_):
            caller = Caller(self.args.target)
            while time.monotonic() < end:
                self.publish(caller, self.take(self.args.batch), self.args.batch)

        in_threads(self.args.publishers, work)

    def paced(self, duration, rate, batch):
        """`batch` envelopes per call, call k due at start + k * batch / rate (late ones go at
        once)."""
        start = time.monotonic()
        first = self.take(0)
        calls = int(duration * rate / batch)

        def work(_):
            caller = Caller(self.args.target)
            while True:
                n = self.take(batch)
                k = (n - first) // batch
                if k >= calls:
                    return
                wait = start + k * batch / rate - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                self.publish(caller, n, batch)

        in_threads(max(self.args.publishers, 8), work)


def wait_for_pushes(status_file, expected, what):
    """Waits until the sink answered `expected` requests; False when it stalls or takes too
    long."""
    deadline = time.monotonic() + DRAIN_MAX_S
    last, last_change = -1, time.monotonic()
    while time.monotonic() < deadline:
        n, _ = sink_requests(status_file)
        if n >= expected:
            return True
        if n != last:
            last, last_change = n, time.monotonic()
        elif time.monotonic() - last_change > DRAIN_IDLE_S:
            break
        time.sleep(0.05)
    log("%s: the sink has %d of %d expected pushes" % (what, max(last, 0), expected))
    return False


def run_phase(name, args, publisher, run):
    """Publishes with `run`, then waits for every push; returns the phase's summary."""
    publisher.rows = []
    before, _ = sink_requests(args.sink_status)
    cpu0, t0 = server_cpu_s(args.server_pid), time.time_ns()
    run()
    cpu1, t1 = server_cpu_s(args.server_pid), time.time_ns()
    expected = before + len(publisher.rows) * args.recipients // args.topics
    complete = wait_for_pushes(args.sink_status, expected, name)
    cpu2 = server_cpu_s(args.server_pid)
    time.sleep(0.25)  # the sink rewrites its status every 100 ms
    status = sink_status(args.sink_status)
    log("%s: %d envelopes in %.1f s, pushes %s" % (name, len(publisher.rows), (t1 - t0) / 1e9,
                                                  "complete" if complete else "INCOMPLETE"))
    with open(os.path.join(args.out, "publishes.txt"), "a") as f:
        for returned, seq, topic in publisher.rows:
            f.write("%s %d %d %s\n" % (name, returned, seq, topic))
    return {"name": name, "t0": t0, "t1": t1, "cpu0": cpu0, "cpu1": cpu1, "cpu2": cpu2,
            "envelopes": len(publisher.rows), "complete": complete,
            "pushes": status.get("requests", 0) - before, "last_ns": status.get("last_ns", t0)}


def gate(args, publisher):
    """One envelope must reach the sink once per subscriber of its topic."""
    before, bad = sink_requests(args.sink_status)
    publisher.publish(Caller(args.target), publisher.take(1), 1)
    publisher.rows = []
    per_topic = args.recipients // args.topics
    deadline = time.monotonic() + GATE_TIMEOUT_S
    while time.monotonic() < deadline:
        n, bad = sink_requests(args.sink_status)
        if n >= before + per_topic:
            break
        time.sleep(0.05)
    n, bad = sink_requests(args.sink_status)
    if n != before + per_topic or bad != 0:
        raise SystemExit("gate failed: one publish gave %d pushes (want %d) and %d bad requests "
                         "at the sink; server: %s" % (n - before, per_topic, bad,
                                                      push_metrics(args.metrics)))


def push_metrics(metrics):
    """The server's xmtp_push_* samples, one string (for a failure message)."""
    if not metrics:
        return "no metrics endpoint"
    try:
        text = urllib.request.urlopen("http://%s/metrics" % metrics, timeout=5).read().decode()
    except OSError as e:
        return "metrics scrape failed: %s" % e
    return "; ".join(line for line in text.splitlines() if line.startswith("xmtp_push_"))


def scrape_deliveries(metrics):
    """xmtp_push_deliveries_total{channel="apns",outcome=...} from the metrics endpoint."""
    out = {}
    try:
        text = urllib.request.urlopen("http://%s/metrics" % metrics, timeout=5).read().decode()
    except OSError as e:
        return {"scrape failed": str(e)}
    for line in text.splitlines():
        if line.startswith("xmtp_push_deliveries_total{") and 'channel="apns"' in line:
            outcome = line.split('outcome="', 1)[1].split('"', 1)[0]
            out[outcome] = int(float(line.rsplit(" ", 1)[1]))
    return out


def run_repeat(args, publisher, rep):
    """Phases (a), (b) and (c) once; their summaries."""
    per_topic = args.recipients // args.topics
    a = run_phase("max.%d" % rep, args, publisher, lambda: publisher.closed_loop(args.duration))
    a.update(kind="max", asked=0, batch=args.batch)
    deliveries_s = a["pushes"] / (max(a["last_ns"] - a["t0"], 1) / 1e9)
    half = deliveries_s / 2 / per_topic
    log("max.%d: %.0f deliveries/s; half rate = %.1f envelopes/s" % (rep, deliveries_s, half))
    phases = [a]
    if half >= 1:
        batch = max(1, -(-int(half) // MAX_PACED_CALLS))
        b = run_phase("half.%d" % rep, args, publisher,
                      lambda: publisher.paced(args.duration, half, batch))
        b.update(kind="half", asked=half, batch=batch)
        phases.append(b)
    light = LIGHT_DELIVERIES_S / per_topic
    c = run_phase("light.%d" % rep, args, publisher,
                  lambda: publisher.paced(args.duration, light, 1))
    c.update(kind="light", asked=light, batch=1)
    phases.append(c)
    return phases


def cmd_run(args):
    group_ids = [os.urandom(16) for _ in range(args.topics)]
    topics = [E.group_topic(g) for g in group_ids]
    log("registering %d recipients over %d topics" % (args.recipients, args.topics))
    took = register_all(args, topics)
    log("registered and subscribed in %.1f s" % took)
    publisher = Publisher(args, group_ids)
    gate(args, publisher)
    phases = []
    for rep in range(1, args.repeats + 1):
        phases += run_repeat(args, publisher, rep)
    summary = {"phases": phases, "register_s": took, "recipients": args.recipients,
               "topics": args.topics, "repeats": args.repeats}
    if args.metrics:
        summary["metrics"] = scrape_deliveries(args.metrics)
    with open(os.path.join(args.out, "phases.json"), "w") as f:
        json.dump(summary, f)


# ------------------------------------------------------------------------------------------------
# report


def percentile(sorted_values, p):
    if not sorted_values:
        return float("nan")
    k = min(len(sorted_values) - 1, max(0, int(round(p / 100.0 * len(sorted_values) + 0.5)) - 1))
    return sorted_values[k]


def load_records(path):
    """(topic, seq) -> [arrival_ns, ...] from the sink's records."""
    arrivals = collections.defaultdict(list)
    with open(path) as f:
        for line in f:
            ns, seq, topic = line.split()
            arrivals[(topic, int(seq))].append(int(ns))
    return arrivals


def phase_figures(phase, rows, arrivals, per_topic):
    latencies, missing, extra, last = [], 0, 0, phase["t0"]
    for returned, seq, topic in rows:
        got = arrivals.get((topic, seq), [])
        missing += max(0, per_topic - len(got))
        extra += max(0, len(got) - per_topic)
        for ns in got:
            latencies.append((ns - returned) / 1e6)
            last = max(last, ns)
    latencies.sort()
    n = len(latencies)
    span = max(last - phase["t0"], 1) / 1e9
    publish_s = max(phase["t1"] - phase["t0"], 1) / 1e9
    tail = sum(1 for returned, seq, topic in rows for ns in arrivals.get((topic, seq), [])
               if ns > phase["t1"])
    return {"deliveries": n, "missing": missing, "extra": extra,
            "deliveries_s": n / span, "envelopes_s": len(rows) / publish_s,
            "cpu_us": (phase["cpu2"] - phase["cpu0"]) * 1e6 / n if n else float("nan"),
            "cpu_pct": 100.0 * (phase["cpu2"] - phase["cpu0"]) / span,
            "p50": percentile(latencies, 50), "p99": percentile(latencies, 99),
            "max": latencies[-1] if n else float("nan"), "span": span, "tail": tail,
            "last": last}


def median(values):
    values = sorted(values)
    return values[(len(values) - 1) // 2] if values else float("nan")


def drain_note(phase, f):
    """Dispatch alone, when a tenth or more of the phase's pushes came after publishing ended."""
    tail_s = (f["last"] - phase["t1"]) / 1e9
    if f["tail"] < 0.1 * f["deliveries"] or tail_s < 0.5:
        return ""
    return " (drain after publishing: %.0f deliveries/s, %.1f µs/delivery)" % (
        f["tail"] / tail_s, (phase["cpu2"] - phase["cpu1"]) * 1e6 / f["tail"])


def row_label(kind, phases, goal_p99, m):
    """(label, goal text) of a table row; `m` holds the medians."""
    if kind == "max":
        met = "met" if m["deliveries_s"] >= 10000 else "NOT met"
        return ("(a) as fast as it can (%d per Publish)" % phases[0]["batch"],
                ">= 10,000 deliveries/s: " + met)
    if kind == "half":
        met = "met" if m["p99"] <= goal_p99 else "NOT met"
        return ("(b) half rate (%.0f envelopes/s asked, %d per Publish)" % (
            median([p["asked"] for p in phases]), phases[0]["batch"]),
            "p99 <= %d ms: %s" % (goal_p99, met))
    return ("(c) light (%.0f envelopes/s asked, 1 per Publish)" % phases[0]["asked"],
            "none (context)")


def cmd_report(args):
    with open(os.path.join(args.out, "phases.json")) as f:
        summary = json.load(f)
    rows = collections.defaultdict(list)
    with open(os.path.join(args.out, "publishes.txt")) as f:
        for line in f:
            name, returned, seq, topic = line.split()
            rows[name].append((int(returned), int(seq), topic))
    arrivals = load_records(args.records)
    per_topic = summary["recipients"] // summary["topics"]
    fields = ("envelopes_s", "deliveries_s", "cpu_us", "cpu_pct", "p50", "p99", "max")
    print("Medians of %d repeat(s); missing and extra are totals." % summary["repeats"])
    print()
    print("| phase | envelopes/s | deliveries/s | server CPU µs/delivery | server CPU % | "
          "p50 ms | p99 ms | max ms | missing | extra | goal |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    notes = []
    for kind in ("max", "half", "light"):
        phases = [p for p in summary["phases"] if p["kind"] == kind]
        if not phases:
            continue
        figures = [phase_figures(p, rows[p["name"]], arrivals, per_topic) for p in phases]
        m = {k: median([f[k] for f in figures]) for k in fields}
        label, goal = row_label(kind, phases, args.poll_ms + 50, m)
        print("| %s | %.0f | %.0f | %.1f | %.0f | %.1f | %.1f | %.1f | %d | %d | %s |" % (
            label, m["envelopes_s"], m["deliveries_s"], m["cpu_us"], m["cpu_pct"], m["p50"],
            m["p99"], m["max"], sum(f["missing"] for f in figures),
            sum(f["extra"] for f in figures), goal))
        notes += ["%s: %.0f deliveries/s, %.1f µs/delivery, p99 %.1f ms; %d pushes in %.2f s, %d "
                  "after publishing stopped%s" % (
                      p["name"], f["deliveries_s"], f["cpu_us"], f["p99"], f["deliveries"],
                      f["span"], f["tail"], drain_note(p, f)) for p, f in zip(phases, figures)]
    print()
    for note in notes:
        print("- " + note)
    if "metrics" in summary:
        print("- server xmtp_push_deliveries_total{channel=\"apns\"} at the end (gate included): %s"
              % json.dumps(summary["metrics"], sort_keys=True))
    print("- registering and subscribing %d recipients took %.1f s" % (summary["recipients"],
                                                                     summary["register_s"]))


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run")
    run.add_argument("--target", required=True)
    run.add_argument("--server-pid", type=int, required=True)
    run.add_argument("--sink-status", required=True)
    run.add_argument("--out", required=True)
    run.add_argument("--recipients", type=int, default=10000)
    run.add_argument("--topics", type=int, default=1000)
    run.add_argument("--duration", type=float, default=10)
    run.add_argument("--batch", type=int, default=10)
    run.add_argument("--publishers", type=int, default=4)
    run.add_argument("--metrics", default="")
    run.add_argument("--repeats", type=int, default=3)
    report = sub.add_parser("report")
    report.add_argument("--out", required=True)
    report.add_argument("--records", required=True)
    report.add_argument("--poll-ms", type=int, default=100)
    args = parser.parse_args()
    if args.cmd == "run":
        if args.recipients % args.topics != 0:
            raise SystemExit("--recipients must be a multiple of --topics")
        cmd_run(args)
    else:
        cmd_report(args)


if __name__ == "__main__":
    main()
