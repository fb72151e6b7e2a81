#!/usr/bin/env python3
"""A second verifier of Truss ledgers, written from docs/ledger.md alone.

It shares no code with Truss: another language, another JSON parser, another
Ed25519 implementation. CI runs it on the demo's ledger and on mutated copies
of it, so that the format document and the ledgers Truss writes cannot drift
apart unnoticed.

usage: verify.py LEDGER_DIR VKEY
Exit status 0 when the ledger verifies (unsealed tail allowed), 1 when it
does not (the reason on stderr), 2 on bad usage.
"""

import base64
import hashlib
import json
import os
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


class Bad(Exception):
    pass


def sha256(b):
    return hashlib.sha256(b).digest()


def leaf(line):
    return sha256(b"\x00" + line)


def mth(leaves):
    """RFC 6962 Merkle tree hash."""
    n = len(leaves)
    if n == 0:
        return sha256(b"")
    if n == 1:
        return leaves[0]
    k = 1
    while k * 2 < n:
        k *= 2
    return sha256(b"\x01" + mth(leaves[:k]) + mth(leaves[k:]))


def records(data, name):
    """The records of a pack: <key> SP <length> LF <bytes> LF. Returns the
    records and whether the file ends in a torn record."""
    out, i = [], 0
    while i < len(data):
        nl = data.find(b"\n", i)
        if nl < 0 or nl - i > 84:
            if nl < 0 and len(data) - i <= 84:
                return out, True
            raise Bad(f"{name}: a record header without its newline at byte {i}")
        header = data[i:nl]
        parts = header.split(b" ")
        if len(parts) != 2 or not parts[0] or not parts[1].isdigit() or (len(parts[1]) > 1 and parts[1][:1] == b"0"):
            raise Bad(f"{name}: a malformed record header at byte {i}")
        n = int(parts[1])
        body = data[nl + 1 : nl + 1 + n]
        if len(body) < n or nl + 1 + n >= len(data):
            return out, True
        if data[nl + 1 + n : nl + 2 + n] != b"\n":
            raise Bad(f"{name}: the record at byte {i} does not end with a newline")
        out.append((parts[0].decode("ascii"), body))
        i = nl + 2 + n
    return out, False


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def parse_vkey(vkey):
    name, keyid, key = vkey.split("+", 2)
    raw = base64.b64decode(key)
    if len(raw) != 33 or raw[0] != 1:
        raise Bad("the verifier key is not an Ed25519 vkey")
    kid = sha256(name.encode() + b"\n" + raw)[:4]
    if kid.hex() != keyid:
        raise Bad("the verifier key's ID does not match its key")
    return name, kid, Ed25519PublicKey.from_public_bytes(raw[1:])


def open_note(note, vkey):
    """Checks a signed note's signature by the key; returns its text."""
    name, kid, pub = vkey
    cut = note.find(b"\n\n")
    if cut < 0:
        raise Bad("not a signed note")
    text, sigs = note[: cut + 1], note[cut + 2 :]
    for line in sigs.split(b"\n"):
        if not line:
            continue
        if not line.startswith("\u2014 ".encode()):
            raise Bad("a malformed signature line")
        who, _, sig = line[len("\u2014 ".encode()) :].partition(b" ")
        raw = base64.b64decode(sig)
        if who.decode() != name or raw[:4] != kid:
            continue
        try:
            pub.verify(raw[4:], text)
        except InvalidSignature:
            raise Bad("the signature does not verify")
        return text
    raise Bad("no signature by the verifier key")


