"""The V3 API's reads and its other writes (issue 33, docs/v3-api.md 2.2, 3.2-3.9, 3.11), with
python3-grpcio and the V3 schema's own messages: QueryGroupMessages and QueryWelcomeMessages in
both directions with xmtp-node-go's paging, FetchKeyPackages, GetNewestGroupMessage,
Send/QueryWelcomeMessages, Register/UploadKeyPackage, BatchPublish/BatchQueryCommitLog,
IdentityApi.GetIdentityUpdates and the deprecated methods. One store, two views: rows written
through xmtp.backend.v1 are read through V3 and the reverse, with the same ids. Bad input gets a
clear status and stores nothing. On SQLite and, with XB_PG_PRIMARY set, on PostgreSQL."""
import os
import unittest

import grpc
from google.protobuf import empty_pb2

import envelopes as E
import harness
import identity_updates as U
import key_package_vectors as V
from identity.api.v1 import identity_pb2
from identity.associations import signature_pb2
from mls.api.v1 import mls_pb2
from mls.message_contents import commit_log_pb2
from xmtp.backend.v1 import backend_pb2

MLS = "/xmtp.mls.api.v1.MlsApi/"
IDENTITY = "/xmtp.identity.api.v1.IdentityApi/"
PUBLISH = "/xmtp.backend.v1.PublishService/Publish"
QUERY = "/xmtp.backend.v1.QueryService/Query"
ASC, DESC = mls_pb2.SORT_DIRECTION_ASCENDING, mls_pb2.SORT_DIRECTION_DESCENDING
INVALID = grpc.StatusCode.INVALID_ARGUMENT


