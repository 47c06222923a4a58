"""Load through the balancer, with the ordering checker watching (issue 32): publishers, Subscribe
streams that reconnect from their cursors whatever ends them, and a Query reader. Afterwards
`Load.verify` reads every topic on every instance and measures what was lost, duplicated or out
of order. Used by the cluster and fault suites and by bench/.

Every client talks only to `target` (the balancer). A failed call is retried by the client after
a short pause; a publish that failed is not acknowledged (it may still have been stored: the
final read may hold more than was acknowledged, never less).

With `token` (a callable returning a bearer token, called per call so it may mint fresh JWTs)
every channel the load opens, `verify`'s reads on each instance included, sends
`authorization: Bearer <token()>` on every call (`Bearer`, a channel interceptor).
"""
import collections
import random
import threading
import time

import grpc

import envelopes as E
import ordering_check
import stream_client as S

RETRY_PAUSE_S = 0.05


def group_id(run, t):
    return ("%s-%d" % (run, t)).encode()[:16].ljust(16, b"_")


class _CallDetails(collections.namedtuple(
        "_CallDetails", ("method", "timeout", "metadata", "credentials", "wait_for_ready",
                         "compression")), grpc.ClientCallDetails):
    pass


class Bearer(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor,
             grpc.StreamUnaryClientInterceptor, grpc.StreamStreamClientInterceptor):
    """Adds `authorization: Bearer <token()>` to every call of the channel it intercepts
    (AUTH-005), replacing any `authorization` the caller set."""

    def __init__(self, token):
        self.token = token

    def _with_token(self, details):
        metadata = [(k, v) for k, v in (details.metadata or ()) if k != "authorization"]
        metadata.append(("authorization", "Bearer " + self.token()))
        return _CallDetails(details.method, details.timeout, metadata, details.credentials,
                            details.wait_for_ready, details.compression)

    def intercept_unary_unary(self, continuation, details, request):
        return continuation(self._with_token(details), request)

    def intercept_unary_stream(self, continuation, details, request):
        return continuation(self._with_token(details), request)

    def intercept_stream_unary(self, continuation, details, requests):
        return continuation(self._with_token(details), requests)

    def intercept_stream_stream(self, continuation, details, requests):
        return continuation(self._with_token(details), requests)


def new_channel(target, token=None):
    """A channel to `target` on its own connection; with `token`, every call carries it."""
    channel = grpc.insecure_channel(target, options=[("grpc.use_local_subchannel_pool", 1)])
    return grpc.intercept_channel(channel, Bearer(token)) if token is not None else channel


class Publisher(threading.Thread):
    """Publishes 1-3 envelopes per request on random topics until `stop`; `acked` holds the ids
    of every acknowledged envelope, `failures` the status codes of the failed calls, `failed_at`
    their times and `failed_requests` their ([topic], [envelope]) (a fault test resends them to
    prove each was stored whole or not at all)."""

    def __init__(self, target, topics, gids, seed, stop, pace_s, token=None):
        super().__init__(daemon=True)
        self.target, self.topics, self.gids, self.token = target, topics, gids, token
        self.rng = random.Random(seed)
        self.stop, self.pace_s = stop, pace_s
        self.acked = {t: [] for t in topics}
        self.acked_at = []  # monotonic time of each acknowledged request
        self.failures = collections.Counter()
        self.failed_at = []
        self.failed_requests = []

    def run(self):
        with new_channel(self.target, self.token) as ch:
            n = 0
            while not self.stop.is_set():
                chosen = self.rng.sample(range(len(self.topics)), self.rng.randint(1, 3))
                envs = [E.group_message(self.gids[t], 1, b"%s-%d" % (self.name.encode(), n))
                        for t in chosen]
                n += 1
                try:
                    ids = S.publish(ch, envs, timeout=10)
                except grpc.RpcError as e:
                    self.failures[e.code().name] += 1
                    self.failed_at.append(time.monotonic())
                    self.failed_requests.append(([self.topics[t] for t in chosen], envs))
                    time.sleep(RETRY_PAUSE_S)
                    continue
                self.acked_at.append(time.monotonic())
                for t, i in zip(chosen, ids):
                    self.acked[self.topics[t]].append(i)
                time.sleep(self.pace_s)


