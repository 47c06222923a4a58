"""Stream clients and helpers for the Subscribe / SubscribeStatic suites (API.md 3.8, 3.9).

grpcio iterators block without a per-read timeout, so every stream here is read by a background
thread into a queue, and the test reads the queue with a deadline: no test can hang on a stream.
The thread can be paused (`pause()`): it then stops asking grpcio for messages, so the backend sees
a client that is not reading (the slow-reader and shutdown tests).
"""
import os
import queue
import re
import threading
import time

import grpc

import envelopes as E
import harness
from xmtp.backend.v1 import backend_pb2

SUBSCRIBE = "/xmtp.backend.v1.SubscriptionService/Subscribe"
SUBSCRIBE_STATIC = "/xmtp.backend.v1.SubscriptionService/SubscribeStatic"
PUBLISH = "/xmtp.backend.v1.PublishService/Publish"
QUERY = "/xmtp.backend.v1.QueryService/Query"
NEWEST = "/xmtp.backend.v1.QueryService/QueryNewest"
HEALTH_CHECK = "/grpc.health.v1.Health/Check"

INT64_MAX = 2 ** 63 - 1

# Sanitizer builds are 3-10x slower: the suites shrink their workloads there (ctest passes
# XB_SANITIZE for those builds). XB_STREAM_SCALE overrides.
SCALE = float(os.environ.get("XB_STREAM_SCALE") or (0.3 if os.environ.get("XB_SANITIZE") else 1))
# One read of a stream frame never waits longer than this (seconds).
READ_TIMEOUT = float(os.environ.get("XB_STREAM_READ_TIMEOUT", "60"))


def scaled(n, minimum=1):
    return max(minimum, int(n * SCALE))


def gid(label, i=0):
    """A 16-byte group id, distinct per (label, i)."""
    raw = ("%s-%d" % (label, i)).encode()
    if len(raw) > 16:
        raise ValueError(raw)
    return raw.ljust(16, b"_")


def gtopic(label, i=0):
    return E.group_topic(gid(label, i))


def topic_query(topic, cursor=None):
    q = backend_pb2.TopicQuery(topic=backend_pb2.Topic(topic=topic))
    if cursor is not None:
        q.cursor.sequence_id = cursor
    return q


def _serialize(message):
    return message if isinstance(message, bytes) else message.SerializeToString()


class Ended:
    """The end of a stream: its status code and message."""

    def __init__(self, code, details):
        self.code = code
        self.details = details

    def __repr__(self):
        return "Ended(%s, %r)" % (self.code, self.details)


class _Stream:
    def __init__(self, call):
        self.call = call
        self._frames = queue.Queue()
        self._gate = threading.Event()
        self._gate.set()
        self.ended = None  # Ended once the test has read the end
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    def _pump(self):
        try:
            for response in self.call:
                self._frames.put(response)
                self._gate.wait()  # paused: grpcio is asked for nothing until resume()
            self._frames.put(Ended(self.call.code(), self.call.details()))
        except grpc.RpcError as e:
            self._frames.put(Ended(e.code(), e.details()))
        except Exception as e:  # noqa: BLE001 - surfaced to the test as an end
            self._frames.put(Ended(None, "client error: %r" % e))

    def pause(self):
        """Stops reading after the frame being received now (at most one more frame)."""
        self._gate.clear()

    def resume(self):
        self._gate.set()

    def next(self, timeout=None):
        """The next frame, or an Ended. Fails the test when nothing arrives in time."""
        if self.ended is not None:
            return self.ended
        try:
            item = self._frames.get(timeout=READ_TIMEOUT if timeout is None else timeout)
        except queue.Empty:
            raise AssertionError("no stream frame within %ss" %
                                 (READ_TIMEOUT if timeout is None else timeout)) from None
        if isinstance(item, Ended):
            self.ended = item
        return item

    def poll(self, timeout):
        """The next frame or Ended, or None when nothing arrives within `timeout`."""
        if self.ended is not None:
            return self.ended
        try:
            item = self._frames.get(timeout=timeout)
        except queue.Empty:
            return None
        if isinstance(item, Ended):
            self.ended = item
        return item

    def frame(self, timeout=None):
        """The next frame; fails the test if the stream ended instead."""
        item = self.next(timeout)
        if isinstance(item, Ended):
            raise AssertionError("stream ended: %r" % (item,))
        return item

    def ids(self, count, timeout=None):
        """The envelope ids of the next frames, read until there are at least `count` (none
        when `count` <= 0); each frame must come within `timeout`."""
        got = []
        while len(got) < count:
            got += [sid(e) for e in envelopes_of(self.frame(timeout))]
        return got

    def until_end(self, timeout=None):
        """Reads to the end; returns (Ended, frames read meanwhile)."""
        deadline = time.monotonic() + (READ_TIMEOUT if timeout is None else timeout)
        frames = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("the stream did not end in time; %d frames read" %
                                     len(frames))
            item = self.next(left)
            if isinstance(item, Ended):
                return item, frames
            frames.append(item)

    def cancel(self):
        self.resume()
        self.call.cancel()


