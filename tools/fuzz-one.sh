#!/usr/bin/env bash
# fuzz-one.sh TARGET FUZZTIME PKG: runs one fuzz target for FUZZTIME, as `make fuzz` does
# for each. Go 1.26's fuzz coordinator can fail a target with a bare "context deadline
# exceeded" at the very end of a -fuzztime window, when a worker is still mid-call as the
# deadline fires (golang/go#75804, fixed in Go 1.27): no input failed and nothing is
# written to testdata/fuzz. Such a run, and only such a run, is tried once more. A real
# finding ("Failing input written to ...", a panic, a t.Error) fails at once.
#
# Minimising is bounded (FUZZMINIMIZETIME, default 100 runs): Go's default is a minute per
# new input, and a target whose inputs are catalogs (FuzzParseFBC) found a new input in its
# first second and spent the rest of a 5-second window minimising it, out of view: 8 to 13
# runs where 40,000 fit. A failing input is still written, less minimised.
set -uo pipefail
target=$1 fuzztime=$2 pkg=$3
minimize=${FUZZMINIMIZETIME:-100x}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for attempt in 1 2; do
	go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" "$pkg" 2>&1 | tee "$log"
	status=${PIPESTATUS[0]}
	[ "$status" -eq 0 ] && exit 0
	if [ "$attempt" -eq 1 ] && grep -q 'context deadline exceeded' "$log" &&
		! grep -qE 'Failing input written|panic:|_test\.go:[0-9]+:' "$log"; then
		echo "fuzz-one.sh: $target ended with the Go 1.26 fuzz-coordinator deadline race (golang/go#75804), no failing input; running it once more"
		continue
	fi
	exit "$status"
done
