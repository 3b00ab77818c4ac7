#!/usr/bin/env bash
# A scripted tour of classify: every command in scripts/demo-commands.txt with
# its verdict, reasons and rewrite, then scripting on exit codes, a -0 batch
# and a JSON Lines batch. Needs only bash and the classify binary (make demo
# builds it); it never runs the commands it classifies.
set -euo pipefail
cd "$(dirname "$0")/.."

classify=${CLASSIFY:-bin/classify}
commands=scripts/demo-commands.txt
if [ ! -x "$classify" ]; then
	echo "demo: $classify is missing; run 'make demo' (or 'make build' first)" >&2
	exit 1
fi

heading() { printf '\n\033[1m%s\033[0m\n' "$1"; }
# verdict names an exit status of classify.
verdict() {
	case $1 in
	0) echo "every command read-only and bounded" ;;
	1) echo "some command writes or is unknown" ;;
	2) echo "no writes, but some command never ends" ;;
	*) echo "an error" ;;
	esac
}
[ -t 1 ] || heading() { printf '\n%s\n' "$1"; }

# 1. One command at a time, in text output: the verdict, the command, then
#    the reasons, the risk of a write, and a rewrite for unbounded reads.
heading "== classify -o text -- COMMAND, for each line of $commands"
total=0 reads=0 writes=0 unbounded=0
while IFS= read -r line || [ -n "$line" ]; do
	case $line in
	'') continue ;;
	'#'*)
		heading "-- ${line#'# '}"
		continue
		;;
	esac
	status=0
	"$classify" -o text -- "$line" || status=$?
	printf '%11sexit %d\n' '' "$status"
	total=$((total + 1))
	case $status in
	0) reads=$((reads + 1)) ;;
	1) writes=$((writes + 1)) ;;
	2) unbounded=$((unbounded + 1)) ;;
	*)
		echo "demo: classify failed with exit status $status" >&2
		exit 1
		;;
	esac
done <"$commands"

# 2. Scripting: the exit code is the verdict, no output parsing needed.
heading "== Scripting on the exit code"
cat <<'SCRIPT'
    if classify -- "$cmd" >/dev/null; then run it
    else case $? in 1) ask a human ;; 2) bound it first ;; *) stop ;; esac
    fi
SCRIPT
for cmd in 'git status --short' 'tail -f /var/log/nginx/access.log' 'rm -rf ./build'; do
	if "$classify" -- "$cmd" >/dev/null; then
		echo "  run it:          $cmd"
	else
		case $? in
		1) echo "  ask a human:     $cmd" ;;
		2) echo "  bound it first:  $cmd" ;;
		*) echo "  stop (error):    $cmd" ;;
		esac
	fi
done

# 3. NUL-separated commands may span lines.
heading "== printf '%s\\0' ... | classify -0 -o text"
status=0
printf '%s\0' 'ls -la' 'for f in *.log; do
  wc -l "$f"
done' | "$classify" -0 -o text || status=$?
echo "  exit $status: $(verdict "$status")"

# 4. A batch as JSON Lines, streamed: one object per command, as produced.
heading "== grep -v '^#' $commands | classify -o json | head -n 3"
grep -v -e '^#' -e '^$' "$commands" | "$classify" -o json | head -n 3 || true
status=0
grep -v -e '^#' -e '^$' "$commands" | "$classify" -o json >/dev/null || status=$?
echo "  ... $total objects in all; exit $status: $(verdict "$status")"

# 5. As a coding agent's hook: one event in, the agent's own answer out.
heading "== classify hook --agent claude (a Claude Code PreToolUse event on stdin)"
for cmd in 'git status' 'rm -rf build' 'tail -f /var/log/syslog'; do
	event='{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"'"$cmd"'"}}'
	status=0
	answer=$(printf '%s' "$event" | "$classify" hook --agent claude 2>/dev/null) || status=$?
	printf '  %-26s exit %d  %s\n' "$cmd" "$status" "$answer"
done

heading "== Summary"
echo "$total commands: $reads read-only, $writes write or unknown, $unbounded unbounded"
