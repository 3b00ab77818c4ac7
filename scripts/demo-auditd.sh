#!/usr/bin/env bash
# A tour of auditd: start it on a temporary database and socket, subscribe to
# its event stream, record the classify tour (scripts/demo-commands.txt) as
# audit events, show what the stream delivered, verify the chain, and stop
# auditd with SIGTERM. auditd signs checkpoints of the log into a checkpoint
# log; a truncated copy of the database then passes the chain alone and is
# caught with the checkpoints (issue 19). Needs only Go and the binaries
# `make build` makes; the helper internal/auditdemo talks to auditd through
# pkg/client and tampers with the copy through SQLite's driver.
set -euo pipefail
cd "$(dirname "$0")/.."

auditd=${AUDITD:-bin/auditd}
classify=${CLASSIFY:-bin/classify}
verify=${VERIFY_CHAIN:-bin/verify-chain}
commands=scripts/demo-commands.txt
. scripts/demo-lib.sh
need "$auditd" "$classify" "$verify"


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
key=$tmp/checkpoint.key pub=$tmp/checkpoint.pub ckl=$tmp/checkpoints.log

heading "== auditd key create --out $key --name demo.govkit/audit > $pub"
"$auditd" key create --out "$key" --name demo.govkit/audit >"$pub"
echo "  verifier key (public; give it to whoever verifies): $(cat "$pub")"

heading "== auditd --db $db --addr 127.0.0.1:0 --socket $sock --checkpoint-key $key --checkpoint-log $ckl --checkpoint-every 8 &"
"$auditd" --db "$db" --addr 127.0.0.1:0 --socket "$sock" \
	--checkpoint-key "$key" --checkpoint-log "$ckl" --checkpoint-every 8 2>"$log" &
pid=$!
wait_listening "$log"
sed 's/^/  /' "$log"
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

heading "== a password on a command line never enters the chain: auditd redacts before sealing"
"$tmp/auditdemo" secret "http://$addr"

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

heading "== the checkpoint log, a copy outside the database: the last signed note (auditd signs one at shutdown)"
tail -n 6 "$ckl" | head -n 5 | sed 's/^/  /'

heading "== verify-chain --db $db --checkpoint-log $ckl --key $pub"
"$verify" --db "$db" --checkpoint-log "$ckl" --key "$pub" -o text

events=$("$verify" --db "$db" -o json | sed -n 's/.*"total_events":\([0-9]*\).*/\1/p')
keep=$((events - 3))
copy=$tmp/copy.db
heading "== an intruder with write access cuts the tail of a copy: the last 3 events, and the database's checkpoints of them"
cp "$db" "$copy"
echo "  DELETE FROM events WHERE seq > $keep"
"$tmp/auditdemo" sql "$copy" "DELETE FROM events WHERE seq > $keep"
echo "  DELETE FROM checkpoints WHERE size > $keep"
"$tmp/auditdemo" sql "$copy" "DELETE FROM checkpoints WHERE size > $keep"

heading "== verify-chain --db $copy: the chain alone cannot tell (exit 0)"
"$verify" --db "$copy" -o text

heading "== verify-chain --db $copy --checkpoint-log $ckl --key $pub: the signed checkpoint can (exit 1)"
code=0
"$verify" --db "$copy" --checkpoint-log "$ckl" --key "$pub" -o text || code=$?
echo "  exit $code"
if [ "$code" != 1 ]; then
	echo "demo: verify-chain did not catch the truncation" >&2
	exit 1
fi
