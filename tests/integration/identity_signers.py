"""Independent signers for identity-update tests (VALIDATION.md 5.4-5.5).

Nothing here comes from the backend under test: Keccak-256 is pycryptodome's (Debian
python3-pycryptodome), secp256k1 and P-256 signing is python3-cryptography's, Ed25519ph follows
RFC 8032 section 5.1 in plain Python (pycryptodome in Debian bookworm predates its EdDSA module and
python3-cryptography has no Ed25519ph), and the signature text is built from the layout in
VALIDATION.md 5.4.
"""

import base64
import datetime
import hashlib
import json

from Cryptodome.Hash import keccak as _keccak
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, utils


def keccak256(data: bytes) -> bytes:
    h = _keccak.new(digest_bits=256)
    h.update(data)
    return h.digest()


# ---------------------------------------------------------------- secp256k1 / ERC-191

_P = 2**256 - 2**32 - 977
_N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
_G = (0x79BE667EF9DCBBAC55A06295CE870B07029BFCDB2DCE28D959F2815B16F81798,
      0x483ADA7726A3C4655DA4FBFC0E1108A8FD17B448A68554199C47D08FFB10D4B8)


def _k1_add(a, b):
    if a is None:
        return b
    if b is None:
        return a
    if a[0] == b[0] and (a[1] + b[1]) % _P == 0:
        return None
    if a == b:
        lam = 3 * a[0] * a[0] * pow(2 * a[1], -1, _P) % _P
    else:
        lam = (b[1] - a[1]) * pow(b[0] - a[0], -1, _P) % _P
    x = (lam * lam - a[0] - b[0]) % _P
    return (x, (lam * (a[0] - x) - a[1]) % _P)


def _k1_mul(k, pt):
    out = None
    while k:
        if k & 1:
            out = _k1_add(out, pt)
        pt = _k1_add(pt, pt)
        k >>= 1
    return out


