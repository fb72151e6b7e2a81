#!/usr/bin/env bash
# check.sh LEDGER VKEY [TRUSS]: the independent verifier (verify.py, written
# from docs/ledger.md alone) must accept a ledger Truss wrote, accept each
# crash-like or differently escaped copy of it below, and reject every
# mutation of it below. Given the truss binary, `truss ledger verify` must
# agree with it on every copy, with and without --strict.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ledger=$1 vkey=$2 truss=${3:-}
python3 -c 'import cryptography' 2>/dev/null || { apt-get update -qq && apt-get install -y -qq python3-cryptography; }
python3 "$here/verify.py" "$ledger" "$vkey"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The cases' helpers: edit a file of the copy; append an entry after the
# last one, unsealed, with its seq, session and prev filled in.
cat >"$work/ledgeredit.py" <<'PY'
import hashlib, json

def edit(name, f):
    b = open(name, "rb").read()
    open(name, "wb").write(f(b))

def append(line, torn=False):
    """Appends line after the last entry: SEQ, SESSION and PREV in it
    become the next seq, the session and the last entry's leaf hash."""
    b = open("entries.jsonl", "rb").read()
    lines = b.split(b"\n")[:-1]
    prev = hashlib.sha256(b"\x00" + lines[-1]).hexdigest().encode()
    session = json.loads(lines[0])["session"].encode()
    line = line.replace(b"SEQ", str(len(lines)).encode()).replace(b"SESSION", session).replace(b"PREV", prev)
    open("entries.jsonl", "ab").write(line if torn else line + b"\n")

OK = b'{"v":1,"seq":SEQ,"time":"2026-12-02T14:44:32.513054Z","session":"SESSION","type":"x","prev":"PREV","data":{},"payloads":{}}'
D = b"ab" * 32
PY
fail=0
# run KIND NAME PYTHON [WANT]: PYTHON edits a copy of the ledger (in the
# current directory, with ledgeredit's names imported); KIND "reject" wants
# verify.py to reject the copy, "accept" to accept it with WANT in its
# report, and --strict to reject it exactly when it has an unsealed tail.
run() {
  local kind=$1 name=$2 code=$3 want=${4:-} ok=0 out gook=0 sok=0 gsok=0 sealed=0
  rm -rf "$work/l" && cp -r "$ledger" "$work/l"
  (cd "$work/l" && PYTHONPATH="$work" python3 -c "from ledgeredit import *
$code")
  out=$(python3 "$here/verify.py" "$work/l" "$vkey" 2>&1) && ok=1
  case $kind in
    reject) if [ $ok = 1 ]; then echo "NOT DETECTED: $name"; fail=1; else echo "detected: $name ($out)"; fi ;;
    accept) if [ $ok = 1 ] && [[ $out == *"$want"* ]]; then echo "accepted: $name ($out)"; else echo "NOT ACCEPTED: $name ($out)"; fail=1; fi ;;
  esac
  python3 "$here/verify.py" --strict "$work/l" "$vkey" >/dev/null 2>&1 && sok=1
  [[ $ok = 1 && $out == *", 0 unsealed,"* && $out != *"torn last line"* ]] && sealed=1
  if [ $sok != $sealed ]; then
    echo "WRONG WITH --strict: $name: verify.py --strict $([ $sok = 1 ] && echo accepts || echo rejects) ($out)"
    fail=1
  fi
  if [ -n "$truss" ]; then
    "$truss" ledger verify "$work/l" --key "$vkey" >"$work/go.out" 2>&1 && gook=1
    if [ $gook != $ok ]; then
      echo "DISAGREE: $name: verify.py $([ $ok = 1 ] && echo accepts || echo rejects), truss ledger verify $([ $gook = 1 ] && echo accepts || echo rejects): $(tail -n 3 "$work/go.out")"
      fail=1
    fi
    "$truss" ledger verify "$work/l" --key "$vkey" --strict >"$work/go.out" 2>&1 && gsok=1
    if [ $gsok != $sok ]; then
      echo "DISAGREE: $name: verify.py --strict $([ $sok = 1 ] && echo accepts || echo rejects), truss ledger verify --strict $([ $gsok = 1 ] && echo accepts || echo rejects): $(tail -n 3 "$work/go.out")"
      fail=1
    fi
  fi
}
reject() { run reject "$@"; }
accept() { run accept "$@"; }

accept "the ledger as written" 'pass' "sealed"
reject "a changed byte in an entry" \
  'edit("entries.jsonl", lambda b: b.replace(b"\"type\":\"tool.call\"", b"\"type\":\"tool.calL\"", 1))'
reject "a changed byte in a payload" '
def f(b):
    i = b.index(b"\n") + 1
    return b[:i] + bytes([b[i] ^ 1]) + b[i+1:]
edit("payloads.pack", f)'
reject "a changed byte in a checkpoint's signature" '
def f(b):
    i = b.rindex(b" ") + 8
    return b[:i] + bytes([b[i] ^ 1]) + b[i+1:]
