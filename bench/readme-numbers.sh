#!/usr/bin/env bash
# The README's CPU numbers, from a run of `make bench`, never typed by hand.
#
#   bench/readme-numbers.sh                  run `make bench`, print the README lines
#   bench/readme-numbers.sh --update         ... put them between the README's bench markers and
#                                            keep the run in bench/last-run.txt
#   bench/readme-numbers.sh FILE [--update]  use a saved run (build/bench.txt) instead
#
# The lines name the date, the CPU (lscpu's model name), the cores and the load average when the
# run started and ended, so a reader can tell a busy shared machine from an idle one. A test
# checks that the README's lines are this script's output for bench/last-run.txt.
# FILE is taken from the folder the script is called from; the README, bench/last-run.txt and
# `make bench` are those of the repository the script is in. A run that lacks a layer at a size,
# a number, or a line the README's lines name is refused (one line naming FILE and what is
# missing, exit 1), the README untouched: the lines never hold a number the run did not give.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
# shellcheck source=bench/readme-block.sh
. "$here/readme-block.sh"

readme_script_args "$0" runs "$@"
# FILE as the caller named it, from the caller's folder: the messages name the path tried.
case $input in "" | /*) ;; *) input=$PWD/$input ;; esac

# A README number comes from a run on an otherwise idle machine: the load average before the run
# at most 1.0 (one busy core's worth), or --update refuses it.
MAX_LOAD=1.0
if [ -z "$input" ]; then
    load=$(cut -d' ' -f1 /proc/loadavg)
    if [ "$update" = 1 ] && awk -v l="$load" -v m="$MAX_LOAD" 'BEGIN { exit !(l > m) }'; then
        echo "readme-numbers.sh: the load average is $load (above $MAX_LOAD): other jobs share" \
            "the cores; wait for an idle machine before writing the README's numbers" >&2
        exit 1
    fi
    mkdir -p "$root/build"
    input=$root/build/bench.txt
    {
        echo "# date: $(date +%Y-%m-%d)"
        # lscpu's model name; where it has none, /proc/cpuinfo's, or at least the architecture.
        cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)
        [ -n "$cpu" ] || cpu=$(sed -n 's/^model name\s*: *//p' /proc/cpuinfo | head -1)
        echo "# cpu: ${cpu:-$(uname -m)}"
        echo "# cores: $(nproc)"
        echo "# load before: $(cut -d' ' -f1 /proc/loadavg)"
    } >"$input.tmp.$$"
    make --no-print-directory -C "$root" bench | tee -a "$input.tmp.$$"
    echo "# load after: $(cut -d' ' -f1 /proc/loadavg)" >>"$input.tmp.$$"
    mv "$input.tmp.$$" "$input"
fi
readme_input_check readme-numbers.sh "$input" "a file: a bench run, as build/bench.txt"

