#!/usr/bin/env bash
# A tour of gate session, the session reducer: a recorded agent transcript
# (examples/session/homepage.jsonl: a write before discovery, a write on the
# host while the user means its container, an answer before verification)
# is run, each event with the effects it got; the recorded log replays
# identically; and every receipt verifies offline under the session's key.
set -euo pipefail
cd "$(dirname "$0")/.."

gate=${GATE:-bin/gate}
. scripts/demo-lib.sh
need "$gate"

tmp=$(mktemp -d /tmp/gksession.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
key=$tmp/receipt.key

heading "== gate session --record run.jsonl < examples/session/homepage.jsonl"
"$gate" session --receipt-key "$key" --record "$tmp/run.jsonl" <examples/session/homepage.jsonl >"$tmp/effects.jsonl"
# One line per event, then the effects a runtime acts on (metrics, receipts
# and state changes are in run.jsonl too).
awk '
	/"seq":/ {
		if ($0 ~ /"type":"(allow|block|allow_final|block_final|replace_answer|reject)"/) {
			t = $0; sub(/^\{"type":"/, "", t); sub(/".*/, "", t)
			id = ""; if (match($0, /"call_id":"[^"]*"/)) id = " " substr($0, RSTART + 11, RLENGTH - 12)
			code = ""; if (match($0, /"code":"[^"]*"/)) code = " " substr($0, RSTART + 8, RLENGTH - 9)
			print "    <- " t id code
		}
		next
	}
	{ e = $0; for (f = 1; f <= 4; f++) sub(/"(at|seed|server_connection_id|workspace_realpath)":"[^"]*",/, "", e)
	  if (length(e) > 110) e = substr(e, 1, 107) "..."
	  print "  -> " e }
' "$tmp/run.jsonl"

heading "== gate session --replay run.jsonl   (the stamps are in the log: the same effects again)"
"$gate" session --receipt-key "$key" --replay "$tmp/run.jsonl" | sed 's/^/  /'

heading "== gate receipt verify   (every receipt the session minted, offline, under its key)"
grep '"type":"receipt"' "$tmp/effects.jsonl" >"$tmp/receipts.jsonl"
"$gate" receipt verify --key "$key" -o text "$tmp/receipts.jsonl" | sed "s|^$tmp/|  |"
