#!/usr/bin/env bash
# The doctest suite on every core: `make test` and `make sanitize` run it through this script.
#
#   tests/run-suite.sh JOBS LOG_DIR PROGRAM [RUNNER...]
#   SUITE_ORDER=FILE   the slow cases to start first (default tests/slow-cases.txt; none where
#                      FILE is missing)
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
# (...)", with ", U not run" before the brackets where a slice stopped before its last case (a
# case is counted failed only where it ran). Exit 0 when all passed.
# LOG_DIR is a new folder, an empty one, or one this script wrote (its file .run-suite-logs says
# so; a folder holding only the names below is taken as one from before that file): the script
# deletes there only the files it writes (cases.txt, slices.txt, durations.txt, slice-N.log,
# slice-N.rc), and refuses any other folder, or a file, with the files in it left alone. One run
# at a time writes there: a second one, while the first runs, is refused (exit 1).
set -uo pipefail
me=tests/run-suite.sh
if [ $# -lt 3 ]; then
    echo "usage: $me JOBS LOG_DIR PROGRAM [RUNNER...] (e.g. $me 2 build/test-logs" \
        "build/bin/tests; make test runs it)" >&2
    exit 2
fi
jobs=$1 logs=$2 program=$3
shift 3
runner="$*"  # the Makefile's RUNNER (make cross-test: qemu-aarch64 ...), or nothing
order=${SUITE_ORDER:-$(dirname "$0")/slow-cases.txt}
# JOBS goes to xargs -P and into bash arithmetic: digits only, no leading 0 (octal there).
case $jobs in
"" | 0* | *[!0-9]* | ?????*) jobs_ok=0 ;;
*) jobs_ok=1 ;;
esac
if [ "$jobs_ok" = 0 ]; then
    echo "$me: JOBS is ${jobs@Q}: it is the number of processes, a whole number from 1 to 9999" \
        "(usage: $me JOBS LOG_DIR PROGRAM [RUNNER...])" >&2
    exit 2
fi
if [ ! -f "$program" ]; then
    echo "$me: PROGRAM $program is not a file: the test program (build/bin/tests; make" \
        "build makes it) (usage: $me JOBS LOG_DIR PROGRAM [RUNNER...])" >&2
    exit 2
fi
# ORDER is read whole before the slices start: a FIFO or a device would block or never end.
if [ -e "$order" ] && { [ ! -f "$order" ] || [ ! -r "$order" ]; }; then
    echo "$me: SUITE_ORDER $order is not a readable file: name a file of lines" \
        "SECONDS<TAB>NAME (as tests/slow-cases.txt), or a missing one for none" >&2
    exit 2
fi

# LOG_DIR: made and marked here, or one this script marked (or that holds only its files).
marker=.run-suite-logs
own() {  # whether NAME is one of the files this script writes in LOG_DIR
    case $1 in
    cases.txt | slices.txt | durations.txt) return 0 ;;
    slice-*.log | slice-*.rc) local n=${1#slice-} && n=${n%.*} && [[ $n =~ ^[0-9]+$ ]] ;;
    *) return 1 ;;
    esac
}
if [ -z "$logs" ]; then
    echo "$me: LOG_DIR is empty; name a new folder (usage: $me JOBS LOG_DIR PROGRAM" \
        "[RUNNER...])" >&2
    exit 2
elif [ -e "$logs" ] || [ -L "$logs" ]; then
    if [ ! -d "$logs" ]; then
        echo "$me: LOG_DIR $logs is not a folder; name a new one (usage: $me JOBS LOG_DIR" \
            "PROGRAM [RUNNER...])" >&2
        exit 2
    fi
    if [ ! -e "$logs/$marker" ]; then
        for f in "$logs"/* "$logs"/.[!.]* "$logs"/..?*; do
            [ -e "$f" ] || [ -L "$f" ] || continue  # a pattern that matched nothing
            own "${f##*/}" && continue
            echo "$me: LOG_DIR $logs holds ${f##*/}, which this script did not write; name a" \
                "new or empty folder for the logs" >&2
            exit 2
        done
    fi
else
    mkdir -p -- "$logs" || exit 1