edit("checkpoints.log", f)'
reject "an entry deleted" \
  'edit("entries.jsonl", lambda b: b"".join(l + b"\n" for k, l in enumerate(b.split(b"\n")[:-1]) if k != 3))'
reject "two entries swapped" '
def f(b):
    l = b.split(b"\n")[:-1]
    l[3], l[4] = l[4], l[3]
    return b"".join(x + b"\n" for x in l)
edit("entries.jsonl", f)'
reject "the entries truncated" \
  'edit("entries.jsonl", lambda b: b"".join(l + b"\n" for l in b.split(b"\n")[:5]))'
reject "the checkpoints removed" 'import os; os.remove("checkpoints.log")'
reject "a payload record removed" '
def f(b):
    i = b.index(b"\n")
    n = int(b[:i].split(b" ")[1])
    return b[i + 1 + n + 1:]
edit("payloads.pack", f)'
reject "the last sealed line torn (its newline cut)" 'edit("entries.jsonl", lambda b: b[:-1])'

# After the last checkpoint: a crash's torn line is the unsealed tail;
# unsealed entries are checked member by member as sealed ones are.
accept "an unsealed entry" 'append(OK)' "1 unsealed"
accept "an unsealed entry with escaped strings (\\ufffd, \\u0041, \\/)" \
  'append(OK.replace(b"\"data\":{}", b"\"data\":{\"t\":\"a\\ufffdb\\u0041\\/\\u00e9\"}"))' "1 unsealed"
accept "an unsealed entry with whitespace between tokens" \
  'append(OK.replace(b"\":", b"\" :\t").replace(b",\"", b" , \""))' "1 unsealed"
accept "a torn last line after the last checkpoint" 'append(OK, torn=True)' "torn last line"
accept "an unsealed entry and a torn line after it" 'append(OK); append(OK[:40], torn=True)' "1 unsealed, a torn last line of"
accept "an unsealed entry ending in CR LF" 'append(OK + b"\r")' "1 unsealed"
accept "an unsealed entry with escaped member names" \
  'append(OK.replace(b"\"v\"", b"\"\\u0076\"").replace(b"\"seq\"", b"\"se\\u0071\""))' "1 unsealed"
accept "three unsealed entries in three encodings" \
  'append(OK + b"\r"); append(OK.replace(b",", b" ,\t")); append(OK.replace(b"\"x\"", b"\"\\u0078\""))' "3 unsealed"
accept "the last checkpoint record removed: its entries unsealed" '
def f(b):
    i, starts = 0, []
    while i < len(b):
        nl = b.index(b"\n", i)
        starts.append(i)
        i = nl + 1 + int(b[i:nl].split(b" ")[1]) + 1
    return b[:starts[-1]]
edit("checkpoints.log", f)' "unsealed"
reject "an unsealed entry with the time \"yesterday\"" \
  'append(OK.replace(b"2026-12-02T14:44:32.513054Z", b"yesterday"))'
reject "an unsealed entry with a time not in UTC" \
  'append(OK.replace(b"32.513054Z", b"32.5+01:00"))'
reject "an unsealed entry with February 30" \
  'append(OK.replace(b"12-02T", b"02-30T"))'
reject "an unsealed entry naming a payload by the digest \"ABC\"" \
  'append(OK.replace(b"\"payloads\":{}", b"\"payloads\":{\"output\":\"ABC\"}"))'
reject "an unsealed entry naming a payload by an upper-case digest" \
  'append(OK.replace(b"\"payloads\":{}", b"\"payloads\":{\"output\":\"" + D.upper() + b"\"}"))'
reject "an unsealed tool.result with a change digest \"ABC\"" \
  'append(OK.replace(b"\"type\":\"x\"", b"\"type\":\"tool.result\"").replace(b"\"data\":{}", b"\"data\":{\"results\":[{\"changes\":[{\"after\":\"ABC\",\"kind\":\"add\",\"path\":\"a\"}]}]}"))'
reject "an unsealed tool.result with a change outside the workspace" \
  'append(OK.replace(b"\"type\":\"x\"", b"\"type\":\"tool.result\"").replace(b"\"data\":{}", b"\"data\":{\"results\":[{\"changes\":[{\"after\":\"" + D + b"\",\"kind\":\"add\",\"path\":\"../a\"}]}]}"))'
accept "an unsealed tool.result with a memory file's absolute path" \
  'append(OK.replace(b"\"type\":\"x\"", b"\"type\":\"tool.result\"").replace(b"\"data\":{}", b"\"data\":{\"results\":[{\"changes\":[{\"after\":\"" + D + b"\",\"before\":\"" + D + b"\",\"kind\":\"update\",\"path\":\"/memories/a\"}]}]}"))' "1 unsealed"
reject "an unsealed tool.result with a change path not clean" \
  'append(OK.replace(b"\"type\":\"x\"", b"\"type\":\"tool.result\"").replace(b"\"data\":{}", b"\"data\":{\"results\":[{\"changes\":[{\"after\":\"" + D + b"\",\"kind\":\"add\",\"path\":\"a//b\"}]}]}"))'
