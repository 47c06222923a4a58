"""The V3 API writes served so far (issue 33, docs/v3-api.md 3.1, 3.3, 3.10): MlsApi
SendGroupMessages and UploadKeyPackage and IdentityApi PublishIdentityUpdate, with python3-grpcio
and the V3 schema's own messages. One store, two views: what a V3 send stores is what an
xmtp.backend.v1 Query, QueryNewest or GetInboxIds returns, the same row as the v1 Publish of the
same envelope (one row, API-222); bad input gets Publish's status and stores nothing. On SQLite
and, with XB_PG_PRIMARY set, on PostgreSQL."""
import os
import unittest

import grpc
from google.protobuf import empty_pb2

import envelopes as E
import harness
import identity_signers as S
import identity_updates as U
import key_package_vectors as V
from identity.api.v1 import identity_pb2
from mls.api.v1 import mls_pb2
from xmtp.backend.v1 import backend_pb2

SEND_GROUP_MESSAGES = "/xmtp.mls.api.v1.MlsApi/SendGroupMessages"
UPLOAD_KEY_PACKAGE = "/xmtp.mls.api.v1.MlsApi/UploadKeyPackage"
PUBLISH_IDENTITY_UPDATE = "/xmtp.identity.api.v1.IdentityApi/PublishIdentityUpdate"
QUERY = "/xmtp.backend.v1.QueryService/Query"
NEWEST = "/xmtp.backend.v1.QueryService/QueryNewest"
PUBLISH = "/xmtp.backend.v1.PublishService/Publish"
GET_INBOX_IDS = "/xmtp.backend.v1.IdentityService/GetInboxIds"