class Subscriber(threading.Thread):
    """One Subscribe stream over `topics`, from cursor 0, reopened through the balancer from the
    last id seen per topic whenever it ends, until `stop`. `seen[topic]` is everything delivered
    for the topic across the reconnects, in order (the checker's view); `ends` counts the
    (status code name, details) that ended a stream; `reconnects` [(ended at, next Applied at)]."""

    def __init__(self, target, topics, stop, token=None):
        super().__init__(daemon=True)
        self.target, self.topics, self.stop, self.token = target, topics, stop, token
        self.seen = {t: [] for t in topics}
        self.ends = collections.Counter()
        self.reconnects = []
        self.applied_at = None  # the last Applied (the stream is registered)
        self.lock = threading.Lock()
        self.problems = []

    def cursor(self, topic):
        with self.lock:
            ids = self.seen[topic]
            return ids[-1] if ids else 0

    def run(self):
        ended_at = None
        with new_channel(self.target, self.token) as ch:
            while not self.stop.is_set():
                end = self.one_stream(ch, ended_at)
                if end is None:
                    return
                self.ends[end] += 1
                ended_at = time.monotonic()
                time.sleep(RETRY_PAUSE_S)

    def one_stream(self, ch, ended_at):
        """Runs one stream; (name of the code, details) that ended it, None when `stop` did."""
        stream = S.Bidi(ch)
        try:
            stream.update(1, adds=[(t, self.cursor(t)) for t in self.topics])
            while not self.stop.is_set():
                item = stream.poll(0.2)
                if item is None:
                    continue
                if isinstance(item, S.Ended):
                    return (item.code.name if item.code is not None else "CLIENT_ERROR",
                            item.details)
                self.take(stream, item, ended_at)
            return None
        finally:
            stream.cancel()

    def take(self, stream, frame, ended_at):
        kind = frame.WhichOneof("response")
        if kind == "applied":
            self.applied_at = time.monotonic()
            if ended_at is not None:
                self.reconnects.append((ended_at, self.applied_at))
        elif kind == "messages":
            with self.lock:
                for e in frame.messages.envelopes:
                    self.seen[e.meta.topic.topic].append(S.sid(e))
        elif kind == "ping":
            stream.pong(frame.ping.nonce)

    def caught_up(self, heads):
        with self.lock:
            return all((self.seen[t][-1] if self.seen[t] else 0) >= heads.get(t, 0)
                       for t in self.topics)


class QueryReader(threading.Thread):
    """Reads a random topic with Query through the balancer until `stop`; each read is a view for
    the checker."""

    def __init__(self, target, topics, seed, stop, token=None):
        super().__init__(daemon=True)
        self.target, self.topics, self.stop, self.token = target, topics, stop, token
        self.rng = random.Random(seed)
        self.views = []  # (topic, ids)
        self.failures = collections.Counter()
        self.failure_details = collections.Counter()

    def run(self):
        with new_channel(self.target, self.token) as ch:
            while not self.stop.is_set():
                t = self.topics[self.rng.randrange(len(self.topics))]
                try:
                    self.views.append((t, ordering_check.read_all(ch, t)))
                except grpc.RpcError as e:
                    self.failures[e.code().name] += 1
                    self.failure_details[(e.code().name, e.details())] += 1
                    time.sleep(RETRY_PAUSE_S)


class Report:
    """What one run measured; `line()` is the text the lead quotes."""

    def __init__(self, label):
        self.label = label
        self.acknowledged = 0
        self.found = 0
        self.lost = 0
        self.stream_gaps = 0
        self.query_gaps = 0
        self.instance_disagreements = 0
        self.stream_ends = collections.Counter()  # by code name
        self.stream_end_details = collections.Counter()  # by (code name, details)
        self.publish_failures = collections.Counter()
        self.query_failures = collections.Counter()
        self.query_failure_details = collections.Counter()  # (code, details)
        self.recover_s = None
        self.details = []

    def line(self):
        recover = "-" if self.recover_s is None else "%.2f s" % self.recover_s
        return ("%s: acknowledged %d, found %d, lost %d, stream gaps %d, query gaps %d, "
                "time to recover %s; stream ends %s; publish failures %s" % (
                    self.label, self.acknowledged, self.found, self.lost, self.stream_gaps,
                    self.query_gaps, recover, dict(self.stream_ends),
                    dict(self.publish_failures)))


