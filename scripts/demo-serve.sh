#!/usr/bin/env bash
# A tour of gate serve, hosted agent conversations: gate serve runs a
# conversation against an OpenAI-compatible model and real tools, and
# 'gate conversations' talks to it. No model runs here, so the model is a
# scripted OpenAI-compatible server (internal/llmfake, built as the helper
# internal/servedemo) that replays canned answers: a bash call and an
# answer, then a bash call that runs 'sleep 30', which the user cancels.
# Nothing leaves the machine: everything listens on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."

gate=${GATE:-bin/gate}
. scripts/demo-lib.sh
need "$gate"

tmp=$(mktemp -d /tmp/gkserve.XXXXXX)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
# gate serve keeps its receipt key under XDG_STATE_HOME: the demo's own.
export XDG_STATE_HOME=$tmp/state

go build -o "$tmp/servedemo" ./internal/servedemo

# The working directory the conversation is fixed to.
mkdir "$tmp/proj"
printf 'buy milk\nwater the plants\ncall the bank\n' >"$tmp/proj/todo.txt"

# The model's answers, one per request, in order.
cat >"$tmp/model.jsonl" <<'EOF'
{"tool_calls":[{"name":"bash","args":{"command":"wc -l todo.txt"}}]}
{"text":"todo.txt has 3 lines: milk, plants, bank."}
{"tool_calls":[{"name":"bash","args":{"command":"sleep 30"}}]}
EOF

heading "== the model: a scripted OpenAI-compatible server on loopback (internal/servedemo)"
"$tmp/servedemo" "$tmp/model.jsonl" >"$tmp/llm.url" 2>"$tmp/llm.log" &
pids+=($!)
for _ in $(seq 200); do
	[ -s "$tmp/llm.url" ] && break
	sleep 0.05
done
llm=$(head -n 1 "$tmp/llm.url")
[ -n "$llm" ] || { echo "demo: the scripted model did not start" >&2; sed 's/^/  /' "$tmp/llm.log" >&2; exit 1; }
echo "  $llm/chat/completions answers from $(grep -c '^{' "$tmp/model.jsonl") canned steps"

heading "== gate serve --llm $llm --model demo-model --db serve.db --listen 127.0.0.1:0"
"$gate" serve --llm "$llm" --model demo-model --db "$tmp/serve.db" --listen 127.0.0.1:0 2>"$tmp/serve.log" &
pids+=($!)
for _ in $(seq 200); do
	grep -q '^gate serve: listening on ' "$tmp/serve.log" && break
	sleep 0.05
done
addr=$(sed -n 's/^gate serve: listening on \([^,]*\),.*/\1/p' "$tmp/serve.log")
[ -n "$addr" ] || { echo "demo: gate serve did not start" >&2; sed 's/^/  /' "$tmp/serve.log" >&2; exit 1; }
sed "s|$tmp/||; s/^/  /" "$tmp/serve.log"
export GOVKIT_SERVE=http://$addr
conv() { "$gate" conversations "$@"; }

heading "== gate conversations new --cwd proj   (a conversation, fixed to its working directory)"
id=$(conv new --cwd "$tmp/proj" -o json | sed -n 's/^{"id":"\([^"]*\)".*/\1/p')
conv list -o text | sed "s|$tmp/||; s/^/  /"

heading "== gate conversations send $id 'how long is my todo list?' --wait"
# --wait follows the turn: the model asks for bash, bash runs in proj (in
# the sandbox where Landlock works), the result goes back to the model,
# and its answer ends the turn.
conv send "$id" 'how long is my todo list?' --wait -o text | sed "s|$tmp/||; s/^/  /"

heading "== gate conversations send $id 'now wait for a while'   (the model runs sleep 30)"
conv send "$id" 'now wait for a while' -o text | sed "s|$tmp/||; s/^/  /"
for _ in $(seq 200); do
	conv show "$id" -o json | grep -q '^{"id":"[^"]*","state":"tool_executing"' && break
	sleep 0.05
done
echo "  the agent is busy: another message is refused (exit 1)"
if conv send "$id" 'are you there?' 2>"$tmp/busy.err"; then
	echo "demo: a message to a busy agent was accepted" >&2
	exit 1
fi
sed 's/^/    /' "$tmp/busy.err"

heading "== gate conversations cancel $id   (kills sleep's process group; the call gets a 'cancelled' result)"
start=$(date +%s%N)
conv cancel "$id" -o text | sed "s|$tmp/||; s/^/  /"
conv watch "$id" --until-idle -o json >/dev/null
echo "  idle again after $((($(date +%s%N) - start) / 1000000)) ms, not 30 s; the history stays whole for the model's API:"
conv show "$id" -o text | awk 'NR == 1 { print; next } /^#5 / { p = 1 } p' | sed "s|$tmp/||; s/^/  /"

heading "== stopping gate serve (SIGTERM) and the scripted model"
# Every state was written to serve.db before it took effect: a new gate
# serve on it would find this conversation idle, with all its messages.
for p in "${pids[@]}"; do kill "$p" && wait "$p" || true; done
pids=()
echo "  done; docs/serve.md has the API, the modes, sub-agents and context limits"
