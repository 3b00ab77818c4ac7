#!/usr/bin/env bash
# A tour of govexplain over policies.example.yaml: hypothetical requests,
# their explanations and exit codes, then lint and the example test cases.
set -euo pipefail
cd "$(dirname "$0")/.."

govexplain=${GOVEXPLAIN:-bin/govexplain}
policies=policies.example.yaml
heading() { printf '\n\033[1m%s\033[0m\n' "$1"; }

ask() {
	local title=$1
	shift
	heading "== $title"
	echo "\$ govexplain --policy $policies $*"
	local status=0
	"$govexplain" --policy "$policies" -o text "$@" || status=$?
	echo "  (exit $status: $(case $status in 0) echo allowed ;; 1) echo denied ;; 2) echo requires approval ;; *) echo error ;; esac))"
}

ask "Read a production database" --resource database:prod-db --tags production --action read
ask "Write to it on a Saturday" --resource database:prod-db --tags production --action write --at 2026-03-07T15:00:00Z
ask "Write as a DBA during New York business hours (change freeze)" --resource database:prod-db --tags production --action write --role dba --at 2026-03-10T15:00:00Z
ask "After execution: the write touched 1500 rows" --resource database:prod-db --tags production --action write --rows 1500 --at 2026-03-07T15:00:00Z
ask "A resource no policy covers" --resource queue:jobs --action write

heading "== govexplain lint --policy $policies"
"$govexplain" lint --policy "$policies" -o text

heading "== govexplain test --policy $policies examples/policy-tests.yaml"
"$govexplain" test --policy "$policies" -o text examples/policy-tests.yaml | tail -n 12
