"""Helpers of the configuration-schema tests: the schema's tables and keys, TOML documents built
from dicts, and the loader's verdicts (src/config/schema_probe.cc) on many documents at once."""
import copy
import json
import math
import os
import pathlib
import re
import subprocess
import tomllib

import jsonschema

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCHEMA_PATH = ROOT / "docs" / "schema" / "config.schema.json"
EXAMPLE_PATH = ROOT / "docs" / "config.example.toml"
DELETE = object()  # a companion edit that removes the key


def load_schema():
    return json.loads(SCHEMA_PATH.read_text())


def validator(schema):
    """Draft-07, with TOML's types: an integer key takes no float (1.0), as the loader says."""
    base = jsonschema.Draft7Validator

    def is_integer(_, value):
        return isinstance(value, int) and not isinstance(value, bool)

    checker = base.TYPE_CHECKER.redefine("integer", is_integer)
    return jsonschema.validators.extend(base, type_checker=checker)(schema)


_EXAMPLE = tomllib.loads(EXAMPLE_PATH.read_text())


def example_doc():
    return copy.deepcopy(_EXAMPLE)


def minimal_doc():
    return {"server": {"identifier": "org.example.xmtp"},
            "database": {"url": "sqlite://./data/xmtp.db"}}


# ---- the schema's structure --------------------------------------------------------------------

def resolve(schema, node):
    """`node` with its $ref followed; its own keywords (description, default, ...) kept."""
    while "$ref" in node:
        target = schema["definitions"][node["$ref"].rsplit("/", 1)[1]]
        node = deep_merge(target, {k: v for k, v in node.items() if k != "$ref"})
    return node


def deep_merge(base, extra):
    out = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def strict_view(node):
    """[auth]'s checks apply only while enabled = true: its `then` holds them."""
    if node.get("if") == {"properties": {"enabled": {"const": True}}}:
        return deep_merge(node, node["then"])
    return node


def kind_variants(node):
    """{kind: (required, optional)} of a table whose keys depend on its `kind` (credentials)."""
    out = {}
    for cond in node.get("allOf", []):
        kind = cond.get("if", {}).get("properties", {}).get("kind", {}).get("const")
        if kind is not None:
            props = cond["then"]["properties"]
            required = cond["then"].get("required", [])
            out[kind] = (required, [p for p in props if p != "kind" and p not in required])
    return out


class Table:
    def __init__(self, path, node):
        self.path, self.node = path, node
        self.props = node.get("properties", {})
        self.required = node.get("required", [])
        self.closed = node.get("additionalProperties") is False
        self.variants = kind_variants(node)


def is_table(node):
    return node.get("type") == "object" and "properties" in node


def walk(schema, node=None, path=()):
    """Yields (tables, leaves): every table with its path, and every key that is not a table:
    (path, merged node). An array of tables adds the segment "[]"."""
    node = strict_view(resolve(schema, node if node is not None else schema))
    tables, leaves = [Table(path, node)], []
    for name, child in node["properties"].items():
        child = strict_view(resolve(schema, child))
        if is_table(child):
            sub_tables, sub_leaves = walk(schema, child, path + (name,))
        elif child.get("type") == "array" and is_table(resolve(schema, child["items"])):
            leaves.append((path + (name,), child))
            sub_tables, sub_leaves = walk(schema, child["items"], path + (name, "[]"))
        else:
            leaves.append((path + (name,), child))
            continue
        tables += sub_tables
        leaves += sub_leaves
    return tables, leaves


def leaf_type(schema, node):
    node = resolve(schema, node)
    if "type" in node:
        return node["type"]
    return "string"  # env:NAME or the key's own string form


def own_branch(schema, node):
    """The non-env alternative of a string key (its enum, pattern, lengths)."""
    node = resolve(schema, node)
    for branch in node.get("anyOf", []):
        if "$ref" not in branch:
            return branch
    return node


def path_str(path):
    """The key path as the loader names it: auth.keys[0].kid, chains."eip155:1"."""
    out = ""
    for seg in path:
        if seg == "[]":
            out += "[0]"
        else:
            bare = re.fullmatch(r"[A-Za-z0-9_-]+", seg)
            out += ("." if out else "") + (seg if bare else json.dumps(seg))
    return out


# ---- documents ---------------------------------------------------------------------------------

def sample(schema, node):
    """A valid value for a key or table: its example, its default, or its required keys'."""
    node = strict_view(resolve(schema, node))
    if "examples" in node:
        return copy.deepcopy(node["examples"][0])
    if "default" in node:
        return copy.deepcopy(node["default"])
    if is_table(node):
        return {r: sample(schema, node["properties"][r]) for r in node.get("required", [])}
    raise AssertionError("no example or default for " + json.dumps(node)[:80])