fi
# One run at a time in LOG_DIR: the marker is the lock (flock(1)), on fd 9 of this script, which
# the kernel releases however the script ends. Only the script holds it: the slices do not get
# fd 9 (a process a test leaves behind for a moment would hold it past the end), and the script
# starts no process it does not wait for (no <(...)).
exec 9>>"$logs/$marker" || exit 1
if ! flock -n 9; then
    echo "$me: another run is writing its logs in $logs; wait for it to end, or name another" \
        "LOG_DIR" >&2
    exit 1
fi
echo "tests/run-suite.sh writes its logs here and deletes only its own files" >"$logs/$marker" ||
    exit 1
for f in "$logs"/*; do
    if own "${f##*/}" && { [ -f "$f" ] || [ -L "$f" ]; }; then rm -f -- "$f" || exit 1; fi
done
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
    done <<<"$(grep -v '^#' "$order")"
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
# JOBS slices share JOBS cores: an OpenMP thread that spins while it waits for work (libgomp's
# default, OMP_WAIT_POLICY unset) takes a core from another slice, so here they sleep instead
# (what the programs compute does not change; a caller's own setting stays).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
export runner program logs
xargs -P "$jobs" -L 1 bash -c '
    $runner "$program" --duration=true --first=$1 --last=$2 >"$logs/slice-$0.log" 2>&1
    echo $? >"$logs/slice-$0.rc"' <"$logs/slices.txt" 9>&-

# A slice's cases: doctest's summary counts every case before its range as passed, and it is
# printed when the slice ends or crashes (its signal handler: the total is then the cases up to
# the one that crashed). So the failures are the summary's, the cases that ran are those up to
# that total, and the cases after it did not run. A slice killed before its summary (SIGKILL, a
# timeout) has only the lines it wrote: the cases with a time line ran (failed where an ERROR line
# came before their time line), the one after them was running when it died and failed, the rest
# count as not run (nothing says they ran: at most their output was lost with the process); a
# slice whose program did not start (exit 126 or 127, or no exit code) ran none.
failed=0 notrun=0 status=0
while read -r s first last; do
    k=$((last - first + 1))
    rc=$(cat "$logs/slice-$s.rc" 2>/dev/null || echo missing)
    read -r total f timed errors <<<"$(awk '
        /^\[doctest\] test cases:/ {
            total = $4; f = $0; sub(/ failed.*/, "", f); sub(/.*\| */, "", f) }
        /: (FATAL )?ERROR: / { error = 1 }
        /^[0-9]+\.[0-9]+ s: / { timed++; errors += error; error = 0 }
        END { print (total == "" ? "-" : total), (f == "" ? "-" : f), timed + 0, errors + 0 }' \
        "$logs/slice-$s.log" 2>/dev/null || echo "- - 0 0")"
    if [ "$rc" = missing ] || [ "$rc" = 126 ] || [ "$rc" = 127 ]; then
        ran=0 f=0
    elif [ "$f" != - ]; then
        ran=$(((total < last ? total : last) - first + 1))
        [ "$ran" -ge 0 ] || ran=0
        # A slice that failed though no case did (a sanitizer's report at exit) fails its cases.
        [ "$rc" = 0 ] || [ "$f" != 0 ] || f=$ran
    else
        ran=$((timed < k ? timed + 1 : k))
        f=$((errors + (timed < k ? 1 : 0)))
    fi
    if [ "$rc" != 0 ] || [ "$f" != 0 ] || [ "$ran" != "$k" ]; then
        status=1
        echo "== slice $s (test cases $first to $last, exit $rc; $ran ran, $f failed," \
            "$((k - ran)) not run): $logs/slice-$s.log"
        cat "$logs/slice-$s.log" 2>/dev/null
    fi
    failed=$((failed + f)) notrun=$((notrun + k - ran))
done <"$logs/slices.txt"
# "0.123456 s: name" lines, as ORDER wants them: "0.123<TAB>name".
cat "$logs"/slice-*.log | sed -nE 's/^([0-9]+\.[0-9]+) s: (.*)$/\1\t\2/p' | sort -t$'\t' -k1,1 -rn \
    >"$logs/durations.txt"
[ "$notrun" = 0 ] && notrun_text="" || notrun_text=", $notrun not run"
echo "tests: $((count - failed - notrun)) of $count test cases passed, $failed failed$notrun_text" \
    "($slices slices on $jobs cores; logs in $logs/)"
exit $status