class V3ReadsMixin:
    def call(self, method, request, response_type):
        with self.server.channel() as ch:
            return harness.unary(ch, method, request, response_type, timeout=20)[0]

    def fails(self, method, request, response_type):
        with self.server.channel() as ch:
            with self.assertRaises(grpc.RpcError) as ctx:
                harness.unary(ch, method, request, response_type, timeout=20)
        return ctx.exception.code(), ctx.exception.details()

    def publish(self, envelopes):
        return list(self.call(PUBLISH, backend_pb2.PublishRequest(envelopes=envelopes),
                              backend_pb2.PublishResponse).envelope_metas)

    def v1_query(self, topic):
        req = backend_pb2.QueryRequest(queries=[backend_pb2.TopicQuery(
            topic=backend_pb2.Topic(topic=topic))])
        return list(self.call(QUERY, req, backend_pb2.QueryResponse).envelopes)

    def group_page(self, group, direction=None, limit=0, cursor=0):
        req = mls_pb2.QueryGroupMessagesRequest(group_id=group)
        if direction is not None or limit or cursor:
            req.paging_info.CopyFrom(mls_pb2.PagingInfo(direction=direction or 0, limit=limit,
                                                        id_cursor=cursor))
        return self.call(MLS + "QueryGroupMessages", req, mls_pb2.QueryGroupMessagesResponse)

    def group_with(self, count, commit_at=None):
        group = os.urandom(16)
        envs = [E.group_message(group, content_type=3 if i == commit_at else 1,
                                ciphertext=b"m%d" % i) for i in range(count)]
        metas = self.publish(envs)
        harness.wait_for(lambda: len(self.group_page(group).messages) == count, 10, "the rows")
        return group, envs, [m.cursor.sequence_id for m in metas]

    # verifies: issue 33 (docs/v3-api.md 2.1, 3.5) — rows published through v1 read back as
    # GroupMessage.V1 with the store's ids and times.
    def test_group_messages_are_the_v1_rows(self):
        group, envs, ids = self.group_with(3, commit_at=1)
        rows = self.v1_query(E.group_topic(group))
        page = self.group_page(group, ASC)
        self.assertEqual([m.v1.id for m in page.messages], ids)
        for message, row, env in zip(page.messages, rows, envs):
            self.assertEqual(message.v1.created_ns, row.meta.server_ns)
            self.assertEqual(message.v1.group_id, group)
            self.assertEqual(message.v1.data, env.group_message.data)
        self.assertEqual([m.v1.is_commit for m in page.messages], [False, True, False])

    # verifies: issue 33 (docs/v3-api.md 2.2) — ascending pages above an exclusive cursor; a full
    # page names its last id, a short one 0; limit 0 or over 100 is 100.
    def test_ascending_paging_as_node_go_pages(self):
        group, _, ids = self.group_with(5)
        first = self.group_page(group, ASC, limit=2)
        self.assertEqual([m.v1.id for m in first.messages], ids[:2])
        self.assertEqual((first.paging_info.direction, first.paging_info.limit,
                          first.paging_info.id_cursor), (ASC, 2, ids[1]))
        second = self.group_page(group, ASC, limit=2, cursor=first.paging_info.id_cursor)
        self.assertEqual([m.v1.id for m in second.messages], ids[2:4])
        last = self.group_page(group, ASC, limit=2, cursor=second.paging_info.id_cursor)
        self.assertEqual([m.v1.id for m in last.messages], ids[4:])
        self.assertEqual(last.paging_info.id_cursor, 0)
        whole = self.group_page(group, ASC, limit=5)
        self.assertEqual(whole.paging_info.id_cursor, ids[4])  # full, though nothing follows
        self.assertEqual(list(self.group_page(group, ASC, limit=5, cursor=ids[4]).messages), [])
        self.assertEqual(self.group_page(group, ASC, limit=0).paging_info.limit, 100)
        self.assertEqual(self.group_page(group, ASC, limit=500).paging_info.limit, 100)

    # verifies: issue 33 (docs/v3-api.md 2.2, G1) — no paging info, UNSPECIFIED and DESCENDING
    # all page newest first, below an exclusive cursor.
    def test_descending_paging_newest_first(self):
        group, _, ids = self.group_with(5)
        default = self.group_page(group)
        self.assertEqual([m.v1.id for m in default.messages], ids[::-1])
        self.assertEqual((default.paging_info.direction, default.paging_info.limit,
                          default.paging_info.id_cursor), (DESC, 100, 0))
        first = self.group_page(group, DESC, limit=2)
        self.assertEqual([m.v1.id for m in first.messages], [ids[4], ids[3]])
        self.assertEqual(first.paging_info.id_cursor, ids[3])
        second = self.group_page(group, 0, limit=2, cursor=ids[3])
        self.assertEqual([m.v1.id for m in second.messages], [ids[2], ids[1]])
        last = self.group_page(group, DESC, limit=2, cursor=ids[1])
        self.assertEqual([m.v1.id for m in last.messages], [ids[0]])
        self.assertEqual(last.paging_info.id_cursor, 0)
        latest = self.group_page(group, DESC, limit=1)  # libxmtp's "latest message"
        self.assertEqual([m.v1.id for m in latest.messages], [ids[4]])

    # verifies: issue 33 (docs/v3-api.md 3.5) — bad identifiers and cursors; an unknown group is
    # an empty page.
    def test_query_refuses_bad_input(self):
        for group in (b"", os.urandom(15), os.urandom(17)):
            code, _ = self.fails(MLS + "QueryGroupMessages",
                                 mls_pb2.QueryGroupMessagesRequest(group_id=group),
                                 mls_pb2.QueryGroupMessagesResponse)
            self.assertEqual(code, INVALID)
        code, _ = self.fails(MLS + "QueryWelcomeMessages",
                             mls_pb2.QueryWelcomeMessagesRequest(installation_key=os.urandom(16)),
                             mls_pb2.QueryWelcomeMessagesResponse)
        self.assertEqual(code, INVALID)
        req = mls_pb2.QueryGroupMessagesRequest(group_id=os.urandom(16), paging_info=mls_pb2.
                                                PagingInfo(direction=ASC, id_cursor=2**63))
        self.assertEqual(self.fails(MLS + "QueryGroupMessages", req,
                                    mls_pb2.QueryGroupMessagesResponse)[0], INVALID)
        self.assertEqual(list(self.group_page(os.urandom(16)).messages), [])

    # verifies: issue 33 (docs/v3-api.md 2.1, 3.2) — V3 Welcomes (V1 with welcome_metadata, and a
    # pointer) are the v1 rows, and read back through QueryWelcomeMessages.
    def test_welcomes_round_trip(self):
        key = os.urandom(32)
        req = mls_pb2.SendWelcomeMessagesRequest()
        req.messages.add().v1.CopyFrom(mls_pb2.WelcomeMessageInput.V1(
            installation_key=key, data=b"welcome", hpke_public_key=b"k" * 32,
            wrapper_algorithm=2, welcome_metadata=b"meta"))
        req.messages.add().welcome_pointer.CopyFrom(mls_pb2.WelcomeMessageInput.WelcomePointer(
            installation_key=key, welcome_pointer=b"pointer", hpke_public_key=b"p" * 32,
            wrapper_algorithm=2))
        self.assertEqual(self.call(MLS + "SendWelcomeMessages", req, empty_pb2.Empty),
                         empty_pb2.Empty())
        topic = E.topic(1, key)
        rows = harness.wait_for(lambda: (lambda r: r if len(r) == 2 else None)(
            self.v1_query(topic)), 10, "the Welcomes")
        self.assertEqual(rows[0].envelope.welcome_message.v1.welcome_metadata, b"meta")
        self.assertEqual(rows[1].envelope.welcome_message.welcome_pointer.welcome_pointer,
                         b"pointer")
        page = self.call(MLS + "QueryWelcomeMessages", mls_pb2.QueryWelcomeMessagesRequest(
            installation_key=key, paging_info=mls_pb2.PagingInfo(direction=ASC)),
            mls_pb2.QueryWelcomeMessagesResponse)
        v1, pointer = page.messages[0].v1, page.messages[1].welcome_pointer
        self.assertEqual((v1.id, v1.created_ns), (rows[0].meta.cursor.sequence_id,
                                                   rows[0].meta.server_ns))
        self.assertEqual((v1.installation_key, v1.data, v1.hpke_public_key, v1.wrapper_algorithm,
                          v1.welcome_metadata), (key, b"welcome", b"k" * 32, 2, b"meta"))
        self.assertEqual((pointer.id, pointer.installation_key, pointer.welcome_pointer,
                          pointer.hpke_public_key, pointer.wrapper_algorithm),
                         (rows[1].meta.cursor.sequence_id, key, b"pointer", b"p" * 32, 2))

    # verifies: issue 33 (docs/v3-api.md 3.2) — bad Welcomes fail as Publish fails; nothing stored.
    def test_send_welcomes_refuses_bad_input(self):
        key = os.urandom(32)
        req = mls_pb2.SendWelcomeMessagesRequest()
        req.messages.add().v1.CopyFrom(mls_pb2.WelcomeMessageInput.V1(installation_key=key,
                                                                       data=b"w"))
        req.messages.add().v1.CopyFrom(mls_pb2.WelcomeMessageInput.V1(
            installation_key=os.urandom(31), data=b"w"))
        self.assertEqual(self.fails(MLS + "SendWelcomeMessages", req, empty_pb2.Empty)[0],
                         INVALID)
        self.assertEqual(self.fails(MLS + "SendWelcomeMessages",
                                    mls_pb2.SendWelcomeMessagesRequest(), empty_pb2.Empty),
                         (INVALID, "no messages in the request"))
        no_version = mls_pb2.SendWelcomeMessagesRequest()
        no_version.messages.add()
        self.assertEqual(self.fails(MLS + "SendWelcomeMessages", no_version,
                                    empty_pb2.Empty)[0], INVALID)
        self.assertEqual(self.v1_query(E.topic(1, key)), [])

    # verifies: issue 33 (docs/v3-api.md 3.3, 3.4) — RegisterInstallation answers the
    # installation key; FetchKeyPackages answers every position, empty where nothing is stored.
    def test_key_packages_register_and_fetch(self):
        upload = mls_pb2.KeyPackageUpload(key_package_tls_serialized=V.MINIMAL)
        registered = self.call(MLS + "RegisterInstallation",
                               mls_pb2.RegisterInstallationRequest(key_package=upload),
                               mls_pb2.RegisterInstallationResponse)
        key = V.TOPIC[1:]
        self.assertEqual(registered.installation_key, key)
        unknown = os.urandom(32)
        fetched = self.call(MLS + "FetchKeyPackages", mls_pb2.FetchKeyPackagesRequest(
            installation_keys=[key, unknown, key]), mls_pb2.FetchKeyPackagesResponse)
        self.assertEqual([p.key_package_tls_serialized for p in fetched.key_packages],
                         [V.MINIMAL, b"", V.MINIMAL])
        self.assertEqual(len(self.call(MLS + "FetchKeyPackages",
                                       mls_pb2.FetchKeyPackagesRequest(),
                                       mls_pb2.FetchKeyPackagesResponse).key_packages), 0)
        code, _ = self.fails(MLS + "FetchKeyPackages", mls_pb2.FetchKeyPackagesRequest(
            installation_keys=[key, os.urandom(20)]), mls_pb2.FetchKeyPackagesResponse)
        self.assertEqual(code, INVALID)
        code, _ = self.fails(MLS + "RegisterInstallation", mls_pb2.RegisterInstallationRequest(),
                             mls_pb2.RegisterInstallationResponse)
        self.assertEqual(code, INVALID)

    # verifies: issue 33 (docs/v3-api.md 3.6) — one Response per position; without content only
    # the metadata.
    def test_get_newest_group_message(self):
        group, envs, ids = self.group_with(2)
        empty = os.urandom(16)
        method = MLS + "GetNewestGroupMessage"
        meta = self.call(method, mls_pb2.GetNewestGroupMessageRequest(
            group_ids=[group, empty, group]), mls_pb2.GetNewestGroupMessageResponse)
        self.assertEqual([r.HasField("group_message") for r in meta.responses],
                         [True, False, True])
        newest = meta.responses[0].group_message.v1
        self.assertEqual((newest.id, newest.group_id, newest.data), (ids[1], group, b""))
        full = self.call(method, mls_pb2.GetNewestGroupMessageRequest(
            group_ids=[group], include_content=True), mls_pb2.GetNewestGroupMessageResponse)
        self.assertEqual(full.responses[0].group_message.v1.data, envs[1].group_message.data)
        self.assertEqual(self.fails(method, mls_pb2.GetNewestGroupMessageRequest(),
                                    mls_pb2.GetNewestGroupMessageResponse),
                         (INVALID, "no group ids provided"))
        code, _ = self.fails(method, mls_pb2.GetNewestGroupMessageRequest(
            group_ids=[os.urandom(8)]), mls_pb2.GetNewestGroupMessageResponse)
        self.assertEqual(code, INVALID)

    def commit_write(self, group, seq, request_group=None):
        entry = commit_log_pb2.PlaintextCommitLogEntry(group_id=group, commit_sequence_id=seq)
        return mls_pb2.PublishCommitLogRequest(
            group_id=request_group or group, serialized_commit_log_entry=entry.SerializeToString(),
            signature=signature_pb2.RecoverableEd25519Signature(bytes=b"s" * 64,
                                                                public_key=b"p" * 32))

    def commit_page(self, group, cursor=0, direction=0):
        req = mls_pb2.BatchQueryCommitLogRequest()
        req.requests.add(group_id=group, paging_info=mls_pb2.PagingInfo(id_cursor=cursor,
                                                                        direction=direction))
        return self.call(MLS + "BatchQueryCommitLog", req, mls_pb2.BatchQueryCommitLogResponse)

    # verifies: issue 33 (docs/v3-api.md 3.7, 3.8) — commit-log entries are v1 rows and read back
    # per request with their own cursors; the signature is kept.
    def test_commit_log_round_trip(self):
        group, other = os.urandom(16), os.urandom(16)
        batch = mls_pb2.BatchPublishCommitLogRequest(requests=[
            self.commit_write(group, 1), self.commit_write(group, 2), self.commit_write(other, 1)])
        self.call(MLS + "BatchPublishCommitLog", batch, empty_pb2.Empty)
        rows = harness.wait_for(lambda: (lambda r: r if len(r) == 2 else None)(
            self.v1_query(E.topic(4, group))), 10, "the entries")
        ids = [r.meta.cursor.sequence_id for r in rows]
        req = mls_pb2.BatchQueryCommitLogRequest()
        req.requests.add(group_id=group)
        req.requests.add(group_id=group, paging_info=mls_pb2.PagingInfo(id_cursor=ids[0]))
        req.requests.add(group_id=other)
        got = self.call(MLS + "BatchQueryCommitLog", req, mls_pb2.BatchQueryCommitLogResponse)
        self.assertEqual([r.group_id for r in got.responses], [group, group, other])
        self.assertEqual([e.sequence_id for e in got.responses[0].commit_log_entries], ids)
        self.assertEqual([e.sequence_id for e in got.responses[1].commit_log_entries], ids[1:])
        self.assertEqual(len(got.responses[2].commit_log_entries), 1)
        entry = got.responses[0].commit_log_entries[0]
        self.assertEqual(entry.serialized_commit_log_entry,
                         batch.requests[0].serialized_commit_log_entry)
        self.assertEqual(entry.signature.bytes, b"s" * 64)
        self.assertEqual(got.responses[0].paging_info.direction, ASC)

    # verifies: issue 33 (docs/v3-api.md 3.7, 3.8, G8, G11) — shape checks; nothing stored.
    def test_commit_log_refuses_bad_input(self):
        group = os.urandom(16)
        publish = MLS + "BatchPublishCommitLog"
        unsigned = self.commit_write(group, 1)
        unsigned.ClearField("signature")
        for bad in ([], [self.commit_write(group, i) for i in range(11)], [unsigned],
                    [self.commit_write(group, 1, request_group=os.urandom(16))],
                    [self.commit_write(group, 1), mls_pb2.PublishCommitLogRequest(
                        group_id=group, signature=unsigned.signature)]):
            code, _ = self.fails(publish, mls_pb2.BatchPublishCommitLogRequest(requests=bad),
                                 empty_pb2.Empty)
            self.assertEqual(code, INVALID)
        self.assertEqual(self.v1_query(E.topic(4, group)), [])
        query = MLS + "BatchQueryCommitLog"
        self.assertEqual(self.fails(query, mls_pb2.BatchQueryCommitLogRequest(),
                                    mls_pb2.BatchQueryCommitLogResponse)[0], INVALID)
        many = mls_pb2.BatchQueryCommitLogRequest()
        for _ in range(21):
            many.requests.add(group_id=group)
        self.assertEqual(self.fails(query, many, mls_pb2.BatchQueryCommitLogResponse)[0], INVALID)
        descending = mls_pb2.BatchQueryCommitLogRequest()
        descending.requests.add(group_id=group, paging_info=mls_pb2.PagingInfo(direction=DESC))
        self.assertEqual(self.fails(query, descending, mls_pb2.BatchQueryCommitLogResponse)[0],
                         INVALID)
        short = mls_pb2.BatchQueryCommitLogRequest()
        short.requests.add(group_id=os.urandom(15))
        self.assertEqual(self.fails(query, short, mls_pb2.BatchQueryCommitLogResponse)[0], INVALID)

    # verifies: issue 33 (docs/v3-api.md 3.11) — every update above each entry's own cursor, the
    # inbox id echoed as sent (either letter case finds it).
    def test_get_identity_updates(self):
        key = os.urandom(32)
        inbox, update = U.registration(int.from_bytes(os.urandom(6), "big"), wallet_key=key,
                                       installation_seed=os.urandom(32))
        self.call(IDENTITY + "PublishIdentityUpdate",
                  identity_pb2.PublishIdentityUpdateRequest(identity_update=update),
                  identity_pb2.PublishIdentityUpdateResponse)
        rows = harness.wait_for(lambda: self.v1_query(bytes([2]) + bytes.fromhex(inbox)), 10,
                                "the update")
        seq = rows[0].meta.cursor.sequence_id
        req = identity_pb2.GetIdentityUpdatesRequest()
        req.requests.add(inbox_id=inbox, sequence_id=0)
        req.requests.add(inbox_id=inbox.upper(), sequence_id=0)
        req.requests.add(inbox_id=inbox, sequence_id=seq)
        req.requests.add(inbox_id=os.urandom(32).hex(), sequence_id=0)
        got = self.call(IDENTITY + "GetIdentityUpdates", req,
                        identity_pb2.GetIdentityUpdatesResponse)
        self.assertEqual([r.inbox_id for r in got.responses],
                         [inbox, inbox.upper(), inbox, req.requests[3].inbox_id])
        self.assertEqual([len(r.updates) for r in got.responses], [1, 1, 0, 0])
        log = got.responses[0].updates[0]
        self.assertEqual((log.sequence_id, log.server_timestamp_ns, log.update),
                         (seq, rows[0].meta.server_ns, update))
        bad = identity_pb2.GetIdentityUpdatesRequest()
        bad.requests.add(inbox_id="not hex")
        self.assertEqual(self.fails(IDENTITY + "GetIdentityUpdates", bad,
                                    identity_pb2.GetIdentityUpdatesResponse)[0], INVALID)

    # verifies: issue 33 (docs/v3-api.md 3.9) — the deprecated methods answer UNIMPLEMENTED from
    # their own handlers (naming the replacement), not the router's "unknown method".
    def test_deprecated_methods_are_unimplemented(self):
        code, details = self.fails(MLS + "RevokeInstallation", mls_pb2.RevokeInstallationRequest(
            installation_key=os.urandom(32)), empty_pb2.Empty)
        self.assertEqual((code, details), (grpc.StatusCode.UNIMPLEMENTED,
            "RevokeInstallation is deprecated: revoke through an identity update"))
        code, details = self.fails(MLS + "GetIdentityUpdates", mls_pb2.GetIdentityUpdatesRequest(),
                                   mls_pb2.GetIdentityUpdatesResponse)
        self.assertEqual((code, details), (grpc.StatusCode.UNIMPLEMENTED,
            "MlsApi.GetIdentityUpdates is deprecated: use IdentityApi.GetIdentityUpdates"))