# Names that are not UTF-8 are recorded as NUL and the hex of their bytes
# (docs/ledger.md, "Names"); any other NUL form is no name.
accept "an unsealed tool.result with a name that is not UTF-8" \
  'append(OK.replace(b"\"type\":\"x\"", b"\"type\":\"tool.result\"").replace(b"\"data\":{}", b"\"data\":{\"results\":[{\"changes\":[{\"after\":\"" + D + b"\",\"kind\":\"add\",\"path\":\"\\u000072756eff2e7368\"},{\"after\":\"" + D + b"\",\"kind\":\"add\",\"path\":\"run\\ufffd.sh\"}]}]}"))' "1 unsealed"
reject "an unsealed tool.result with a valid name spelled in hex" \
  'append(OK.replace(b"\"type\":\"x\"", b"\"type\":\"tool.result\"").replace(b"\"data\":{}", b"\"data\":{\"results\":[{\"changes\":[{\"after\":\"" + D + b"\",\"kind\":\"add\",\"path\":\"\\u00006d61696e\"}]}]}"))'
reject "an unsealed tool.result whose name's bytes leave the workspace" \
  'append(OK.replace(b"\"type\":\"x\"", b"\"type\":\"tool.result\"").replace(b"\"data\":{}", b"\"data\":{\"results\":[{\"changes\":[{\"after\":\"" + D + b"\",\"kind\":\"add\",\"path\":\"\\u00002e2e2fff\"}]}]}"))'
reject "an unsealed tool.result with a NUL inside a name" \
  'append(OK.replace(b"\"type\":\"x\"", b"\"type\":\"tool.result\"").replace(b"\"data\":{}", b"\"data\":{\"results\":[{\"changes\":[{\"after\":\"" + D + b"\",\"kind\":\"add\",\"path\":\"a\\u0000b\"}]}]}"))'
accept "an unsealed session.end leaving files named run\\xff.sh and run\\uFFFD.sh" \
  'append(OK.replace(b"\"type\":\"x\"", b"\"type\":\"session.end\"").replace(b"\"data\":{}", b"\"data\":{\"files\":{\"\\u000072756eff2e7368\":\"" + D + b"\",\"\\u000072756efe2e7368\":\"\",\"run\\ufffd.sh\":\"" + D + b"\"}}"))' "1 unsealed"
reject "an unsealed session.end with a file named in upper-case hex" \
  'append(OK.replace(b"\"type\":\"x\"", b"\"type\":\"session.end\"").replace(b"\"data\":{}", b"\"data\":{\"files\":{\"\\u000072756EFF\":\"" + D + b"\"}}"))'
reject "an unsealed session.end with a file digest \"ABC\"" \
  'append(OK.replace(b"\"type\":\"x\"", b"\"type\":\"session.end\"").replace(b"\"data\":{}", b"\"data\":{\"files\":{\"a\":\"ABC\"}}"))'
accept "an unsealed context.compact naming its replaced items" \
  'append(OK.replace(b"\"type\":\"x\"", b"\"type\":\"context.compact\"").replace(b"\"data\":{}", b"\"data\":{\"digest\":\"" + D + b"\"}").replace(b"\"payloads\":{}", b"\"payloads\":{\"replaced\":\"" + D + b"\"}"))' "1 unsealed"
reject "an unsealed context.compact with the digest \"ABC\"" \
  'append(OK.replace(b"\"type\":\"x\"", b"\"type\":\"context.compact\"").replace(b"\"data\":{}", b"\"data\":{\"digest\":\"ABC\"}"))'
reject "an unsealed context.compact whose replaced payload is not its digest" \
  'append(OK.replace(b"\"type\":\"x\"", b"\"type\":\"context.compact\"").replace(b"\"data\":{}", b"\"data\":{\"digest\":\"" + D + b"\"}").replace(b"\"payloads\":{}", b"\"payloads\":{\"replaced\":\"" + b"cd" * 32 + b"\"}"))'
reject "an unsealed entry with seq a fraction" 'append(OK.replace(b"SEQ", b"SEQ.0"))'
reject "an unsealed entry with v a string" 'append(OK.replace(b"\"v\":1", b"\"v\":\"1\""))'
reject "an unsealed entry with data an array" 'append(OK.replace(b"\"data\":{}", b"\"data\":[]"))'
reject "an unsealed entry without payloads" 'append(OK.replace(b",\"payloads\":{}", b""))'
reject "an unsealed entry with a member entries do not have" 'append(OK.replace(b"\"payloads\":{}", b"\"payloads\":{},\"extra\":1"))'
reject "an unsealed entry with a duplicate member" 'append(OK.replace(b"\"data\":{}", b"\"data\":{\"a\":1,\"a\":2}"))'
reject "an unsealed entry with invalid UTF-8" 'append(OK.replace(b"\"data\":{}", b"\"data\":{\"t\":\"\xff\"}"))'
reject "an unsealed entry followed by bytes" 'append(OK + b" {}")'
reject "an unsealed entry with a NaN" 'append(OK.replace(b"\"data\":{}", b"\"data\":{\"n\":NaN}"))'
exit $fail