class Load:
    """`publishers` Publishers and `subscribers` Subscribers (each on `topics_per_stream` of the
    `topics`) and one QueryReader, all through `target`, each call with `token` when given."""

    def __init__(self, target, run, topics=8, publishers=4, subscribers=6, topics_per_stream=4,
                 pace_s=0.01, token=None):
        self.target = target
        self.token = token
        self.gids = [group_id(run, t) for t in range(topics)]
        self.topics = [E.group_topic(g) for g in self.gids]
        self.stop_publishing = threading.Event()
        self.stop_reading = threading.Event()
        self.publishers = [Publisher(target, self.topics, self.gids, i, self.stop_publishing,
                                     pace_s, token) for i in range(publishers)]
        rng = random.Random(run)
        self.subscribers = [Subscriber(target, rng.sample(self.topics, topics_per_stream),
                                       self.stop_reading, token) for _ in range(subscribers)]
        self.reader = QueryReader(target, self.topics, 1, self.stop_reading, token)

    def start(self, timeout=30):
        """Starts every client; returns once every stream is registered."""
        for t in self.subscribers + [self.reader] + self.publishers:
            t.start()
        deadline = time.monotonic() + timeout
        while any(s.applied_at is None for s in self.subscribers):
            if time.monotonic() > deadline:
                raise AssertionError("the streams did not register in time")
            time.sleep(0.05)

    def acknowledged(self):
        return sum(len(ids) for p in self.publishers for ids in p.acked.values())

    def wait_acknowledged(self, count, timeout):
        deadline = time.monotonic() + timeout
        while self.acknowledged() < count:
            if time.monotonic() > deadline:
                raise AssertionError("fewer than %d envelopes acknowledged in time" % count)
            time.sleep(0.05)

    def finish(self, heads_channel, catch_up_timeout=60):
        """Stops publishing, waits until every stream has delivered up to each topic's head (as
        Query through `heads_channel` sees it), then stops the streams and the reader."""
        self.stop_publishing.set()
        for p in self.publishers:
            p.join(30)
        heads = {t: (ids[-1] if ids else 0) for t in self.topics
                 for ids in [ordering_check.read_all(heads_channel, t)]}
        deadline = time.monotonic() + catch_up_timeout
        while not all(s.caught_up(heads) for s in self.subscribers):
            if time.monotonic() > deadline:
                break  # verify() counts what is missing as stream gaps
            time.sleep(0.05)
        self.stop_reading.set()
        for t in self.subscribers + [self.reader]:
            t.join(30)

    def verify(self, instances, label):
        """Reads every topic on every instance and fills a Report (call after finish())."""
        report = Report(label)
        finals = []
        for server in instances:
            with new_channel(server.target, self.token) as ch:
                finals.append({t: ordering_check.read_all(ch, t) for t in self.topics})
        final = finals[0]
        report.instance_disagreements = sum(1 for f in finals[1:] for t in self.topics
                                            if f[t] != final[t])
        stored = {t: set(ids) for t, ids in final.items()}
        for p in self.publishers:
            report.publish_failures.update(p.failures)
            for t, ids in p.acked.items():
                report.acknowledged += len(ids)
                report.lost += sum(1 for i in ids if i not in stored[t])
        report.found = sum(len(ids) for ids in final.values())
        for s in self.subscribers:
            report.stream_end_details.update(s.ends)
            for (code, _), n in s.ends.items():
                report.stream_ends[code] += n
            for t, seen in s.seen.items():
                faults = ordering_check.Faults(seen, final[t])
                # The stream was left only once caught up: anything short of the head is a gap.
                missing = len(final[t]) - len(seen) if faults.prefix else 0
                report.stream_gaps += faults.gaps() + max(0, missing)
                if faults.gaps() or missing > 0:
                    report.details.append("stream %s topic %r: %r, %d missing at the end" %
                                          (s.name, t, faults, missing))
        report.query_failures.update(self.reader.failures)
        report.query_failure_details.update(self.reader.failure_details)
        for t, seen in self.reader.views:
            faults = ordering_check.Faults(seen, final[t])
            report.query_gaps += faults.gaps()
            if faults.gaps():
                report.details.append("query of %r: %r" % (t, faults))
        return report

    def stream_recovery_after(self, moment):
        """Seconds from `moment` until the last stream that ended after it was registered again
        (None when no stream ended after it)."""
        times = [applied for s in self.subscribers for ended, applied in s.reconnects
                 if ended >= moment]
        return max(times) - moment if times else None

    def publish_recovery_after(self, moment):
        """Seconds from `moment` until the first acknowledged request following the last failed
        one after it (None when no publish failed after it)."""
        failed = [f for p in self.publishers for f in p.failed_at if f >= moment]
        if not failed:
            return None
        last = max(failed)
        later = [a for p in self.publishers for a in p.acked_at if a > last]
        return (min(later) - moment) if later else float("inf")


def check_no_loss(test, report, min_acknowledged=100):
    """What every run under load must show, fault or not: nothing acknowledged lost, every stream
    and Query view a gap-free, duplicate-free prefix, the instances agreeing. Prints the report."""
    print(report.line())
    print("  stream ends: %s" % dict(report.stream_end_details))
    print("  query failures: %s" % dict(report.query_failure_details))
    for line in report.details:
        print("  " + line)
    test.assertEqual(report.details, [])
    test.assertGreater(report.acknowledged, min_acknowledged)
    test.assertEqual(report.lost, 0)
    test.assertGreaterEqual(report.found, report.acknowledged)
    test.assertEqual(report.stream_gaps, 0)
    test.assertEqual(report.query_gaps, 0)
    test.assertEqual(report.instance_disagreements, 0)
