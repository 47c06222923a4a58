"""Builds valid client envelopes of every kind, byte by byte from the RFC 9420 and API.md layouts
(never with the server's code)."""
import struct

from identity.associations import association_pb2
from mls.message_contents import commit_log_pb2
from xmtp.backend.v1 import backend_pb2


def vec(data):
    """RFC 9420 2.1.2 variable-length vector, minimal prefix."""
    n = len(data)
    if n < 0x40:
        return bytes([n]) + data
    if n < 0x4000:
        return struct.pack(">H", 0x4000 | n) + data
    return struct.pack(">I", 0x80000000 | n) + data


def private_message(group_id, content_type=1, ciphertext=b"ciphertext", epoch=1):
    """MLSMessage{version mls10, wire_format private_message} (API.md 2.16)."""
    return (struct.pack(">HH", 1, 2) + vec(group_id) + struct.pack(">Q", epoch) +
            bytes([content_type]) + vec(b"") + vec(b"sender-data") + vec(ciphertext))


def group_message(group_id, content_type=1, ciphertext=b"ciphertext"):
    return backend_pb2.ClientEnvelope(group_message=backend_pb2.GroupMessage(
        data=private_message(group_id, content_type, ciphertext)))


def welcome(installation_key, data=b"wrapped-welcome"):
    return backend_pb2.ClientEnvelope(welcome_message=backend_pb2.WelcomeMessage(
        v1=backend_pb2.WelcomeMessage.V1(installation_key=installation_key, data=data,
                                         hpke_public_key=b"k" * 32)))


def commit_log(group_id, commit_sequence_id=1):
    entry = commit_log_pb2.PlaintextCommitLogEntry(group_id=group_id,
                                                    commit_sequence_id=commit_sequence_id)
    return backend_pb2.ClientEnvelope(commit_log_entry=backend_pb2.CommitLogEntry(
        serialized_commit_log_entry=entry.SerializeToString()))


def identity_update(inbox_hex, timestamp=1):
    return backend_pb2.ClientEnvelope(identity_update=association_pb2.IdentityUpdate(
        inbox_id=inbox_hex, client_timestamp_ns=timestamp))


def topic(kind, identifier):
    return bytes([kind]) + identifier


def group_topic(group_id):
    return topic(0, group_id)
