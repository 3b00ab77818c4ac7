# Shared by the scripts/demo-*.sh tours, which source it; not run alone.

# need BIN...: stop unless every binary is built.
need() {
	local b
	for b; do
		if [ ! -x "$b" ]; then
			echo "demo: $b is missing; run 'make demo' (or 'make build' first)" >&2
			exit 1
		fi
	done
}

# heading TEXT: a section title, bold on a terminal.
heading() { printf '\n\033[1m%s\033[0m\n' "$1"; }
[ -t 1 ] || heading() { printf '\n%s\n' "$1"; }

# wait_listening LOG: wait (10 s at most) for auditd's "listening on" line in
# LOG, then set addr to the address it names.
wait_listening() {
	for _ in $(seq 200); do
		grep -q '^auditd: listening on ' "$1" && break
		sleep 0.05
	done
	addr=$(sed -n 's/^auditd: listening on //p' "$1")
	[ -n "$addr" ] || { echo "demo: auditd did not start" >&2; sed 's/^/  /' "$1" >&2; exit 1; }
}
