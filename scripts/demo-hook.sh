#!/usr/bin/env bash
# A tour of gate hook and gate mcp. A Claude Code session, one hook process
# per event as Claude runs them: a read, an edit, a stop the gate refuses (the
# edit was not checked), a read back, a stop allowed. Then gate mcp in front
# of the real filesystem MCP server (when node and npm are here): a write
# refused before its directory was listed, then allowed.
set -euo pipefail
cd "$(dirname "$0")/.."

gate=${GATE:-bin/gate}
. scripts/demo-lib.sh
need "$gate"

tmp=$(mktemp -d /tmp/gkhook.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
chmod 700 "$tmp"
mkdir -p "$tmp/repo"
printf 'package app\n\nconst Version = "1.0"\n' >"$tmp/repo/app.go"
export XDG_STATE_HOME=$tmp/state

hookev() { # EVENT-NAME TOOL-JSON... : one Claude Code hook event through gate hook
	local ev=$1 extra=$2
	printf '{"session_id":"demo","cwd":"%s","hook_event_name":"%s"%s}' "$tmp/repo" "$ev" "$extra" |
		"$gate" hook --agent claude --receipt-key "$tmp/key" >"$tmp/out" 2>/dev/null || true
	local answer
	answer=$(sed -e 's/"permissionDecisionReason":"\([^"]\{0,90\}\)[^"]*"/"permissionDecisionReason":"\1…"/' \
		-e 's/"reason":"\([^"]\{0,110\}\)[^"]*"/"reason":"\1…"/' "$tmp/out")
	printf '  %-12s %s\n' "$ev" "${answer:-(nothing to say: go on)}"
}
read_ev=',"tool_name":"Read","tool_input":{"file_path":"'$tmp/repo/app.go'"},"tool_use_id":"t1"'
read_post=$read_ev',"tool_response":{"type":"text","file":{"content":"package app\n"}}'
edit_ev=',"tool_name":"Edit","tool_input":{"file_path":"'$tmp/repo/app.go'","old_string":"1.0","new_string":"1.1"},"tool_use_id":"t2"'

heading "== gate hook --agent claude: one process per hook event, the session in a state file"
hookev SessionStart ',"source":"startup"'
hookev PreToolUse "$edit_ev"
hookev PreToolUse "$read_ev"
hookev PostToolUse "$read_post"
hookev PreToolUse "$edit_ev"
hookev PostToolUse "$edit_ev"',"tool_response":{}'
hookev Stop ',"stop_hook_active":false,"last_assistant_message":"Bumped the version to 1.1."'
hookev PreToolUse "${read_ev/t1/t3}"
hookev PostToolUse "${read_post/t1/t3}"
hookev Stop ',"stop_hook_active":false,"last_assistant_message":"Bumped the version to 1.1; app.go now says 1.1."'
echo "  state files: $(ls "$tmp/state/govkit/sessions" | grep -c '\.state$')"
hookev SessionEnd ',"reason":"exit"'
echo "  state files after SessionEnd: $(ls "$tmp/state/govkit/sessions" | grep -c '\.state$' || true)"

heading "== gate mcp -- npx @modelcontextprotocol/server-filesystem: a write refused, then allowed"
if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
	echo "  (skipped: node and npm are not installed; Debian: apt-get install nodejs npm)"
	exit 0
fi
srv=$tmp/npm
if ! npm install --silent --no-audit --no-fund --prefix "$srv" @modelcontextprotocol/server-filesystem@2026.8.31 >/dev/null 2>&1; then
	echo "  (skipped: the npm registry did not answer)"
	exit 0
fi
mkdir -p "$tmp/srv/notes"
{
	echo '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"demo","version":"1"}}}'
	echo '{"jsonrpc":"2.0","method":"notifications/initialized"}'
	echo '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_allowed_directories","arguments":{}}}'
	sleep 1
	echo '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"'$tmp/srv/notes/a.txt'","content":"hello"}}}'
	sleep 1
	echo '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"list_directory","arguments":{"path":"'$tmp/srv/notes'"}}}'
	sleep 1
	echo '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"'$tmp/srv/notes/a.txt'","content":"hello"}}}'
	sleep 3
} | "$gate" mcp --receipt-key "$tmp/key" --config examples/mcp/filesystem.yaml -- node "$srv/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js" "$tmp/srv" 2>/dev/null |
	awk '/"id":[345],/ { id = $0; sub(/.*"id":/, "", id); sub(/,.*/, "", id)
		err = ($0 ~ /"isError":true/) ? "refused" : "ran"
		code = ""; if (match($0, /(FSM_BLOCKED|STRICT_RESOLUTION)/)) code = substr($0, RSTART, RLENGTH)
		rc = ($0 ~ /govkit\/receipt/) ? "receipt in _meta" : ""
		printf "  call %s: %s %s %s\n", id, err, code, rc }'
