#!/usr/bin/env bash
# check.sh LEDGER VKEY: the independent verifier (verify.py, written from
# docs/ledger.md alone) must accept a ledger Truss wrote and reject every
# mutation of it below.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ledger=$1 vkey=$2
python3 -c 'import cryptography' 2>/dev/null || { apt-get update -qq && apt-get install -y -qq python3-cryptography; }
python3 "$here/verify.py" "$ledger" "$vkey"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
mutate() { # NAME PYTHON: PYTHON edits the copy in the current directory
  rm -rf "$work/l" && cp -r "$ledger" "$work/l"
  (cd "$work/l" && python3 -c "$2")
  if out=$(python3 "$here/verify.py" "$work/l" "$vkey" 2>&1); then
    echo "NOT DETECTED: $1"; fail=1
  else
    echo "detected: $1 ($out)"
  fi
}
edit='
import sys
def edit(name, f):
    b = open(name, "rb").read()
    open(name, "wb").write(f(b))
'
mutate "a changed byte in an entry" "$edit
edit('entries.jsonl', lambda b: b.replace(b'\"type\":\"tool.call\"', b'\"type\":\"tool.calL\"', 1))"
mutate "a changed byte in a payload" "$edit
def f(b):
    i = b.index(b'\n') + 1
    return b[:i] + bytes([b[i] ^ 1]) + b[i+1:]
edit('payloads.pack', f)"
mutate "a changed byte in a checkpoint's signature" "$edit
def f(b):
    i = b.rindex(b' ') + 8
    return b[:i] + bytes([b[i] ^ 1]) + b[i+1:]
edit('checkpoints.log', f)"
mutate "an entry deleted" "$edit
edit('entries.jsonl', lambda b: b''.join(l + b'\n' for k, l in enumerate(b.split(b'\n')[:-1]) if k != 3))"
mutate "two entries swapped" "$edit
def f(b):
    l = b.split(b'\n')[:-1]
    l[3], l[4] = l[4], l[3]
    return b''.join(x + b'\n' for x in l)
edit('entries.jsonl', f)"
mutate "the entries truncated" "$edit
edit('entries.jsonl', lambda b: b''.join(l + b'\n' for l in b.split(b'\n')[:5]))"
mutate "the checkpoints removed" "import os; os.remove('checkpoints.log')"
mutate "a payload record removed" "$edit
def f(b):
    i = b.index(b'\n')
    n = int(b[:i].split(b' ')[1])
    return b[i + 1 + n + 1:]
edit('payloads.pack', f)"
exit $fail
