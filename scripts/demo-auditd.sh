#!/usr/bin/env bash
# A tour of auditd: start it on a temporary database and socket, subscribe to
# its event stream, record the classify tour (scripts/demo-commands.txt) as
# audit events, show what the stream delivered, verify the chain, and stop
# auditd with SIGTERM. Needs only Go and the binaries `make build` makes; the
# helper internal/auditdemo talks to auditd through pkg/client.
set -euo pipefail
cd "$(dirname "$0")/.."

auditd=${AUDITD:-bin/auditd}
classify=${CLASSIFY:-bin/classify}
verify=${VERIFY_CHAIN:-bin/verify-chain}
commands=scripts/demo-commands.txt
for b in "$auditd" "$classify" "$verify"; do
	if [ ! -x "$b" ]; then
		echo "demo: $b is missing; run 'make demo' (or 'make build' first)" >&2
		exit 1
	fi
done

heading() { printf '\n\033[1m%s\033[0m\n' "$1"; }
[ -t 1 ] || heading() { printf '\n%s\n' "$1"; }

# A short directory under /tmp: a socket path must stay under ~100 bytes.
tmp=$(mktemp -d /tmp/gkdemo.XXXXXX)
pid='' subpid=''
cleanup() {
	[ -z "$subpid" ] || kill "$subpid" 2>/dev/null || true
	[ -z "$pid" ] || kill "$pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
go build -o "$tmp/auditdemo" ./internal/auditdemo
db=$tmp/audit.db sock=$tmp/s.sock log=$tmp/auditd.log

heading "== auditd --db $db --addr 127.0.0.1:0 --socket $sock &"
"$auditd" --db "$db" --addr 127.0.0.1:0 --socket "$sock" 2>"$log" &
pid=$!
for _ in $(seq 200); do
	grep -q '^auditd: listening on ' "$log" && break
	sleep 0.05
done
sed 's/^/  /' "$log"
addr=$(sed -n 's/^auditd: listening on //p' "$log")
[ -n "$addr" ] || { echo "demo: auditd did not start" >&2; exit 1; }
ls -l "$sock" | awk '{print "  socket mode " $1 "  " $NF}'

total=$(grep -cv -e '^#' -e '^$' "$commands")
heading "== subscribe to the stream in the background ({\"subscribe\":{\"since_seq\":0}})"
"$tmp/auditdemo" subscribe "$sock" "$total" >"$tmp/stream.txt" &
subpid=$!

heading "== record the classify tour: classify -o json, then POST /api/events for each command"
"$tmp/auditdemo" record "http://$addr" "$classify" "$commands"

heading "== what the subscriber received: every event, in seq order, each chained to the one before"
wait "$subpid"
subpid=''
cat "$tmp/stream.txt"

heading "== verify-chain --db $db (while auditd runs)"
"$verify" --db "$db" -o text

heading "== auditd export --db $db | verify-chain --jsonl -"
"$auditd" export --db "$db" | "$verify" --jsonl - -o text

heading "== kill -TERM auditd: finish requests, commit, close the database, remove the socket"
kill -TERM "$pid"
wait "$pid"
pid=''
tail -n 1 "$log" | sed 's/^/  /'
if [ -e "$sock" ]; then
	echo "demo: $sock is still there" >&2
	exit 1
fi
echo "  $sock is gone"
