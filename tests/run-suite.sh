#!/usr/bin/env bash
# The doctest suite on every core: `make test` and `make sanitize` run it through this script.
#
#   tests/run-suite.sh JOBS LOG_DIR PROGRAM [RUNNER...]
#
# The suite's test cases, in doctest's order, are cut into 8 x JOBS slices of consecutive cases
# (doctest's --first/--last); JOBS processes take the slices in turn, so a slow case holds up
# one core, not the run. The slices are small because slow cases sit together in doctest's order
# (the CUDA emulator's sgemm and FlashAttention cases): in 8 slices they shared one. Each case runs once, in a process of its own slice, and every case
# writes its temporary files under its own process id, so the slices do not meet. Each slice's
# doctest output is kept in LOG_DIR; a failing slice's output is printed, and the last line adds
# up the slices: "tests: N of M test cases passed, F failed (...)". Exit 0 when all passed.
set -uo pipefail
jobs=$1 logs=$2 program=$3
shift 3
runner="$*"  # the Makefile's RUNNER (make cross-test: qemu-aarch64 ...), or nothing

rm -rf "$logs" && mkdir -p "$logs" || exit 1
count=$($runner "$program" --count 2>&1 | grep -oE 'filters: [0-9]+' | grep -oE '[0-9]+')
if [ -z "$count" ] || [ "$count" = 0 ]; then
    echo "tests: $program lists no test cases" >&2
    exit 1
fi
slices=$((8 * jobs))
[ "$slices" -gt "$count" ] && slices=$count
per=$(((count + slices - 1) / slices))
slices=$(((count + per - 1) / per))

# Slice k: the cases k*per+1 ... (k+1)*per, its output and exit code in LOG_DIR.
export runner program logs per
seq 0 $((slices - 1)) | xargs -P "$jobs" -I{} bash -c '
    k={}
    $runner "$program" --first=$((k * per + 1)) --last=$(((k + 1) * per)) \
        >"$logs/slice-$k.log" 2>&1
    echo $? >"$logs/slice-$k.rc"'

# doctest's summary of a slice counts every case outside its range as passed: the failures are
# what a slice's summary tells, so the passed cases are all cases less the failed ones.
failed=0 status=0
for k in $(seq 0 $((slices - 1))); do
    rc=$(cat "$logs/slice-$k.rc" 2>/dev/null || echo missing)
    line=$(grep -E '^\[doctest\] test cases:' "$logs/slice-$k.log" | tail -1)
    f=$(echo "$line" | sed -nE 's/.*\| *([0-9]+) failed.*/\1/p')
    if [ "$rc" != 0 ] || [ -z "$f" ]; then
        status=1
        # A slice that died before its summary (a crash) fails all of its cases.
        [ -n "$f" ] && [ "$f" != 0 ] || f=$(( (k + 1) * per > count ? count - k * per : per ))
        echo "== slice $k (test cases $((k * per + 1)) to $(((k + 1) * per)), exit $rc):" \
            "$logs/slice-$k.log"
        cat "$logs/slice-$k.log"
    fi
    failed=$((failed + f))
done
echo "tests: $((count - failed)) of $count test cases passed, $failed failed" \
    "($slices slices on $jobs cores; logs in $logs/)"
exit $status
