"""Key-package admission against the real binary (VALIDATION.md 4, API-230, API-235, JOIN-007/008/004):
valid packages from the spec's vectors are stored, tampered and invalid ones get INVALID_ARGUMENT
with a PublishError naming their index and reason, and nothing of a failed request is stored. On
the embedded SQLite engine and, when XB_PG_PRIMARY names a cluster (always in CI), on PostgreSQL."""
import hashlib
import importlib.util
import os
import time
import unittest

import grpc

import envelopes as E
import harness
import key_package_vectors as V
from google.rpc import status_pb2
from xmtp.backend.v1 import backend_pb2

# The key-package builder that signs with python3-cryptography (independent of the code under
# test), shared with the unit-test vector generator.
_spec = importlib.util.spec_from_file_location(
    "key_package_builder", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                        "src", "validate", "key_package_extra_vectors.py"))
builder = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(builder)

PUBLISH = "/xmtp.backend.v1.PublishService/Publish"
NEWEST = "/xmtp.backend.v1.QueryService/QueryNewest"
QUERY = "/xmtp.backend.v1.QueryService/Query"
INVALID_KEY_PACKAGE = backend_pb2.PublishError.REASON_INVALID_KEY_PACKAGE
MALFORMED = backend_pb2.PublishError.REASON_MALFORMED_PAYLOAD


def key_package(tls):
    return backend_pb2.ClientEnvelope(
        key_package=backend_pb2.KeyPackage(key_package_tls_serialized=tls))


def flip(data, index, mask=0x01):
    b = bytearray(data)
    b[index] ^= mask
    return bytes(b)


def publish_error(rpc_error):
    """The PublishError detail of a failed publish (API-223)."""
    for key, value in rpc_error.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            assert len(status.details) == 1, status
            assert status.details[0].type_url == \
                "type.googleapis.com/xmtp.backend.v1.PublishError"
            return backend_pb2.PublishError.FromString(status.details[0].value)
    raise AssertionError("no grpc-status-details-bin")