def verify(d, vkey_text):
    vkey = parse_vkey(vkey_text)
    data = read(os.path.join(d, "entries.jsonl"))
    if data is None:
        raise Bad("no entries.jsonl")
    lines = data.split(b"\n")
    if lines[-1] != b"":
        raise Bad(f"entry {len(lines) - 1}: the last line has no newline")
    lines = lines[:-1]
    entries, leaves = [], []
    for i, line in enumerate(lines):
        try:
            e = json.loads(line)
        except ValueError as err:
            raise Bad(f"entry {i}: not JSON: {err}")
        if e.get("v") != 1 or e.get("seq") != i:
            raise Bad(f"entry {i}: version {e.get('v')}, sequence {e.get('seq')}")
        if i > 0 and e.get("session") != entries[0]["session"]:
            raise Bad(f"entry {i}: another session")
        if e.get("prev") != (leaves[-1].hex() if i else ""):
            raise Bad(f"entry {i - 1}: changed (the prev link of entry {i} does not match)")
        entries.append(e)
        leaves.append(leaf(line))
    if not entries:
        raise Bad("no entries")
    session = entries[0]["session"]

    cps = {}
    log = read(os.path.join(d, "checkpoints.log"))
    if log is not None:
        recs, _torn = records(log, "checkpoints.log")
        for key, body in recs:
            if not key.isdigit() or str(int(key)) != key:
                raise Bad(f"checkpoints.log: a record keyed {key!r}")
            if int(key) in cps:
                raise Bad(f"checkpoints.log: two checkpoints of size {key}")
            cps[int(key)] = body
    cpdir = os.path.join(d, "checkpoints")
    if os.path.isdir(cpdir):
        for fn in os.listdir(cpdir):
            if fn.endswith(".tmp"):
                continue
            if int(fn) in cps:
                raise Bad(f"two checkpoints of size {int(fn)}")
            cps[int(fn)] = read(os.path.join(cpdir, fn))
    if not cps:
        raise Bad("no signed checkpoint")
    sealed, last = 0, None
    for size in sorted(cps):
        text = open_note(cps[size], vkey).decode()
        origin, n, root = text.split("\n")[:3]
        if origin != f"{vkey[0]}/session/{session}":
            raise Bad(f"checkpoint {size}: origin {origin!r}")
        if int(n) != size:
            raise Bad(f"checkpoint {size}: it is of size {n}")
        if size > len(entries):
            raise Bad(f"checkpoint {size}: only {len(entries)} entries")
        if base64.b64decode(root) != mth(leaves[:size]):
            raise Bad(f"checkpoint {size}: the root does not match the entries")
        sealed, last = size, cps[size]

    pack = {}
    raw = read(os.path.join(d, "payloads.pack"))
    if raw is not None:
        recs, _torn = records(raw, "payloads.pack")
        for key, body in recs:
            if hashlib.sha256(body).hexdigest() == key:
                pack[key] = body

    def payload(digest):
        if digest in pack:
            return pack[digest]
        b = read(os.path.join(d, "payloads", digest))
        if b is not None and hashlib.sha256(b).hexdigest() == digest:
            return b
        return None

    count = set()
    for i, e in enumerate(entries[:sealed]):
        for name, digest in sorted(e["payloads"].items()):
            b = payload(digest)
            if b is None:
                raise Bad(f"entry {i}: payload {name} is missing or damaged")
            count.add(digest)
            if name == "request_parts":
                for k, part in enumerate(json.loads(b)):
                    if payload(part) is None:
                        raise Bad(f"entry {i}: request part {k} is missing or damaged")
                    count.add(part)
        verify_links(d, vkey_text, e, i, session)
    return len(entries), sealed, len(cps), len(count), last


def verify_links(d, vkey_text, e, i, session):
    if e["type"] != "tool.result":
        return
    for res in e["data"].get("results") or []:
        link = (res.get("agent") or {}).get("ledger")
        if not link:
            continue
        rel = link["dir"]
        if rel.startswith("/") or ".." in rel.split("/"):
            raise Bad(f"entry {i}: the sub-agent link's directory {rel!r} is not inside the ledger")
        child = os.path.join(d, rel)
        try:
            n, sealed, _, _, last = verify(child, vkey_text)
        except Bad as err:
            raise Bad(f"entry {i}: sub-agent ledger {rel}: {err}")
        if n != sealed or sealed != link["size"]:
            raise Bad(f"entry {i}: sub-agent ledger {rel} is not sealed at the linked size")
        text = last[: last.find(b"\n\n") + 1].decode()
        if base64.b64decode(text.split("\n")[2]) != base64.b64decode(link["root"]):
            raise Bad(f"entry {i}: sub-agent ledger {rel} has another root")
        if hashlib.sha256(last).hexdigest() != link["checkpoint"]:
            raise Bad(f"entry {i}: sub-agent ledger {rel} has another last checkpoint")
        first = json.loads(read(os.path.join(child, "entries.jsonl")).split(b"\n")[0])
        parent = first["data"].get("parent") or {}
        if parent.get("session") != session or parent.get("call_id") != e["data"]["call_id"]:
            raise Bad(f"entry {i}: sub-agent ledger {rel} names another parent session or spawn call")


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    try:
        n, sealed, cps, payloads, _ = verify(sys.argv[1], sys.argv[2])
    except (Bad, ValueError, KeyError, TypeError) as err:
        print(f"does not verify: {err}", file=sys.stderr)
        return 1
    print(f"verified: {n} entries, {sealed} sealed by {cps} checkpoints, {payloads} payloads")
    return 0


if __name__ == "__main__":
    sys.exit(main())
