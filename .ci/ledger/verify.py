#!/usr/bin/env python3
"""A second verifier of Truss ledgers, written from docs/ledger.md alone.

It shares no code with Truss: another language, another JSON parser, another
Ed25519 implementation. CI runs it on the demo's ledger and on mutated copies
of it, so that the format document and the ledgers Truss writes cannot drift
apart unnoticed.

usage: verify.py [--strict] LEDGER_DIR VKEY
Exit status 0 when the ledger verifies, 1 when it does not (the reason on
stderr), 2 on bad usage. An unsealed tail (entries after the last checkpoint,
a torn last line) is counted on the summary line and warned of on stderr;
with --strict it fails verification.
"""

import base64
import datetime
import hashlib
import json
import os
import posixpath
import re
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


MEMBERS = ["v", "seq", "time", "session", "type", "prev", "data", "payloads"]
TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?Z")
DIGEST = re.compile(r"[0-9a-f]{64}")


def no_duplicates(pairs):
    seen = set()
    for k, _ in pairs:
        if k in seen:
            raise Bad(f"an object has the member {k!r} twice (a duplicate member)")
        seen.add(k)
    return dict(pairs)


def no_constant(name):
    raise Bad(f"{name} is not JSON")


def is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


NAME_HEX = re.compile(r"(?:[0-9a-f]{2})+")


def recorded_name(p):
    """The bytes of a recorded name (docs/ledger.md, "Names"), or None for
    a string that records none: a valid name is itself; any other is NUL
    and the lowercase hex of bytes that are not UTF-8 and hold no NUL."""
    if not isinstance(p, str):
        return None
    if not p.startswith("\x00"):
        return None if "\x00" in p else p.encode("utf-8", "surrogatepass")
    if not NAME_HEX.fullmatch(p[1:]):
        return None
    b = bytes.fromhex(p[1:])
    if b"\x00" in b:
        return None
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return b
    return None  # valid UTF-8 is recorded as itself


def change_path(p):
    """A change's path as entries write it: a recorded name whose bytes
    are '/'-separated and clean; relative to the workspace root without
    leaving it, or absolute."""
    b = recorded_name(p)
    return (b is not None and b not in (b"", b".", b"..") and posixpath.normpath(b) == b
            and not b.startswith(b"//") and not b.startswith(b"../"))


def file_digest(x):
    return isinstance(x, str) and (x == "" or DIGEST.fullmatch(x) is not None)


