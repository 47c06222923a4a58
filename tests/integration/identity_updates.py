"""Identity updates signed at test time with independent tools (identity_signers.py), and the
spec's computed identity log (VALIDATION-vectors.json, section 8.2)."""
import os

import identity_log_vectors
import identity_signers as S
from identity.associations import association_pb2 as A
from identity.associations import signature_pb2 as Sig
from xmtp.backend.v1 import backend_pb2

LOG = identity_log_vectors.LOG
WALLET_KEY = bytes.fromhex(LOG["wallet_private_key"])
WALLET = LOG["wallet"]
INSTALLATION_SEED = bytes.fromhex(LOG["installation_seed"])


def spec_envelope(n):
    """The ClientEnvelope of update n (1..3) of the spec's log, as published bytes."""
    return backend_pb2.ClientEnvelope.FromString(
        bytes.fromhex(LOG["update%d" % n]["client_envelope"]))


def envelope(update):
    return backend_pb2.ClientEnvelope(identity_update=update)


def erc191(key, text):
    return Sig.Signature(erc_191=Sig.RecoverableEcdsaSignature(bytes=S.erc191_sign(key, text)))


def installation(seed, text):
    return Sig.Signature(installation_key=Sig.RecoverableEd25519Signature(
        bytes=S.ed25519ph_sign(seed, text.encode()), public_key=S.ed25519_public_key(seed)))


def registration(nonce, ts=1_700_000_000_000_000_000, wallet_key=WALLET_KEY,
                 installation_seed=INSTALLATION_SEED):
    """CreateInbox (wallet, nonce) + Add installation signed by the wallet: (inbox, update)."""
    wallet = S.eth_address(wallet_key)
    inbox = S.inbox_id(wallet, nonce)
    pub = S.ed25519_public_key(installation_seed)
    text = S.signature_text(inbox, ts, [("Create inbox", "Owner", wallet),
                                        ("Grant messaging access to app", "ID", pub.hex())])
    wsig = erc191(wallet_key, text)
    u = A.IdentityUpdate(inbox_id=inbox, client_timestamp_ns=ts)
    u.actions.add().create_inbox.CopyFrom(A.CreateInbox(
        initial_identifier=wallet, nonce=nonce, initial_identifier_signature=wsig,
        initial_identifier_kind=A.IDENTIFIER_KIND_ETHEREUM))
    u.actions.add().add.CopyFrom(A.AddAssociation(
        new_member_identifier=A.MemberIdentifier(installation_public_key=pub),
        existing_member_signature=wsig, new_member_signature=installation(installation_seed, text)))
    return inbox, u


def add_wallet(inbox, ts, existing_key, new_key):
    new = S.eth_address(new_key)
    text = S.signature_text(inbox, ts, [("Link address to inbox", "Address", new)])
    u = A.IdentityUpdate(inbox_id=inbox, client_timestamp_ns=ts)
    u.actions.add().add.CopyFrom(A.AddAssociation(
        new_member_identifier=A.MemberIdentifier(ethereum_address=new),
        existing_member_signature=erc191(existing_key, text),
        new_member_signature=erc191(new_key, text)))
    return u


def revoke_wallet(inbox, ts, recovery_key, address):
    text = S.signature_text(inbox, ts, [("Unlink address from inbox", "Address", address)])
    u = A.IdentityUpdate(inbox_id=inbox, client_timestamp_ns=ts)
    u.actions.add().revoke.CopyFrom(A.RevokeAssociation(
        member_to_revoke=A.MemberIdentifier(ethereum_address=address),
        recovery_identifier_signature=erc191(recovery_key, text)))
    return u


def scw_registration(stub, block, valid=True, chain="eip155:1"):
    """(address, inbox id, envelope): a CreateInbox signed by a fresh smart-contract wallet
    (ERC-6492 shaped) at `block` on `chain`, its verdict registered valid at `stub` (a
    chain_stub.ChainStub) unless `valid` is False (VALIDATION.md 5.5.4, 5.9)."""
    address = "0x" + os.urandom(20).hex()
    nonce = int.from_bytes(os.urandom(6), "big")
    inbox = S.inbox_id(address, nonce)
    text = S.signature_text(inbox, 5 * 10**18, [("Create inbox", "Owner", address)])
    sig = os.urandom(65) + b"\x64\x92" * 16  # shaped like an ERC-6492 wrapper
    if valid:
        stub.valid.add((bytes.fromhex(address[2:]), S.personal_message_hash(text), sig))
    u = A.IdentityUpdate(inbox_id=inbox, client_timestamp_ns=5 * 10**18)
    u.actions.add().create_inbox.CopyFrom(A.CreateInbox(
        initial_identifier=address, nonce=nonce,
        initial_identifier_signature=Sig.Signature(erc_6492=Sig.SmartContractWalletSignature(
            account_id=chain + ":" + address.upper().replace("0X", "0x"),
            block_number=block, signature=sig))))
    return address, inbox, envelope(u)
