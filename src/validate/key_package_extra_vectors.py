#!/usr/bin/python3
"""Builds extra key-package test vectors with an independent tool (python3-cryptography's Ed25519),
from the RFC 9420 section 7.2 / 10 layouts as VALIDATION.md 4.1 restates them, and prints them as
the C++ header key_package_extra_vectors_test_data.h:

    /usr/bin/python3 src/validate/key_package_extra_vectors.py \
        > src/validate/key_package_extra_vectors_test_data.h

Every package is signed (LeafNodeTBS and KeyPackageTBS, RFC 9420 section 5.1.2 SignWithLabel) over
the exact bytes emitted, so a refusal can only come from the rule the case targets. Keys: the
VALIDATION.md 8.2 installation key (Ed25519 seed 00 01 .. 1f), init and encryption keys of 8.2.
Ed25519 signatures are deterministic, so the output is stable.
"""
import hashlib

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

SEED = bytes(range(32))
KEY = ed25519.Ed25519PrivateKey.from_private_bytes(SEED)
PUB = KEY.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
assert PUB.hex() == "03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8"
INIT_KEY = bytes.fromhex("358072d6365880d1aeea329adf9121383851ed21a28e3b75e965d0d2cd166254")
ENC_KEY = bytes.fromhex("79a631eede1bf9c98f12032cdeadd0e7a079398fc786b88cc846ec89af85a51a")
INBOX = b"3f32eda0e45ae49c871fdd6facebe8f29e11b788d830ced24989d64db11b8cb7"
MAX64 = 2**64 - 1


def varint(n):
    """RFC 9420 section 2.1.2 length prefix, shortest form."""
    if n < 1 << 6:
        return bytes([n])
    if n < 1 << 14:
        return bytes([0x40 | n >> 8, n & 0xff])
    assert n < 1 << 30
    return bytes([0x80 | n >> 24, n >> 16 & 0xff, n >> 8 & 0xff, n & 0xff])


def vl(body):
    return varint(len(body)) + body


def u8(n):
    return n.to_bytes(1, "big")


def u16(n):
    return n.to_bytes(2, "big")


def u64(n):
    return n.to_bytes(8, "big")


def u16_list(values, declared=None):
    body = b"".join(u16(v) for v in values)
    return varint(len(body) if declared is None else declared) + body


def extensions(pairs):
    return vl(b"".join(u16(t) + vl(d) for t, d in pairs))


def sign_with_label(label, content):
    return KEY.sign(vl(b"MLS 1.0 " + label) + vl(content))


def mls_credential(inbox=INBOX):
    # protobuf xmtp.identity.MlsCredential { string inbox_id = 1; }
    return b"\x0a" + bytes([len(inbox)]) + inbox


def key_package(suite=3, version=1, init_key=INIT_KEY, enc_key=ENC_KEY, credential_type=1,
                identity=None, capabilities=None, source=1, not_before=0, not_after=MAX64,
                leaf_extensions=b"\x00", kp_extensions=b"\x00"):
    identity = mls_credential() if identity is None else identity
    if capabilities is None:
        capabilities = u16_list([1]) + u16_list([suite]) + u16_list([]) + u16_list([]) + \
            u16_list([1])
    leaf_tbs = vl(enc_key) + vl(PUB) + u16(credential_type) + vl(identity) + capabilities + \
        u8(source)
    if source == 1:
        leaf_tbs += u64(not_before) + u64(not_after)
    elif source == 3:
        leaf_tbs += vl(b"\x00" * 32)
    leaf_tbs += leaf_extensions
    leaf = leaf_tbs + vl(sign_with_label(b"LeafNodeTBS", leaf_tbs))
    tbs = u16(version) + u16(suite) + vl(init_key) + leaf + kp_extensions
    return tbs + vl(sign_with_label(b"KeyPackageTBS", tbs))


def caps(extensions_list):
    return u16_list([1]) + u16_list([3]) + u16_list(extensions_list) + u16_list([]) + \
        u16_list([1])