class BidiStream(_Stream):
    """A bidirectional stream of `path`: `send` takes a request message or raw bytes; `close`
    half-closes."""

    def __init__(self, channel, path, response_type, metadata=None):
        self._requests = queue.Queue()
        method = channel.stream_stream(path, request_serializer=_serialize,
                                       response_deserializer=response_type.FromString)
        super().__init__(method(self._request_iterator(), metadata=metadata))

    def _request_iterator(self):
        while True:
            try:
                item = self._requests.get(timeout=0.2)
            except queue.Empty:
                if self.call.done():
                    return
                continue
            if item is None:
                return
            yield item

    def send(self, request):
        self._requests.put(request)

    def close(self):
        """Half-closes the request side."""
        self._requests.put(None)


class Bidi(BidiStream):
    """One xmtp.backend.v1 Subscribe stream."""

    def __init__(self, channel, metadata=None):
        super().__init__(channel, SUBSCRIBE, backend_pb2.SubscribeResponse, metadata)

    def update(self, update_id, adds=(), removes=()):
        """Sends Update{id, adds: [(topic, cursor)], removes: [topic]}."""
        req = backend_pb2.SubscribeRequest()
        req.update.id = update_id
        for item in adds:
            t, cursor = item if isinstance(item, tuple) else (item, None)
            req.update.adds.append(topic_query(t, cursor))
        for t in removes:
            req.update.removes.append(backend_pb2.Topic(topic=t))
        self.send(req)

    def ping(self, nonce):
        self.send(backend_pb2.SubscribeRequest(ping=backend_pb2.Ping(nonce=nonce)))

    def pong(self, nonce):
        self.send(backend_pb2.SubscribeRequest(pong=backend_pb2.Pong(nonce=nonce)))

    def started(self, test):
        f = self.frame()
        test.assertEqual(f.WhichOneof("response"), "started", f)
        return f.started

    def applied(self, test, update_id, messages=None, answer_pings=True):
        """Reads until the Applied of `update_id` (Messages met meanwhile go to `messages`)."""
        while True:
            f = self.frame()
            kind = f.WhichOneof("response")
            if kind == "applied":
                test.assertEqual(f.applied.id, update_id)
                return f.applied
            if kind == "messages" and messages is not None:
                messages.extend(f.messages.envelopes)
            elif kind == "ping" and answer_pings:
                self.pong(f.ping.nonce)
            elif kind != "messages":
                test.fail("unexpected frame before Applied: %s" % f)


class Static(_Stream):
    """One SubscribeStatic stream."""

    def __init__(self, channel, topics, metadata=None):
        """`topics`: [(topic, cursor)] or a SubscribeStaticRequest or raw bytes."""
        if isinstance(topics, (bytes, backend_pb2.SubscribeStaticRequest)):
            request = topics
        else:
            request = backend_pb2.SubscribeStaticRequest(
                topics=[topic_query(t, c) for t, c in topics])
        method = channel.unary_stream(
            SUBSCRIBE_STATIC, request_serializer=_serialize,
            response_deserializer=backend_pb2.SubscribeStaticResponse.FromString)
        super().__init__(method(request, metadata=metadata))

    def started(self, test):
        f = self.frame()
        test.assertEqual(f.WhichOneof("response"), "started", f)
        return f.started


def own_channel(server, options=()):
    """A channel on its own connection: grpcio otherwise shares one connection among channels to
    the same target with the same arguments (and its HTTP/2 stream limit with it)."""
    return grpc.insecure_channel(server.target,
                                 options=[("grpc.use_local_subchannel_pool", 1), *options])


def envelopes_of(frame):
    """The envelopes of a Messages frame of either stream kind ([] for other frames)."""
    if frame.WhichOneof("response") == "messages":
        return list(frame.messages.envelopes)
    return []


def sid(envelope):
    return envelope.meta.cursor.sequence_id


# ------------------------------------------------------------------------------------------------
# Unary helpers


def publish(ch, envs, timeout=60):
    resp, _ = harness.unary(ch, PUBLISH, backend_pb2.PublishRequest(envelopes=envs),
                            backend_pb2.PublishResponse, timeout=timeout)
    return [m.cursor.sequence_id for m in resp.envelope_metas]