class V3WritesMixin:
    def call(self, path, request, response_type):
        with self.server.channel() as ch:
            return harness.unary(ch, path, request, response_type, timeout=20)[0]

    def fails(self, path, request, response_type):
        with self.server.channel() as ch:
            with self.assertRaises(grpc.RpcError) as ctx:
                harness.unary(ch, path, request, response_type, timeout=20)
        return ctx.exception.code(), ctx.exception.details()

    def query(self, topic):
        return list(self.call(QUERY, backend_pb2.QueryRequest(queries=[backend_pb2.TopicQuery(
            topic=backend_pb2.Topic(topic=topic))]), backend_pb2.QueryResponse).envelopes)

    def newest(self, topic):
        req = backend_pb2.QueryNewestRequest(topics=[backend_pb2.Topic(topic=topic)],
                                             include_full_envelope=True)
        return list(self.call(NEWEST, req, backend_pb2.QueryNewestResponse).results)

    def query_eventually(self, topic, count):
        return harness.wait_for(lambda: (lambda e: e if len(e) >= count else None)(
            self.query(topic)), 10, "the rows to be readable")

    # verifies: issue 33 (3.1) — V3 group messages are the rows a v1 Query returns; the same
    # message sent through v1 Publish afterwards is the same row.
    def test_send_group_messages_is_publish(self):
        group = os.urandom(16)
        first, second = E.group_message(group, ciphertext=b"one"), E.group_message(
            group, ciphertext=b"two")
        req = mls_pb2.SendGroupMessagesRequest()
        for env in (first, second):
            req.messages.add().v1.CopyFrom(mls_pb2.GroupMessageInput.V1(
                data=env.group_message.data, sender_hmac=b"h" * 32, should_push=True))
        self.assertEqual(self.call(SEND_GROUP_MESSAGES, req, empty_pb2.Empty), empty_pb2.Empty())
        rows = self.query_eventually(E.group_topic(group), 2)
        self.assertEqual([r.envelope.group_message.data for r in rows],
                         [first.group_message.data, second.group_message.data])
        self.assertTrue(all(r.envelope.group_message.should_push for r in rows))
        again = backend_pb2.ClientEnvelope(group_message=backend_pb2.GroupMessage(
            data=first.group_message.data, sender_hmac=b"h" * 32, should_push=True))
        meta = self.call(PUBLISH, backend_pb2.PublishRequest(envelopes=[again]),
                         backend_pb2.PublishResponse).envelope_metas[0]
        self.assertEqual(meta.cursor.sequence_id, rows[0].meta.cursor.sequence_id)

    # verifies: issue 33 (3.1) — a malformed MLS message fails as Publish fails, nothing stored.
    def test_send_group_messages_refuses_bad_input(self):
        group = os.urandom(16)
        req = mls_pb2.SendGroupMessagesRequest()
        req.messages.add().v1.data = E.private_message(group)
        req.messages.add().v1.data = b"not an MLS message"
        code, _ = self.fails(SEND_GROUP_MESSAGES, req, empty_pb2.Empty)
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(self.query(E.group_topic(group)), [])
        self.assertEqual(self.fails(SEND_GROUP_MESSAGES, mls_pb2.SendGroupMessagesRequest(),
                                    empty_pb2.Empty),
                         (grpc.StatusCode.INVALID_ARGUMENT, "no messages in the request"))

    # verifies: issue 33 (3.3) — a V3 key package is stored under 0x03 || its signature key;
    # a tampered one is refused and nothing is stored.
    def test_upload_key_package(self):
        tampered = bytearray(V.MINIMAL)
        tampered[-1] ^= 1
        bad = mls_pb2.UploadKeyPackageRequest(key_package=mls_pb2.KeyPackageUpload(
            key_package_tls_serialized=bytes(tampered)), is_inbox_id_credential=True)
        code, _ = self.fails(UPLOAD_KEY_PACKAGE, bad, empty_pb2.Empty)
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(self.newest(V.TOPIC), [])
        good = mls_pb2.UploadKeyPackageRequest(key_package=mls_pb2.KeyPackageUpload(
            key_package_tls_serialized=V.MINIMAL))
        self.assertEqual(self.call(UPLOAD_KEY_PACKAGE, good, empty_pb2.Empty), empty_pb2.Empty())
        newest = harness.wait_for(lambda: self.newest(V.TOPIC), 10, "the key package")
        self.assertEqual(newest[0].envelope.key_package.key_package_tls_serialized, V.MINIMAL)
        code, _ = self.fails(UPLOAD_KEY_PACKAGE, mls_pb2.UploadKeyPackageRequest(),
                             empty_pb2.Empty)
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT)

    # verifies: issue 33 (3.10) — a V3 identity update is validated and projected like a v1 one.
    def test_publish_identity_update(self):
        key = os.urandom(32)
        wallet = S.eth_address(key)
        inbox, update = U.registration(int.from_bytes(os.urandom(6), "big"), wallet_key=key,
                                       installation_seed=os.urandom(32))
        broken = identity_pb2.PublishIdentityUpdateRequest(identity_update=update)
        signature = broken.identity_update.actions[1].add.new_member_signature.installation_key
        signature.bytes = bytes([signature.bytes[0] ^ 1]) + signature.bytes[1:]  # no longer valid
        code, _ = self.fails(PUBLISH_IDENTITY_UPDATE, broken,
                             identity_pb2.PublishIdentityUpdateResponse)
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(self.query(bytes([2]) + bytes.fromhex(inbox)), [])
        req = identity_pb2.PublishIdentityUpdateRequest(identity_update=update)
        self.call(PUBLISH_IDENTITY_UPDATE, req, identity_pb2.PublishIdentityUpdateResponse)
        rows = self.query_eventually(bytes([2]) + bytes.fromhex(inbox), 1)
        self.assertEqual(rows[0].envelope.identity_update, update)
        lookup = backend_pb2.GetInboxIdsRequest()
        lookup.requests.add(identifier=wallet)
        harness.wait_for(lambda: self.call(GET_INBOX_IDS, lookup, backend_pb2.GetInboxIdsResponse)
                         .responses[0].inbox_id == inbox, 10, "the projection")

    # verifies: issue 33 (deliverable 1) — every method of both services in the vendored schema
    # is served: none answers UNIMPLEMENTED "unknown method" (the two deprecated ones answer
    # UNIMPLEMENTED with a message naming their replacement, as node-go does)
    def test_every_schema_method_is_served(self):
        services = [identity_pb2.DESCRIPTOR.services_by_name["IdentityApi"],
                    mls_pb2.DESCRIPTOR.services_by_name["MlsApi"]]
        methods = [m for service in services for m in service.methods]
        self.assertEqual(len(methods), 4 + 15)
        with self.server.channel() as ch:
            for method in methods:
                path = "/%s/%s" % (method.containing_service.full_name, method.name)
                code, details = call_once(ch, path, method)
                if code == grpc.StatusCode.UNIMPLEMENTED:
                    self.assertNotIn("unknown method", details, path)
                    self.assertIn(method.name, ("RevokeInstallation", "GetIdentityUpdates"), path)


def call_once(channel, path, method):
    """Calls `path` with an empty request in the method's shape; (status code, details), where a
    stream that sent a first message counts as OK (it is then cancelled)."""
    if method.client_streaming:
        call = channel.stream_stream(path)(iter([b""]), timeout=10)
    elif method.server_streaming:
        call = channel.unary_stream(path)(b"", timeout=10)
    else:
        try:
            channel.unary_unary(path)(b"", timeout=10)
            return grpc.StatusCode.OK, ""
        except grpc.RpcError as e:
            return e.code(), e.details()
    try:
        next(call)
        call.cancel()
        return grpc.StatusCode.OK, ""
    except StopIteration:
        return call.code(), call.details()
    except grpc.RpcError as e:
        return e.code(), e.details()


class SqliteV3WritesTest(V3WritesMixin, harness.ServerTestCase):
    pass


@unittest.skipUnless(os.environ.get("XB_PG_PRIMARY"), "needs XB_PG_PRIMARY")
class PostgresV3WritesTest(V3WritesMixin, harness.PgServerTestCase):
    pass


if __name__ == "__main__":
    unittest.main()
