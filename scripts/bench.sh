#!/usr/bin/env bash
# Whole-process latency of classify for the coding-agent hook case: one
# process per command, start-up included (targets: p50 ≤ 10 ms, p99 ≤ 25 ms).
# Needs only Go; uses hyperfine for a second opinion when it is installed.
#
#   RUNS=500 scripts/bench.sh          # more runs
#   STRICT=1 scripts/bench.sh          # exit 1 when a target is missed
set -euo pipefail
cd "$(dirname "$0")/.."

classify=${CLASSIFY:-bin/classify}
runs=${RUNS:-200}
corpus=${CORPUS:-pkg/intent/testdata/commands.jsonl}
[ -f "$corpus" ] || corpus=scripts/demo-commands.txt

if [ ! -x "$classify" ]; then
	go build -trimpath -o "$classify" ./cmd/classify
fi

strict=()
[ -z "${STRICT:-}" ] || strict=(-strict)
go build -o bin/hookbench ./internal/hookbench
bin/hookbench -runs "$runs" -bin "$classify" "${strict[@]}" "$corpus"
# classify hook, one event per process, in every agent's dialect.
for agent in ${AGENTS:-claude codex gemini cursor cline copilot}; do
	bin/hookbench -runs "$runs" -bin "$classify" -agent "$agent" "${strict[@]}" "$corpus"
done

if command -v hyperfine >/dev/null 2>&1; then
	hyperfine -N --warmup 20 --runs "$runs" \
		"$classify -- 'git log --oneline -5'" \
		"$classify -- 'ls && rm -rf /'"
fi

# gate hook: one process per Claude Code event on a session whose state
# file holds 500 listed files (issue 17: p50 ≤ 10 ms, p99 ≤ 25 ms).
gate=${GATE:-bin/gate}
if [ ! -x "$gate" ]; then
	go build -trimpath -o "$gate" ./cmd/gate
fi
bin/hookbench -runs "$runs" -bin "$gate" -gate 500 "${strict[@]}"

# gate run: what gate adds to a command, whole-process, readonly mode with
# the sandbox on (target: ≤ 15 ms median added), then isolated and off.
go build -o bin/gatebench ./internal/gatebench
bin/gatebench -runs "$runs" -bin "$gate" "${strict[@]}"
bin/gatebench -runs "$runs" -bin "$gate" -- --sandbox isolated
bin/gatebench -runs "$runs" -bin "$gate" -- --sandbox off

# gate session: the JSON Lines round trip on one core (issue 16: ≥ 50k
# events/s), in process (read, decode, stamp, Transition, encode, write) and
# whole-process over real pipes with a recorded-looking agent session.
go test ./pkg/sessionloop -run '^$' -bench BenchmarkRoundTrip -cpu 1 -benchtime 20x
n=${SESSION_EVENTS:-200000}
tmp=$(mktemp -d)
{
	echo '{"type":"session_start","schema_version":1,"session_id":"bench","workspace_root":".","tools":[{"name":"list_hosts","kind":"resolve"},{"name":"read_file","kind":"read"},{"name":"search","kind":"search"},{"name":"restart","kind":"write"}],"config":{"read":{"max_reads":100000000,"max_total_lines":2000000000}}}'
	awk -v n="$n" 'BEGIN { for (i = 1; i < n; i += 2) {
		printf "{\"type\":\"tool_call\",\"call_id\":\"c%d\",\"name\":\"read_file\",\"args\":{\"path\":\"pkg/a%d.go\",\"start_line\":1,\"end_line\":40}}\n", i, i % 50
		printf "{\"type\":\"tool_result\",\"call_id\":\"c%d\",\"ok\":true,\"lines\":40,\"chars\":1200}\n", i } }'
} >"$tmp/events.jsonl"
one=()
if command -v taskset >/dev/null 2>&1; then one=(taskset -c 0); fi
start=$(date +%s.%N)
GOMAXPROCS=1 "${one[@]}" "$gate" session --receipt-key "$tmp/key" <"$tmp/events.jsonl" | cat >/dev/null
end=$(date +%s.%N)
awk -v n="$n" -v s="$start" -v e="$end" 'BEGIN { printf "gate session: %d events over stdio in %.2f s = %.0f events/s (target ≥ 50k, one core)\n", n, e - s, n / (e - s) }'
rm -rf "$tmp"

# auditd: durable ingest (synchronous=FULL) over HTTP at 1, 8 and 32
# concurrent clients, next to SQLite's single-row-commit rate on the same disk
# in the same run (targets at 32 clients: ≥ 1.8× that with one event per
# request, ≥ 6× with BATCH=32), then auditd's RSS while it ingests RSS_EVENTS
# events (target < 100 MiB). The databases go in a temporary directory under the working
# directory, so on the repository's disk; DIR=… puts them elsewhere.
#
#   CLIENTS=32 DURATION=10s RSS_EVENTS=0 scripts/bench.sh   # one point, no RSS run
#   BATCH=32 scripts/bench.sh        # each client posts 32 events per request (JSON Lines)
#   PG=1,3 scripts/bench.sh          # also 1 and 3 auditd instances on one PostgreSQL database
#                                    # (a throwaway cluster, fsync on; needs Debian's postgresql)
auditd=${AUDITD:-bin/auditd}
if [ ! -x "$auditd" ]; then
	go build -trimpath -o "$auditd" ./cmd/auditd
fi
go build -o bin/ingestbench ./internal/ingestbench
dir=()
[ -z "${DIR:-}" ] || dir=(-dir "$DIR")
pg=()
[ -z "${PG:-}" ] || pg=(-pg "$PG")
bin/ingestbench -bin "$auditd" -clients "${CLIENTS:-1,8,32}" -batch "${BATCH:-1}" -duration "${DURATION:-5s}" \
	-rss-events "${RSS_EVENTS:-1000000}" "${dir[@]}" "${pg[@]}" "${strict[@]}"

# verify-chain on a large log (DESIGN §10: ≥ 500k events/s from SQLite).
if [ -n "${VERIFY_EVENTS:-}" ] || [ -z "${SKIP_VERIFY:-}" ]; then
	n=${VERIFY_EVENTS:-500000}
	tmp=$(mktemp -d)
	go run ./internal/chaingen -db "$tmp/chain.db" -n "$n"
	[ -x bin/verify-chain ] || go build -o bin/verify-chain ./cmd/verify-chain
	start=$(date +%s.%N)
	bin/verify-chain --db "$tmp/chain.db" -o text
	end=$(date +%s.%N)
	awk -v n="$n" -v s="$start" -v e="$end" 'BEGIN { printf "verify-chain: %d events in %.2f s = %.0f events/s (target ≥ 500k)\n", n, e - s, n / (e - s) }'
	# Against its floor in one run (issue 20: ≤ 4× SHA-256 of the same
	# bytes on every core): end to end, the binary alternating with the
	# floor; then the store's scan alone (x-floor wall, cpu-x-floor CPU).
	go run ./internal/chaingen -db "$tmp/chain.db" -measure bin/verify-chain -rounds 3
	rm -rf "$tmp"
	go test ./pkg/store/sqlite -run '^$' -bench VerifyChainFloor -benchtime 5x
fi