def publish_history(ch, topic, rows, blob):
    """Publishes `rows` group messages of about len(blob) bytes to `topic`, 200 per request;
    returns their ids in order."""
    ids = []
    for start in range(0, rows, 200):
        ids += publish(ch, [E.group_message(topic[1:], 1, b"%d-%s" % (k, blob))
                            for k in range(start, min(rows, start + 200))])
    return ids


def read_topic(ch, topic, cursor=0):
    """Every id on `topic` above `cursor`, paging with Query (the current store, API-202)."""
    ids = []
    while True:
        page, _ = harness.unary(ch, QUERY, backend_pb2.QueryRequest(
            queries=[topic_query(topic, cursor)], limit=1000), backend_pb2.QueryResponse,
            timeout=60)
        ids.extend(sid(e) for e in page.envelopes)
        if not page.continuation.has_more or not page.envelopes:
            return ids
        cursor = ids[-1]


def newest(ch, topics):
    """{topic: newest id or 0} from QueryNewest (which may read the replica)."""
    out = {}
    for i in range(0, len(topics), 1000):
        chunk = topics[i:i + 1000]
        resp, _ = harness.unary(ch, NEWEST, backend_pb2.QueryNewestRequest(
            topics=[backend_pb2.Topic(topic=t) for t in chunk]),
            backend_pb2.QueryNewestResponse, timeout=60)
        for t in chunk:
            out[t] = 0
        for r in resp.results:
            if r.HasField("meta"):
                out[r.topic.topic] = r.meta.cursor.sequence_id
    return out


def wait_replica_shows(ch, heads, timeout=60):
    """Waits until the stream read path (the replica, on PostgreSQL) shows every head in `heads`
    ({topic: id}); QueryNewest reads the same copy the streams read (OPS-009)."""
    topics = list(heads)
    harness.wait_for(lambda: all(newest(ch, topics)[t] >= heads[t] for t in topics), timeout,
                     "the read copy to show the published heads")


def health_status(ch, timeout=10):
    import health_pb2
    resp, _ = harness.unary(ch, HEALTH_CHECK, health_pb2.HealthCheckRequest(),
                            health_pb2.HealthCheckResponse, timeout=timeout)
    return resp.status


# ------------------------------------------------------------------------------------------------
# Metrics

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


scrape = harness.scrape


def samples(text):
    """[(name, {label: value}, float)] of an exposition."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            continue
        labels = dict(_LABEL.findall(m.group(3) or ""))
        out.append((m.group(1), labels, float(m.group(4))))
    return out


def value(text, name, **labels):
    """Sum of the samples of `name` whose labels include `labels` (0 when absent)."""
    total = 0.0
    for n, ls, v in samples(text):
        if n == name and all(ls.get(k) == val for k, val in labels.items()):
            total += v
    return total


def has_family(text, name):
    return any(n == name or n.startswith(name + "_") for n, _, _ in samples(text))


# ------------------------------------------------------------------------------------------------
# Servers on either engine


def config(extra="", database=None, replica=True, server_extra=""):
    """A minimal config plus `extra` TOML (and `server_extra` keys in its [server] table); on
    PostgreSQL when `database` (a harness.PgDatabase), with its replica unless `replica` is
    False."""
    text = harness.minimal_config(extra).replace("[server]\n", "[server]\n" + server_extra)
    if database is not None:
        url = 'url = "%s"' % database.primary
        if replica:
            url += '\nreplica_url = "%s"' % database.replica
        text = text.replace('url = "sqlite://{data}/xmtp.db"', url)
    return text


class Engine:
    """How a suite gets servers: SQLite (a temp file) or PostgreSQL (a fresh database)."""
    name = "sqlite"
    replica = False

    def __init__(self):
        self.databases = []

    def server(self, extra="", binary=None, server_extra=""):
        """A Server (not started; use it as a context manager or call start())."""
        database = None
        if self.name == "postgres":
            database = harness.create_pg_database()
            self.databases.append(database)
        return harness.Server(config=config(extra, database, self.replica, server_extra),
                              binary=binary)

    def cleanup(self):
        for d in self.databases:
            d.drop()
        self.databases = []


class PostgresEngine(Engine):
    name = "postgres"
    replica = True


HAVE_PG = bool(os.environ.get("XB_PG_PRIMARY"))


class SharedServer:
    """Mixin base: one server per test class, on the class's engine, with `extra_config`."""
    engine_class = Engine
    extra_config = ""

    @classmethod
    def setUpClass(cls):
        cls.engine = cls.engine_class()
        cls.server = cls.engine.server(cls.extra_config)
        cls.server.start()

    @classmethod
    def tearDownClass(cls):
        cls.server.kill()
        cls.server.tmp.cleanup()
        cls.engine.cleanup()
        cls.server.check_sanitizers()
