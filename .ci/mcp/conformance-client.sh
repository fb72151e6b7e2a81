#!/bin/sh
# The official MCP conformance suite's client adapter: the suite runs this
# with the scenario's server URL as the last argument and the scenario's
# name in MCP_CONFORMANCE_SCENARIO; Truss's MCP client (truss mcp list and
# truss mcp call, the same client a run uses) does what the scenario asks.
set -eu
for url; do :; done
case "$MCP_CONFORMANCE_SCENARIO" in
initialize) exec truss mcp list --mcp "conformance=$url" ;;
tools_call) exec truss mcp call --mcp "conformance=$url" conformance add_numbers '{"a":5,"b":3}' ;;
sse-retry) exec truss mcp call --mcp "conformance=$url" conformance test_reconnection '{}' ;;
*)
	echo "conformance-client: scenario $MCP_CONFORMANCE_SCENARIO is not supported by Truss's client" >&2
	exit 1
	;;
esac