# (name, bytes, expected message after "key package is invalid: ", or "" for accept)
CASES = [
    ("suite_x_wing_accepted", key_package(suite=0x004D), ""),
    ("credential_unknown_fields_accepted",
     key_package(identity=mls_credential() + b"\x10\x07\x1a\x02hi"), ""),
    ("credential_empty_accepted", key_package(identity=b""), ""),
    ("capabilities_unknown_values_accepted",
     key_package(capabilities=u16_list([1, 0x0a0a]) + u16_list([0x1234]) + u16_list([0xbeef]) +
                 u16_list([0x7777]) + u16_list([0xff])), ""),
    ("last_resort_and_ff04_listed_accepted",
     key_package(capabilities=caps([10, 0xff04]),
                 kp_extensions=extensions([(10, b""), (0xff04, b"\x0a\x01\x03")])), ""),
    ("application_id_leaf_extension_accepted",
     key_package(leaf_extensions=extensions([(1, vl(INBOX))])), ""),
    ("not_before_now_accepted", key_package(not_before=1700000000, not_after=1700000001), ""),
    ("ff04_not_listed", key_package(kp_extensions=extensions([(0xff04, b"\x0a\x01\x03")])),
     "extension type missing from the leaf capabilities"),
    ("application_id_in_key_package", key_package(kp_extensions=extensions([(1, vl(b"x"))])),
     "extension type not allowed in a key package"),
    ("external_senders_in_key_package", key_package(kp_extensions=extensions([(5, b"\x00")])),
     "extension type not allowed in a key package"),
    ("immutable_metadata_in_key_package",
     key_package(capabilities=caps([0xf000]), kp_extensions=extensions([(0xf000, vl(b"m"))])),
     "extension type not allowed in a key package"),
    ("grease_in_key_package",
     key_package(capabilities=caps([0x3a3a]), kp_extensions=extensions([(0x3a3a, b"g")])),
     "extension type not allowed in a key package"),
    ("source_update", key_package(source=2), "leaf node source is not key_package"),
    ("source_commit", key_package(source=3), "leaf node source is not key_package"),
    ("credential_invalid_utf8", key_package(identity=b"\x0a\x02\xc3\x28"),
     "credential identity is not an MlsCredential"),
    ("credential_truncated", key_package(identity=b"\x0a\x05abc"),
     "credential identity is not an MlsCredential"),
    # VALIDATION.md 2.1 / 4.3 quirk: correctly signed over the bytes as sent, but the reference
    # re-serializes before verifying, so these fail there as signature failures.
    ("overrun_capabilities_list",
     key_package(capabilities=u16_list([1]) + u16_list([3, 1], declared=3) + u16_list([]) +
                 u16_list([]) + u16_list([1])),
     "leaf node signature does not verify (non-canonical encoding)"),
    ("application_id_with_leftover_bytes",
     key_package(leaf_extensions=extensions([(1, vl(INBOX) + b"\x00")])),
     "leaf node signature does not verify (non-canonical encoding)"),
    ("last_resort_with_data",
     key_package(capabilities=caps([10]), kp_extensions=extensions([(10, b"\x00")])),
     "leaf node signature does not verify (non-canonical encoding)"),
]


def cxx_hex(data, indent):
    h = data.hex()
    rows = [h[i:i + 84] for i in range(0, len(h), 84)]
    return ("\n" + " " * indent).join('"%s"' % r for r in rows)


# Cross-check of this builder: with the defaults it reproduces the VALIDATION.md 8.2 minimal
# package byte for byte (signatures included), whose SHA-256 is this.
MINIMAL_SHA256 = "4f1b2caea53ab12847b2c029e4ce113049000f0112c7f4de9d90d1e1661d6782"


def main():
    assert hashlib.sha256(key_package()).hexdigest() == MINIMAL_SHA256
    print("// Generated by key_package_extra_vectors.py (python3-cryptography Ed25519 signatures over")
    print("// RFC 9420 layouts written independently of the code under test). Do not edit; re-run it.")
    print("#pragma once")
    print()
    print("#include <string_view>")
    print()
    print("namespace xb::validate::extra_vectors {")
    print()
    print("struct KeyPackageCase {")
    print("  std::string_view name;")
    print("  std::string_view tls;              // hex")
    print("  std::string_view invalid_because;  // empty: accepted")
    print("};")
    print()
    print("inline constexpr KeyPackageCase kKeyPackageCases[] = {")
    for name, data, why in CASES:
        print('    {"%s",' % name)
        print("     " + cxx_hex(data, 5) + ",")
        print('     "%s"},' % why)
    print("};")
    print()
    print("}  // namespace xb::validate::extra_vectors")


if __name__ == "__main__":
    main()