class SqliteV3ReadsTest(V3ReadsMixin, harness.ServerTestCase):
    pass


class SmallLimitsV3Test(harness.ServerTestCase):
    """A response budget of three large rows: V3 pages stop short of it (G2), where a v1 Query
    of the same rows fails OUT_OF_RANGE (API-283); and V3 sends are bound like v1 publishes."""
    config = harness.minimal_config(
        "[limits]\nmax_envelope_bytes = 10000\nmax_response_bytes = 30000\n")
    call = V3ReadsMixin.call
    fails = V3ReadsMixin.fails
    v1_query = V3ReadsMixin.v1_query

    # verifies: issue 33 (docs/v3-api.md G2) — a page stops before the byte budget and names its
    # last row; paging from there returns every row once.
    def test_page_stops_short_of_the_response_budget(self):
        group = os.urandom(16)
        envs = [E.group_message(group, ciphertext=bytes([i]) * 9000) for i in range(5)]
        ids = [m.cursor.sequence_id for m in self.call(
            PUBLISH, backend_pb2.PublishRequest(envelopes=envs),
            backend_pb2.PublishResponse).envelope_metas]
        self.assertEqual(self.fails(QUERY, backend_pb2.QueryRequest(queries=[
            backend_pb2.TopicQuery(topic=backend_pb2.Topic(topic=E.group_topic(group)))]),
            backend_pb2.QueryResponse)[0], grpc.StatusCode.OUT_OF_RANGE)
        seen, cursor = [], 0
        for _ in range(5):
            page = self.call(MLS + "QueryGroupMessages", mls_pb2.QueryGroupMessagesRequest(
                group_id=group, paging_info=mls_pb2.PagingInfo(direction=ASC, id_cursor=cursor)),
                mls_pb2.QueryGroupMessagesResponse)
            got = [m.v1.id for m in page.messages]
            seen += got
            if len(seen) == len(ids):
                break
            self.assertTrue(0 < len(got) < len(ids), got)
            self.assertEqual(page.paging_info.id_cursor, got[-1])
            cursor = got[-1]
        self.assertEqual(seen, ids)

    # verifies: issue 33 (docs/v3-api.md 3.1) — a message over max_envelope_bytes is refused
    # as Publish refuses it, and nothing of the request is stored.
    def test_oversize_send_is_refused_and_stores_nothing(self):
        group = os.urandom(16)
        req = mls_pb2.SendGroupMessagesRequest()
        req.messages.add().v1.data = E.private_message(group, ciphertext=b"small")
        req.messages.add().v1.data = E.private_message(group, ciphertext=b"x" * 12000)
        code, _ = self.fails(MLS + "SendGroupMessages", req, empty_pb2.Empty)
        self.assertEqual(code, INVALID)
        self.assertEqual(self.v1_query(E.group_topic(group)), [])