def _k1_recover(digest: bytes, r: int, s: int, parity: int):
    y2 = (pow(r, 3, _P) + 7) % _P
    y = pow(y2, (_P + 1) // 4, _P)
    if y & 1 != parity:
        y = _P - y
    e = int.from_bytes(digest, "big") % _N
    rinv = pow(r, -1, _N)
    return _k1_mul(rinv, _k1_add(_k1_mul(s, (r, y)), _k1_mul((-e) % _N, _G)))


def eth_address(private_key: bytes) -> str:
    key = ec.derive_private_key(int.from_bytes(private_key, "big"), ec.SECP256K1())
    nums = key.public_key().public_numbers()
    xy = nums.x.to_bytes(32, "big") + nums.y.to_bytes(32, "big")
    return "0x" + keccak256(xy)[12:].hex()


def personal_message_hash(text: str) -> bytes:
    data = text.encode()
    return keccak256(b"\x19Ethereum Signed Message:\n" + str(len(data)).encode() + data)


def erc191_sign(private_key: bytes, text: str, v_offset: int = 27) -> bytes:
    """65 bytes r || s(low) || v over the EIP-191 hash of `text`."""
    digest = personal_message_hash(text)
    key = ec.derive_private_key(int.from_bytes(private_key, "big"), ec.SECP256K1())
    der = key.sign(digest, ec.ECDSA(utils.Prehashed(hashes.SHA256())))
    r, s = utils.decode_dss_signature(der)
    if s > _N // 2:
        s = _N - s
    nums = key.public_key().public_numbers()
    for parity in (0, 1):
        if _k1_recover(digest, r, s, parity) == (nums.x, nums.y):
            return r.to_bytes(32, "big") + s.to_bytes(32, "big") + bytes([parity + v_offset])
    raise AssertionError("no recovery id reproduces the key")


# ---------------------------------------------------------------- Ed25519ph (RFC 8032 5.1)

_EP = 2**255 - 19
_EL = 2**252 + 27742317777372353535851937790883648493
_ED = -121665 * pow(121666, -1, _EP) % _EP
_EBY = 4 * pow(5, -1, _EP) % _EP


def _ed_xrecover(y, sign):
    x2 = (y * y - 1) * pow(_ED * y * y + 1, -1, _EP) % _EP
    x = pow(x2, (_EP + 3) // 8, _EP)
    if (x * x - x2) % _EP != 0:
        x = x * pow(2, (_EP - 1) // 4, _EP) % _EP
    if x & 1 != sign:
        x = _EP - x
    return x


_EB = (_ed_xrecover(_EBY, 0), _EBY)


def _ed_add(a, b):
    x1, y1 = a
    x2, y2 = b
    t = _ED * x1 * x2 * y1 * y2 % _EP
    return ((x1 * y2 + x2 * y1) * pow(1 + t, -1, _EP) % _EP,
            (y1 * y2 + x1 * x2) * pow(1 - t, -1, _EP) % _EP)


def _ed_mul(k, pt):
    out = (0, 1)
    while k:
        if k & 1:
            out = _ed_add(out, pt)
        pt = _ed_add(pt, pt)
        k >>= 1
    return out


def _ed_encode(pt):
    return (pt[1] | ((pt[0] & 1) << 255)).to_bytes(32, "little")


def _ed_expand(seed: bytes):
    h = hashlib.sha512(seed).digest()
    a = int.from_bytes(h[:32], "little")
    a &= (1 << 254) - 8
    a |= 1 << 254
    return a, h[32:]


def ed25519_public_key(seed: bytes) -> bytes:
    return _ed_encode(_ed_mul(_ed_expand(seed)[0], _EB))


IDENTITY_CONTEXT = b"IDENTITY UPDATE SIGNATURE"


def ed25519ph_sign(seed: bytes, message: bytes, context: bytes = IDENTITY_CONTEXT) -> bytes:
    a, prefix = _ed_expand(seed)
    pub = _ed_encode(_ed_mul(a, _EB))
    dom = b"SigEd25519 no Ed25519 collisions" + bytes([1, len(context)]) + context
    ph = hashlib.sha512(message).digest()
    r = int.from_bytes(hashlib.sha512(dom + prefix + ph).digest(), "little") % _EL
    big_r = _ed_encode(_ed_mul(r, _EB))
    k = int.from_bytes(hashlib.sha512(dom + big_r + pub + ph).digest(), "little") % _EL
    return big_r + ((r + k * a) % _EL).to_bytes(32, "little")


# ---------------------------------------------------------------- P-256 passkey (5.5.3)

def passkey_public_key(private_key: bytes) -> bytes:
    key = ec.derive_private_key(int.from_bytes(private_key, "big"), ec.SECP256R1())
    nums = key.public_key().public_numbers()
    return b"\x04" + nums.x.to_bytes(32, "big") + nums.y.to_bytes(32, "big")


def passkey_sign(private_key: bytes, text: str, origin: str = "https://example.test",
                 authenticator_data: bytes = bytes(32) + b"\x05\x00\x00\x00\x01"):
    """(authenticator_data, client_data_json, DER signature) for the text."""
    challenge = base64.urlsafe_b64encode(text.encode()).rstrip(b"=").decode()
    client_data = json.dumps({"type": "webauthn.get", "challenge": challenge,
                              "origin": origin}, separators=(",", ":")).encode()
    key = ec.derive_private_key(int.from_bytes(private_key, "big"), ec.SECP256R1())
    der = key.sign(authenticator_data + hashlib.sha256(client_data).digest(),
                   ec.ECDSA(hashes.SHA256()))
    return authenticator_data, client_data, der


# ---------------------------------------------------------------- signature text (5.4)

def inbox_id(identifier: str, nonce: int) -> str:
    return hashlib.sha256((identifier + str(nonce)).encode()).hexdigest()


def signature_text(inbox: str, client_timestamp_ns: int, action_lines) -> str:
    """action_lines: list of (first line, label, identifier text)."""
    ts = client_timestamp_ns - 2**64 if client_timestamp_ns >= 2**63 else client_timestamp_ns
    when = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=ts // 10**9)
    lines = ["XMTP : Authenticate to inbox", "", "Inbox ID: " + inbox,
             "Current time: " + when.strftime("%Y-%m-%dT%H:%M:%SZ"), ""]
    for first, label, ident in action_lines:
        lines.append("- " + first)
        lines.append("  (" + label + ": " + ident + ")")
    lines += ["", "For more info: https://xmtp.org/signatures"]
    return "\n".join(lines)