def parse_entry(line):
    """One line of entries.jsonl, checked member by member (docs/ledger.md,
    "Entries"); v, seq and prev are checked against the entries before by
    the caller."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        raise Bad("the line is not UTF-8")
    try:
        e = json.loads(text, object_pairs_hook=no_duplicates, parse_constant=no_constant)
    except ValueError as err:
        raise Bad(f"not JSON: {err}")
    if not isinstance(e, dict):
        raise Bad("not a JSON object")
    for k in MEMBERS:
        if k not in e:
            raise Bad(f"no member {k!r}")
    for k in e:
        if k not in MEMBERS:
            raise Bad(f"a member {k!r} that entries do not have")
    for k in ("v", "seq"):
        if not is_int(e[k]):
            raise Bad(f"member {k!r} is {e[k]!r}, not an integer")
    for k in ("time", "session", "type", "prev"):
        if not isinstance(e[k], str):
            raise Bad(f"member {k!r} is {e[k]!r}, not a string")
    t = e["time"]
    if not TIME.fullmatch(t):
        raise Bad(f"time {t!r} is not an RFC 3339 UTC time")
    try:
        datetime.datetime.strptime(t[:19], "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        raise Bad(f"time {t!r} is not a real date and time")
    for k in ("session", "type"):
        if not e[k]:
            raise Bad(f"member {k!r} is empty")
    if not isinstance(e["data"], dict):
        raise Bad("member 'data' is not an object")
    if not isinstance(e["payloads"], dict):
        raise Bad("member 'payloads' is not an object")
    for name, digest in sorted(e["payloads"].items()):
        if not name:
            raise Bad("payloads: an empty payload name")
        if not isinstance(digest, str) or not DIGEST.fullmatch(digest):
            raise Bad(f"payloads: {name!r} is {digest!r}, not a digest (64 lowercase hex digits)")
    data = e["data"]
    if e["type"] == "tool.result" and "results" in data:
        results = data["results"]
        if results is not None and not isinstance(results, list):
            raise Bad("data.results is not an array")
        for i, res in enumerate(results or []):
            if not isinstance(res, dict):
                raise Bad(f"data.results[{i}] is not an object")
            changes = res.get("changes")
            if changes is not None and not isinstance(changes, list):
                raise Bad(f"data.results[{i}].changes is not an array")
            for j, ch in enumerate(changes or []):
                where = f"data.results[{i}].changes[{j}]"
                if not isinstance(ch, dict):
                    raise Bad(f"{where} is not an object")
                # A bulk change (with "files") of the workspace root is path ".".
                if not (change_path(ch.get("path")) or ("files" in ch and ch.get("path") == ".")):
                    raise Bad(f"{where}: path {ch.get('path')!r} is not a clean path inside the workspace")
                if ch.get("kind") not in ("add", "update", "delete"):
                    raise Bad(f"{where}: kind {ch.get('kind')!r} is not add, update or delete")
                for k in ("before", "after"):
                    if k in ch and not file_digest(ch[k]):
                        raise Bad(f"{where}: {k} {ch[k]!r} is not a digest")
                if "moved_to" in ch and not change_path(ch["moved_to"]):
                    raise Bad(f"{where}: moved_to path {ch['moved_to']!r} is not a clean path inside the workspace")
    if e["type"] == "context.compact":
        digest = data.get("digest")
        if not isinstance(digest, str) or not DIGEST.fullmatch(digest):
            raise Bad(f"data.digest {digest!r} is not a digest (64 lowercase hex digits)")
        if "replaced" in e["payloads"] and e["payloads"]["replaced"] != digest:
            raise Bad(f"payloads: 'replaced' is {e['payloads']['replaced']}, not data.digest {digest}")
    if e["type"] == "session.end" and "files_count" in data:
        n = data["files_count"]
        if not is_int(n) or n <= INLINE_FILES:
            raise Bad(f"data.files_count {n!r} is not a count of more than {INLINE_FILES} files")
        if "files" in data:
            raise Bad("data has both files and files_count")
        if "final_files" not in e["payloads"]:
            raise Bad("data.files_count without a final_files payload")
    elif e["type"] == "session.end" and data.get("files") is not None:
        check_files(data["files"], "data.files")
    return e


# A session.end lists at most this many files in data.files; past it,
# data.files_count, and the payload final_files alone lists them.
INLINE_FILES = 1000


def check_files(files, where):
    if not isinstance(files, dict):
        raise Bad(f"{where} is not an object")
    for p, digest in sorted(files.items()):
        if not change_path(p):
            raise Bad(f"{where}: path {p!r} is not a clean path inside the workspace")
        if not file_digest(digest):
            raise Bad(f"{where}: {p!r}'s digest {digest!r} is not a digest")


def verify(d, vkey_text):
    vkey = parse_vkey(vkey_text)
    data = read(os.path.join(d, "entries.jsonl"))
    if data is None:
        raise Bad("no entries.jsonl")
    lines = data.split(b"\n")
    # A last line without its newline is a torn write, not an entry: part
    # of the unsealed tail (a checkpoint that covers it finds it missing).
    torn = len(lines[-1])
    lines = lines[:-1]
    entries, leaves = [], []
    for i, line in enumerate(lines):
        try:
            e = parse_entry(line)
        except Bad as err:
            raise Bad(f"entry {i}: {err}")
        if e["v"] != 1 or e["seq"] != i:
            raise Bad(f"entry {i}: version {e['v']}, sequence {e['seq']}")
        if i > 0 and e["session"] != entries[0]["session"]:
            raise Bad(f"entry {i}: another session")
        if e["prev"] != (leaves[-1].hex() if i else ""):
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
            if name == "final_files" and e["type"] == "session.end" and "files_count" in e["data"]:
                files = json.loads(b, object_pairs_hook=no_duplicates)
                try:
                    check_files(files, "payload final_files")
                except Bad as err:
                    raise Bad(f"entry {i}: {err}")
                if len(files) != e["data"]["files_count"]:
                    raise Bad(f"entry {i}: payload final_files lists {len(files)} files, data.files_count says {e['data']['files_count']}")
            if name == "request_parts":
                parts = json.loads(b)
                if not isinstance(parts, list) or not all(isinstance(x, str) for x in parts):
                    raise Bad(f"entry {i}: payload request_parts is not a list of digests")
                for k, part in enumerate(parts):
                    if payload(part) is None:
                        raise Bad(f"entry {i}: request part {k} is missing or damaged")
                    count.add(part)
        verify_links(d, vkey_text, e, i, session)
    return len(entries), sealed, len(cps), len(count), last, torn


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
            n, sealed, _, _, last, torn = verify(child, vkey_text)
        except Bad as err:
            raise Bad(f"entry {i}: sub-agent ledger {rel}: {err}")
        if n != sealed or torn or sealed != link["size"]:
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
    args = sys.argv[1:]
    strict = "--strict" in args
    if strict:
        args.remove("--strict")
    if len(args) != 2:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    try:
        n, sealed, cps, payloads, _, torn = verify(args[0], args[1])
    except (Bad, ValueError, KeyError, TypeError) as err:
        print(f"does not verify: {err}", file=sys.stderr)
        return 1
    # The unsealed tail: counted always, however its entries are encoded;
    # the torn line is not an entry.
    summary = f"verified: {n} entries, {sealed} sealed by {cps} checkpoints, {n - sealed} unsealed"
    if torn:
        summary += f", a torn last line of {torn} bytes"
    print(f"{summary}, {payloads} payloads")
    if n > sealed or torn:
        parts = [f"{n - sealed} entr{'y' if n - sealed == 1 else 'ies'}"] if n > sealed else []
        if torn:
            parts.append(f"a torn last line of {torn} bytes")
        tail = f"unsealed tail: {' and '.join(parts)} after the last checkpoint (size {sealed}); no signature covers it"
        if strict:
            print(f"does not verify with --strict: {tail}", file=sys.stderr)
            return 1
        print(f"warning: {tail}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