class KeyPackageAdmissionMixin:
    """Each test gets its own server and database: every vector shares one installation key, so
    one topic, and "nothing stored" is checked as "the topic is still empty / unchanged"."""

    def server_config(self):
        raise NotImplementedError

    def setUp(self):
        self.server = harness.Server(config=self.server_config())
        self.server.start()
        self.addCleanup(self._stop)

    def _stop(self):
        self.server.kill()
        self.server.tmp.cleanup()
        self.server.check_sanitizers()

    def call(self, path, request, response_type):
        with self.server.channel() as ch:
            resp, _ = harness.unary(ch, path, request, response_type, timeout=20)
        return resp

    def publish(self, *envs):
        return self.call(PUBLISH, backend_pb2.PublishRequest(envelopes=list(envs)),
                         backend_pb2.PublishResponse)

    def publish_fails(self, *envs):
        with self.server.channel() as ch:
            with self.assertRaises(grpc.RpcError) as ctx:
                harness.unary(ch, PUBLISH, backend_pb2.PublishRequest(envelopes=list(envs)),
                              backend_pb2.PublishResponse, timeout=20)
        return ctx.exception

    def assert_rejected(self, err, index, reason):
        self.assertEqual(err.code(), grpc.StatusCode.INVALID_ARGUMENT, err.details())
        detail = publish_error(err)
        self.assertTrue(detail.HasField("index"))
        self.assertEqual(detail.index, index)
        self.assertEqual(backend_pb2.PublishError.Reason.Name(detail.reason),
                         backend_pb2.PublishError.Reason.Name(reason), err.details())

    def newest(self, topic):
        req = backend_pb2.QueryNewestRequest(topics=[backend_pb2.Topic(topic=topic)],
                                             include_full_envelope=True)
        return list(self.call(NEWEST, req, backend_pb2.QueryNewestResponse).results)

    def newest_eventually(self, topic, sequence_id):
        """QueryNewest may answer from the replica (OPS-009): wait, with a deadline, until it shows
        the row with `sequence_id` (or a later one)."""
        def caught_up():
            head = self.newest(topic)
            return head if head and head[0].meta.cursor.sequence_id >= sequence_id else None
        return harness.wait_for(caught_up, 10, "QueryNewest to show the published key package")

    def scrape(self):
        return harness.scrape(self.server)

    # verifies: JOIN-007, API-230 — a valid package is stored under 0x03 || signature_key; a copy
    # with one signature byte changed is INVALID_KEY_PACKAGE and stores nothing.
    def test_valid_stored_and_tampered_refused(self):
        tampered = flip(V.MINIMAL, len(V.MINIMAL) - 1)  # last byte of the KeyPackage signature
        err = self.publish_fails(key_package(tampered))
        self.assert_rejected(err, 0, INVALID_KEY_PACKAGE)
        self.assertEqual(self.newest(V.TOPIC), [])  # nothing stored

        env = backend_pb2.ClientEnvelope.FromString(V.MINIMAL_CLIENT_ENVELOPE)
        meta = self.publish(env).envelope_metas[0]
        self.assertEqual(meta.topic.topic, V.TOPIC)
        self.assertEqual(meta.message_hash.sha256, V.MINIMAL_MESSAGE_HASH)
        self.assertEqual(hashlib.sha256(V.MINIMAL_CLIENT_ENVELOPE).digest(), V.MINIMAL_MESSAGE_HASH)
        self.assertGreater(meta.expiry_ns, 0)  # key packages expire (retention class)

        # Tampered again after a valid one: still refused, the topic's head is unchanged.
        for index in (len(V.MINIMAL) - 64, len(V.MINIMAL) - 100):  # KP sig, leaf sig region
            self.assert_rejected(self.publish_fails(key_package(flip(V.MINIMAL, index, 0x80))),
                                 0, INVALID_KEY_PACKAGE)
        head = self.newest_eventually(V.TOPIC, meta.cursor.sequence_id)
        self.assertEqual(len(head), 1)
        self.assertEqual(head[0].meta, meta)
        self.assertEqual(head[0].envelope.key_package.key_package_tls_serialized, V.MINIMAL)

        # verifies: API-222 — the same bytes again are a duplicate with the stored metadata.
        self.assertEqual(self.publish(env).envelope_metas[0], meta)

        scrape = self.scrape()
        self.assertIn('reason="REASON_INVALID_KEY_PACKAGE"', scrape)

    # Every key_package case of VALIDATION-vectors.json over the wire, with its reason.
    def test_every_json_case_gets_its_reason(self):
        for name, tls, expect in V.CASES:
            with self.subTest(name):
                if expect == "accept":
                    meta = self.publish(key_package(tls)).envelope_metas[0]
                    self.assertEqual(meta.topic.topic, V.TOPIC)
                else:
                    reason = {"REASON_INVALID_KEY_PACKAGE": INVALID_KEY_PACKAGE,
                              "REASON_MALFORMED_PAYLOAD": MALFORMED}[expect]
                    self.assert_rejected(self.publish_fails(key_package(tls)), 0, reason)
        last = self.publish(key_package(V.XMTP_LIKE)).envelope_metas[0]
        # The xmtp_like package, published last, is the topic's head.
        head = self.newest_eventually(V.TOPIC, last.cursor.sequence_id)
        self.assertEqual(head[0].meta, last)
        self.assertEqual(head[0].envelope.key_package.key_package_tls_serialized, V.XMTP_LIKE)

    # verifies: API-220, API-223 — an invalid key package fails the whole request at its index;
    # the valid group message before it is not stored.
    def test_invalid_key_package_fails_whole_request(self):
        gid = bytes(range(16))
        invalid = dict((n, t) for n, t, _ in V.CASES)["neg_expired"]
        err = self.publish_fails(E.group_message(gid, 1, b"ok"), key_package(invalid))
        self.assert_rejected(err, 1, INVALID_KEY_PACKAGE)
        page = self.call(QUERY, backend_pb2.QueryRequest(queries=[
            backend_pb2.TopicQuery(topic=backend_pb2.Topic(topic=E.group_topic(gid)))]),
            backend_pb2.QueryResponse)
        self.assertEqual(len(page.envelopes), 0)
        self.assertEqual(self.newest(V.TOPIC), [])

    # verifies: API-223 — the lowest failing index decides between a malformed envelope and an
    # invalid key package, whichever comes first.
    def test_lowest_index_decides_between_malformed_and_invalid(self):
        malformed = backend_pb2.ClientEnvelope(
            group_message=backend_pb2.GroupMessage(data=b"\x00\x01"))
        invalid = key_package(flip(V.MINIMAL, len(V.MINIMAL) - 1))
        self.assert_rejected(self.publish_fails(invalid, malformed), 0, INVALID_KEY_PACKAGE)
        self.assert_rejected(self.publish_fails(malformed, invalid), 0, MALFORMED)
        self.assertEqual(self.newest(V.TOPIC), [])

    # verifies: API-222, JOIN-008 — a stored key package is a duplicate on retry even after its
    # lifetime ended (a retry must not re-run time-dependent checks), while a new package with the
    # same lifetime is refused as expired.
    def test_retry_after_expiry_is_a_duplicate(self):
        not_after = int(time.time()) + 3
        fresh = builder.key_package(not_before=0, not_after=not_after)
        meta = self.publish(key_package(fresh)).envelope_metas[0]
        # The lifetime ends by the wall clock: wait for that event, with a deadline.
        harness.wait_for(lambda: time.time() >= not_after + 1, 10, "the lifetime to end")
        self.assertEqual(self.publish(key_package(fresh)).envelope_metas[0], meta)
        other = builder.key_package(not_before=0, not_after=not_after,
                                    identity=builder.mls_credential(b"another inbox"))
        self.assert_rejected(self.publish_fails(key_package(other)), 0, INVALID_KEY_PACKAGE)


class SqliteKeyPackageAdmissionTest(KeyPackageAdmissionMixin, unittest.TestCase):
    def server_config(self):
        return harness.minimal_config()


@unittest.skipUnless(os.environ.get("XB_PG_PRIMARY"), "needs XB_PG_PRIMARY")
class PostgresKeyPackageAdmissionTest(KeyPackageAdmissionMixin, unittest.TestCase):
    def server_config(self):
        database = harness.create_pg_database()
        self.addCleanup(database.drop)
        return harness.minimal_config().replace(
            'url = "sqlite://{data}/xmtp.db"',
            'url = "%s"\nreplica_url = "%s"' % (database.primary, database.replica))


if __name__ == "__main__":
    unittest.main()