lines=$(README_NUMBERS_INPUT=$input awk "$readme_awk_visible"'
    function number(x) { return x ~ /^[0-9]+(\.[0-9]+)?$/ }
    function positive(x) { return number(x) && x + 0 > 0 }
    function whole(x) { return x ~ /^[1-9][0-9]*$/ }
    function ratio(x) { return x ~ /^[0-9]+(\.[0-9]+)?x$/ && x + 0 > 0 }
    # The first thing wrong with the run, with its line where it has one.
    function bad(what) { if (why == "") why = "line " NR ": " what }
    function missing(what) { if (why == "") why = what }
    /^# date: /        { date = substr($0, 9) }
    /^# cpu: /         { cpu = substr($0, 8) }
    /^# cores: /       { cores = substr($0, 10) }
    /^# load before: / { load0 = substr($0, 16) }
    /^# load after: /  { load1 = substr($0, 15) }
    /^batch = /        { shape = $0; sub(/;.*/, "", shape); gsub(/ = /, " ", shape)
                         if (match($0, /the median of [0-9]+ runs/))
                             layer_runs = substr($0, RSTART, RLENGTH) }
    /^sgemm, row-major/ { if (match($0, /the median of [0-9]+ runs/))
                              gemm_runs = substr($0, RSTART, RLENGTH) }
    # bench-layers: "   512 | naive    |     214.0 |     285.2     285.2 | ..."
    $2 == "|" && ($3 == "naive" || $3 == "fused" || $3 == "LSTM") && $4 == "|" {
        n = $1
        row = "the " $3 " row at n = " n
        if (!whole(n)) bad("a bench-layers row whose size is \"" n "\", not a whole number")
        else if ((n, $3) in ms) bad("a second " $3 " row at n = " n " (two runs in one file?)")
        else if (NF != 12 || $6 != "|" || $9 != "|")
            bad(row " has " NF " fields, not the 12 of \"n | layer | ms | peak MB pred. MB |" \
                " GFLOP/s FLOP ms ratio\"")
        else if (!positive($5)) bad(row " has \"" $5 "\" for its ms, not a positive number")
        else if (!positive($7)) bad(row " has \"" $7 "\" for its peak MB, not a positive number")
        else if (!ratio($NF)) bad(row " has \"" $NF "\" for its ratio, not a number and x")
        if (!(n in seen)) { seen[n] = 1; ns[++count] = n }
        ms[n, $3] = $5; mb[n, $3] = $7; flop_x[n, $3] = $NF
    }
    # the bench-gemm yardstick: "yardstick: OpenBLAS 0.3.21 ...; core Prescott (this CPU has best:
    # ...)", then, where it reran, "  Prescott is below this CPU: ... OPENBLAS_CORETYPE=SkylakeX"
    /^yardstick: / { core = $0; sub(/.*; core /, "", core); sub(/ .*/, "", core)
                     blas = $3 }
    # "multiply-add peak, 2 thread(s): 219.3 GFLOP/s (bench/peak.h: ..."
    /^multiply-add peak, / && peak == "" {
        peak = $0; sub(/^[^:]*: /, "", peak); sub(/ GFLOP\/s.*/, "", peak)
        if (!positive(peak)) bad("the multiply-add peak is \"" peak "\", not a positive number") }
    /is below this CPU: OpenBLAS ran again/ {
        rerun = $0; sub(/.*OPENBLAS_CORETYPE=/, "", rerun); sub(/ .*/, "", rerun)
        if (rerun == "") bad("the OpenBLAS rerun names no OPENBLAS_CORETYPE") }
    # bench-gemm: "  1024    A@B |  150.1 |  136.5 | 70 / 64 |  1.10x" (a rerun adds a column
    # before the share of the peak; no OpenBLAS: 6 fields, and no ratio)
    ($2 == "A@B" || $2 == "A@B^T") && $3 == "|" {
        row = "the sgemm row " $1 " " $2
        if (!whole($1)) bad("an sgemm row whose size is \"" $1 "\", not a whole number")
        else if (($1, $2) in gemm_seen) bad("a second sgemm row " $1 " " $2)
        else if (NF < 6 || $5 != "|") bad(row " has " NF " fields, not \"size op | GFLOP/s | ...\"")
        else if (!positive($4)) bad(row " has \"" $4 "\" for its GFLOP/s, not a positive number")
        else if (NF >= 8 && !ratio($NF))
            bad(row " has \"" $NF "\" for its ratio, not a number and x")
        gemm_seen[$1, $2] = 1
        ratio_x = $NF; sub(/x$/, "", ratio_x)
        gemm = gemm (gemm == "" ? "" : ", ") $1 "³ " $2 " " $4 " GFLOP/s"
        gemm = gemm (NF >= 8 ? " (" ratio_x "x)" : "")
    }
    # The table of the peers of bench-gemm ends with "geometric mean of ours / best peer: 0.91x;
    # the best peer: oneDNN in 13 of 16 cells, BLIS in 3"
    /^geometric mean of ours \/ best peer: / {
        peers = $0; sub(/^geometric mean of ours \/ best peer: /, "", peers)
        if (peers !~ /^[0-9]+(\.[0-9]+)?x; the best peer: [^ ]+ in [0-9]+ of [0-9]+ cells/)
            bad("the geometric mean line of the peers is \"" $0 "\", not \"geometric mean of ours" \
                " / best peer: Rx; the best peer: NAME in N of M cells...\"") }
    # bench-translate: "chapter 7 training step: ours X ms, PyTorch Y ms (R.RRx)"
    /^chapter 7 training step: / { step = $0; sub(/^chapter 7 training step: /, "", step)
        if (step !~ /^ours [0-9]+(\.[0-9]+)? ms/)
            bad("the chapter 7 training step has no \"ours N ms\"") }
    /libopenblas.so.0 not found/ { no_blas = 1 }
    END {
        # Every number the lines give comes from the run: refuse it when one is not there.
        if (count == 0)
            missing("no bench-layers table (rows \"n | naive | ms | ...\", make bench-layers)")
        split("naive fused LSTM", layer, " ")
        for (i = 1; i <= count; i++)
            for (k = 1; k <= 3; k++)
                if (!((ns[i], layer[k]) in ms))
                    missing("no " layer[k] " row at n = " ns[i] " in the bench-layers table")
        if (shape == "") missing("no \"batch = ...\" line above the bench-layers table")
        if (date !~ /^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]$/)
            missing("no \"# date: YYYY-MM-DD\" line")
        if (cpu == "") missing("no \"# cpu: NAME\" line")
        if (!whole(cores)) missing("no \"# cores: N\" line with a whole number")
        if (!number(load0)) missing("no \"# load before: N\" line with a number")
        if (!number(load1)) missing("no \"# load after: N\" line with a number")
        if (gemm != "" && !no_blas && (blas == "" || core == ""))
            missing("an sgemm table without the \"yardstick: OpenBLAS ...; core NAME\" line")
        if (why != "") {
            printf "readme-numbers.sh: %s: %s; run the benchmarks again (the script" \
                   " without FILE runs make bench)\n",
                   visible(ENVIRON["README_NUMBERS_INPUT"]), visible(why) > "/dev/stderr"
            exit 1
        }
        printf "- `make bench` on %s (%s cores), %s, load average %s before and %s after:", cpu,
               cores, date, load0, load1
        printf " chapter 6'\''s layers (%s, forward + backward%s; ms, in brackets the step'\''s" \
               " time over the time its FLOPs take at the sgemm rate measured around it; peak MB" \
               " of 10^6 bytes):", shape, layer_runs == "" ? "" : ", " layer_runs
        for (i = 1; i <= count; i++) {
            n = ns[i]
            printf "%s n = %s: naive %.0f ms (%s) / %.0f MB, fused %.0f ms (%s) / %.0f MB," \
                   " LSTM %.0f ms (%s) / %.0f MB", (i == 1 ? "" : ";"), n, ms[n, "naive"],
                   flop_x[n, "naive"], mb[n, "naive"], ms[n, "fused"], flop_x[n, "fused"],
                   mb[n, "fused"], ms[n, "LSTM"], flop_x[n, "LSTM"], mb[n, "LSTM"]
        }
        n = ns[count]
        printf ". At n = %s the fused layer holds %.1fx less memory than the naive one and takes" \
               " %.2fx its time.", n, mb[n, "naive"] / mb[n, "fused"],
               ms[n, "fused"] / ms[n, "naive"]
        if (gemm_runs != "") gemm_runs = " (" gemm_runs ")"
        if (gemm != "" && no_blas) printf " sgemm%s: %s (OpenBLAS not installed).", gemm_runs, gemm
        else if (gemm != "" && rerun != "")
            printf " sgemm%s against OpenBLAS %s, core %s (it picked %s, below this CPU): %s.",
                   gemm_runs, blas, rerun, core, gemm
        else if (gemm != "")
            printf " sgemm%s against OpenBLAS %s, core %s: %s.", gemm_runs, blas, core, gemm
        if (gemm != "" && peak != "")
            printf " The cores'\'' multiply-add peak (bench/peak.h, registers alone): %s" \
                   " GFLOP/s.", peak
        if (peers != "")
            printf " sgemm, ours / the fastest of oneDNN, BLIS, OpenBLAS and Eigen where" \
                   " installed (bench-gemm'\''s second table: each size, layout and thread" \
                   " count), geometric mean %s.", peers
        if (step != "") printf " Chapter 7'\''s training step, one thread: %s.", step
        # Only the load before the run tells of other jobs: the load after counts the benchmark
        # own threads (2 on 2 cores).
        if (load0 + 0 > 1.0)
            printf " Other jobs shared the cores before this run (load average above 1.0):" \
                   " its times are slower and noisier than the machine'\''s own%s.",
                   no_blas || gemm == "" ? "" \
                                         : ", and the two sgemms, timed in turn, are not comparable"
        printf "\n"
    }' "$input" | fold -s -w 98 | sed -e 's/ *$//' -e '2,$s/^/  /')

if [ "$update" = 1 ]; then
    load=$(sed -n 's/^# load before: //p' "$input" | head -1)
    if awk -v l="$load" -v m="$MAX_LOAD" 'BEGIN { exit !(l > m) }'; then
        echo "readme-numbers.sh: $input was run at load average $load before it" \
            "(above $MAX_LOAD): the README's numbers come from an idle machine; run again there" >&2
        exit 1
    fi
    # The run is kept beside the README's lines it gave: both change, or neither.
    kept=$root/bench/last-run.txt
    if [ "$input" -ef "$kept" ]; then
        readme_block_replace readme-numbers.sh "$root/README.md" bench "$lines" || exit 1
    else
        cp "$input" "$kept.tmp.$$"
        readme_block_replace readme-numbers.sh "$root/README.md" bench "$lines" ||
            { rm -f "$kept.tmp.$$"; exit 1; }
        mv "$kept.tmp.$$" "$kept"
    fi
fi
printf '%s\n' "$lines"