def container(schema, doc, path, create=True):
    """The dict at `path` (a table path) inside doc, created from the schema when absent."""
    node, here = schema, doc
    for seg in path:
        node = strict_view(resolve(schema, node))
        if seg == "[]":
            if not here:
                here.append(sample(schema, node["items"]))
            here, node = here[0], node["items"]
            continue
        node = node["properties"][seg]
        if seg not in here:
            if not create:
                return None
            is_array = strict_view(resolve(schema, node)).get("type") == "array"
            here[seg] = [] if is_array else sample(schema, node)
        here = here[seg]
    return here


def edit(schema, doc, path, value):
    parent = container(schema, doc, path[:-1])
    if value is DELETE:
        parent.pop(path[-1], None)
    else:
        parent[path[-1]] = value
    return doc


def toml_key(key):
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key, ensure_ascii=False)


def toml_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ("nan" if math.isnan(value) else
                                                          ("inf" if value > 0 else "-inf"))
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + "}"


def toml_doc(doc):
    """One line per top-level key, every table inline: no header can collide with another."""
    return "".join(f"{toml_key(k)} = {toml_value(v)}\n" for k, v in doc.items())


# ---- the loader's verdicts -----------------------------------------------------------------------

def run_probe(docs, env):
    """[(ok, text)] for each document: (True, dump of the loaded Config) or (False, error)."""
    probe = os.environ["XB_CONFIG_PROBE"]
    # Sanitizer options pass through; nothing else of this process's environment does (the loader
    # must not see OTEL_EXPORTER_OTLP_ENDPOINT).
    full_env = {k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")}
    full_env.update(env)
    data = b"\0".join(toml_doc(d).encode() for d in docs)
    out = subprocess.run([probe], input=data, env=full_env, capture_output=True, check=True,
                         timeout=120).stdout.decode()
    lines = out.split("\n")[:-1]
    assert len(lines) == len(docs), (len(lines), len(docs))
    return [(line.startswith("ok "), line.split(" ", 1)[1]) for line in lines]


def pem_keys():
    """Fresh keys: the private keys the example's env: names stand for, and one public key per
    auth.keys alg."""
    from cryptography.hazmat.primitives import serialization as ser
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    def private(key):
        return key.private_bytes(ser.Encoding.PEM, ser.PrivateFormat.PKCS8,
                                 ser.NoEncryption()).decode()

    def public(key):
        return key.public_key().public_bytes(ser.Encoding.PEM,
                                             ser.PublicFormat.SubjectPublicKeyInfo).decode()

    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    p256 = ec.generate_private_key(ec.SECP256R1())
    p384 = ec.generate_private_key(ec.SECP384R1())
    ed = ed25519.Ed25519PrivateKey.generate()
    publics = {"RS256": public(rsa_key), "RS384": public(rsa_key), "RS512": public(rsa_key),
               "ES256": public(p256), "ES384": public(p384), "EdDSA": public(ed)}
    return private(p256), private(rsa_key), publics


def example_env(apns_pem, fcm_rsa_pem):
    """The variables docs/config.example.toml names with env: (as src/config/example_test.cc)."""
    account = json.dumps({"type": "service_account", "project_id": "example-project",
                          "private_key": fcm_rsa_pem,
                          "client_email": "push@example-project.iam.gserviceaccount.com",
                          "token_uri": "https://oauth2.googleapis.com/token"})
    return {"XMTP_WORKER_API_KEY": "w" * 48,
            "XMTP_RPC_MAINNET": "https://eth-mainnet.example.com/v2/key",
            "XMTP_APNS_KEY": apns_pem, "XMTP_FCM_SERVICE_ACCOUNT": account,
            "XMTP_S3_ACCESS_KEY_ID": "AKIAEXAMPLE", "XMTP_S3_SECRET_ACCESS_KEY": "example-secret"}


def loader_names():
    """Every identifier-like string literal of the loader's sources and every field name of
    config.h: any key the loader reads is named by one of them."""
    src = ROOT / "src" / "config"
    names = set()
    for path in src.glob("*.cc"):
        if not path.name.endswith("_test.cc"):
            names |= set(re.findall(r'"([A-Za-z_][A-Za-z0-9_]*)"', path.read_text()))
    names |= set(re.findall(r"\b([a-z_][a-z0-9_]*)\s*(?:=[^=]|;|\{)",
                            (src / "config.h").read_text()))
    return names
