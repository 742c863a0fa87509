#!/usr/bin/env bash
# The doctest suite on every core: `make test` and `make sanitize` run it through this script.
#
#   tests/run-suite.sh JOBS LOG_DIR PROGRAM [RUNNER...]
#   SUITE_ORDER=FILE   the slow cases to start first (default tests/slow-cases.txt)
#
# The suite's test cases, in doctest's order, are cut into slices: each slow case that ORDER
# names is a slice of its own, and the cases between them are cut into about 8 x JOBS slices
# of consecutive cases (doctest's --first/--last). JOBS processes take the slices in turn, the
# slow ones first, longest first, so the cores end together instead of one of them running a
# long case alone at the end; a case ORDER no longer names just runs in its slice. Each case
# runs once, in a process of its own slice, and every case writes its temporary files under its
# own process id, so the slices do not meet. Each slice's doctest output is kept in LOG_DIR,
# with each case's time (--duration=true); LOG_DIR/durations.txt lists them all, slowest first
# (what ORDER is made from: `head -24 build/test-logs/durations.txt`). A failing slice's output
# is printed, and the last line adds up the slices: "tests: N of M test cases passed, F failed
# (...)". Exit 0 when all passed.
set -uo pipefail
jobs=$1 logs=$2 program=$3
shift 3
runner="$*"  # the Makefile's RUNNER (make cross-test: qemu-aarch64 ...), or nothing
order=${SUITE_ORDER:-$(dirname "$0")/slow-cases.txt}

rm -rf "$logs" && mkdir -p "$logs" || exit 1
# Case k (from 1) is line k of the listing, between its two rules of '='.
$runner "$program" --list-test-cases >"$logs/cases.txt" 2>&1
names=$(sed -n '/^=====/,/^=====/p' "$logs/cases.txt" | sed '1d;$d')
count=$(printf '%s\n' "$names" | grep -c .)
if [ "$count" = 0 ] || ! grep -qE "passing the current filters: $count\$" "$logs/cases.txt"; then
    echo "tests: $program lists no test cases" >&2
    cat "$logs/cases.txt" >&2
    exit 1
fi

# The slow cases' numbers, in ORDER's order (lines "SECONDS<TAB>NAME"; # starts a comment).
declare -A slow=()
firsts=()
if [ -r "$order" ]; then
    while IFS=$'\t' read -r _ name; do
        [ -n "$name" ] || continue
        k=$(printf '%s\n' "$names" | grep -nxF -- "$name" | head -1 | cut -d: -f1)
        [ -n "$k" ] && [ -z "${slow[$k]:-}" ] && slow[$k]=1 && firsts+=("$k $k")
    done < <(grep -v '^#' "$order")
fi
# The others: runs of consecutive cases between the slow ones, at most `per` cases a slice.
rest=$((count - ${#slow[@]}))
per=$(((rest + 8 * jobs - 1) / (8 * jobs)))
[ "$per" -lt 1 ] && per=1
ranges=("${firsts[@]}")
a=0  # the first case of the run being gathered (0: none)
for k in $(seq 1 "$count"); do
    if [ -n "${slow[$k]:-}" ]; then
        [ "$a" = 0 ] || ranges+=("$a $((k - 1))")
        a=0
    elif [ "$a" = 0 ]; then
        a=$k
    elif [ $((k - a)) = "$per" ]; then
        ranges+=("$a $((k - 1))")
        a=$k
    fi
done
[ "$a" = 0 ] || ranges+=("$a $count")
slices=${#ranges[@]}
for s in $(seq 0 $((slices - 1))); do echo "$s ${ranges[$s]}"; done >"$logs/slices.txt"

# Slice s: the cases FIRST ... LAST of line s of slices.txt, its output and exit code in LOG_DIR.
export runner program logs
xargs -P "$jobs" -L 1 bash -c '
    $runner "$program" --duration=true --first=$1 --last=$2 >"$logs/slice-$0.log" 2>&1
    echo $? >"$logs/slice-$0.rc"' <"$logs/slices.txt"

# doctest's summary of a slice counts every case outside its range as passed: the failures are
# what a slice's summary tells, so the passed cases are all cases less the failed ones.
failed=0 status=0
while read -r s first last; do
    rc=$(cat "$logs/slice-$s.rc" 2>/dev/null || echo missing)
    line=$(grep -E '^\[doctest\] test cases:' "$logs/slice-$s.log" | tail -1)
    f=$(echo "$line" | sed -nE 's/.*\| *([0-9]+) failed.*/\1/p')
    if [ "$rc" != 0 ] || [ -z "$f" ]; then
        status=1
        # A slice that died before its summary (a crash) fails all of its cases.
        [ -n "$f" ] && [ "$f" != 0 ] || f=$((last - first + 1))
        echo "== slice $s (test cases $first to $last, exit $rc): $logs/slice-$s.log"
        cat "$logs/slice-$s.log"
    fi
    failed=$((failed + f))
done <"$logs/slices.txt"
# "0.123456 s: name" lines, as ORDER wants them: "0.123<TAB>name".
cat "$logs"/slice-*.log | sed -nE 's/^([0-9]+\.[0-9]+) s: (.*)$/\1\t\2/p' | sort -t$'\t' -k1,1 -rn \
    >"$logs/durations.txt"
echo "tests: $((count - failed)) of $count test cases passed, $failed failed" \
    "($slices slices on $jobs cores; logs in $logs/)"
exit $status