API_KEY = os.urandom(24).hex()


class AuthV3Test(harness.ServerTestCase):
    """With auth on, a V3 path is a non-public path (AUTH-001), as any xmtp.backend.v1 one."""
    config = harness.minimal_config(
        '[auth]\nenabled = true\n[auth.api_keys]\nv3 = "%s"\n' % API_KEY)

    # verifies: issue 33 (deliverable 4: the same auth) — no credential: UNAUTHENTICATED
    def test_v3_calls_need_a_credential(self):
        req = mls_pb2.QueryGroupMessagesRequest(group_id=os.urandom(16))
        with self.server.channel() as ch:
            with self.assertRaises(grpc.RpcError) as ctx:
                harness.unary(ch, MLS + "QueryGroupMessages", req,
                              mls_pb2.QueryGroupMessagesResponse)
            self.assertEqual(ctx.exception.code(), grpc.StatusCode.UNAUTHENTICATED)
            page, _ = harness.unary(ch, MLS + "QueryGroupMessages", req,
                                    mls_pb2.QueryGroupMessagesResponse,
                                    metadata=[("authorization", "Bearer " + API_KEY)])
        self.assertEqual(list(page.messages), [])


@unittest.skipUnless(os.environ.get("XB_PG_PRIMARY"), "needs XB_PG_PRIMARY")
class PostgresV3ReadsTest(V3ReadsMixin, harness.PgServerTestCase):
    pass


if __name__ == "__main__":
    unittest.main()
