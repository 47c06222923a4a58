"""The ordering checker (API-201, API-254, OPS-010), shared by the ordering suite and the cluster
suites (tests/cluster/): every view a reader had of a topic — one Query, or everything one stream
delivered for it across its reconnects — must be a prefix of the topic's final id order (read with
Query once the writers stopped): no hole, no duplicate, no reordering, whichever instance served
it."""
import threading

import harness
from xmtp.backend.v1 import backend_pb2

QUERY = "/xmtp.backend.v1.QueryService/Query"


def read_all(ch, topic):
    """Every id on `topic`, paging with Query (one page may be cut by the limit)."""
    ids, cursor = [], 0
    while True:
        page, _ = harness.unary(ch, QUERY, backend_pb2.QueryRequest(
            queries=[backend_pb2.TopicQuery(topic=backend_pb2.Topic(topic=topic),
                                            cursor=backend_pb2.Cursor(sequence_id=cursor))],
            limit=1000), backend_pb2.QueryResponse, timeout=30)
        ids.extend(e.meta.cursor.sequence_id for e in page.envelopes)
        if not page.continuation.has_more:
            return ids
        cursor = ids[-1]


class Faults:
    """How one view departs from being a prefix of the final order (all zero: it is one)."""

    def __init__(self, seen, final):
        known = set(final)
        self.duplicates = len(seen) - len(set(seen))
        self.unknown = sum(1 for i in seen if i not in known)  # ids the final read does not have
        top = max((i for i in seen if i in known), default=0)
        seen_set = set(seen)
        self.holes = sum(1 for i in final if i <= top and i not in seen_set)
        self.prefix = list(seen) == list(final[:len(seen)])

    def gaps(self):
        """Holes, duplicates and unknown ids together: 0 exactly when the view is a prefix."""
        return self.holes + self.duplicates + self.unknown + (0 if self.prefix else 1)

    def __repr__(self):
        return "Faults(holes=%d, duplicates=%d, unknown=%d, prefix=%s)" % (
            self.holes, self.duplicates, self.unknown, self.prefix)


def assert_prefix(test, seen, final, what):
    """Fails `test` unless `seen` is a prefix of `final` (API-201)."""
    test.assertEqual(list(seen), list(final[:len(seen)]), "%s: %r" % (what, Faults(seen, final)))


def run_beside_checker(workers, checker, done, timeout=300):
    """Starts `checker` (a callable that loops until `done` is set), then one thread per callable
    of `workers`; joins the workers (at most `timeout` s each), sets `done`, joins the checker."""
    check = threading.Thread(target=checker)
    check.start()
    threads = [threading.Thread(target=w) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    done.set()
    check.join(60)
