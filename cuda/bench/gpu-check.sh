#!/usr/bin/env bash
# make gpu-check: everything the GPU side promises, on a machine with a GPU, in one folder.
#   1. build (nvcc, the visible GPU's architecture; NVCC_WERROR= so that a host compiler that
#      warns where ours does not cannot stop the run)  -> build.log (gpu-bench's build too)
#      and the spill check: every cuda/*.cu and cuda/bench/*.cu compiled afresh with
#      -Xptxas -v (make cuda-ptxas-report, cuda/cuda.mk: ptxas reports nothing for an object
#      already built); every kernel that spills is listed, and one not in EXPLAINED_SPILLS
#      below fails the run                              -> ptxas's reports appended to build.log
#   2. the CUDA test cases on the device, with CUDA_TESTS_NEED_DEVICE=1: no device visible is a
#      failure with the runtime's reason, not a run of skipped cases; at least one case must
#      pass and none fail or be skipped                   -> cuda-tests.txt
#   3. speed targets: sgemm vs cuBLAS, fused vs naive attention, fused vs unfused LSTM gates;
#      every timed result checked against an independent reference (cuBLAS, a double
#      reference on the host). The step passes when gpu-bench exits 0 (no MISMATCH), printed
#      its target lines, and none of them reads NOT MET    -> gpu-bench.txt
#   4. the device cases again under compute-sanitizer, once per tool: memcheck (out-of-bounds
#      and misaligned accesses), initcheck (reads of device memory never written), synccheck
#      (barriers and warp operations), and racecheck (shared-memory hazards) on the cases of the
#      kernels that use shared memory only (sgemm, the reductions, FlashAttention), so that it
#      finishes well inside its limit                     -> appended to cuda-tests.txt
#      Each run passes when its exit code is 0, its own summary reads 0 errors (racecheck's
#      RACECHECK SUMMARY: 0 errors and 0 warnings, but for warnings named in
#      EXPLAINED_RACECHECK_WARNINGS), and the test run under it shows every case its filter
#      selects passed, at least one (a filter that matches nothing exits 0 too).
#      No compute-sanitizer fails the run, unless SKIP_SANITIZER=1: then the four tools are
#      listed as not run, and the verdict cannot be PASSED.
#   5. chapter 6 on cuda (6-cost-cuda --device cuda), n = 128 ... 16384, table and figure 3
#                                                        -> chapter6-cuda.txt, 6-cost-cuda.png
#      (cells that do not fit are skipped)
#   6. the PyTorch peer: PYTHON=/path/to/python, else the first of /usr/bin/python3 and
#      python3 whose torch sees CUDA                     -> torch-peer.txt
# The time plan (PLAN below): each step's own limit, at the default budget of 480 s (8 minutes),
# adding up to 470 s, 10 s left for the work between steps (the spill check, nvidia-smi, the
# verdicts). GPU_CHECK_SECONDS=S scales every limit by S/480, so that they always fit S; the script
# refuses to start when the plan's limits add up to more than its budget. A step that reaches its
# limit is cut and fails the run (the plan was too tight there, not the check passed), and none runs
# past the budget from the start: a step that would is cut to the time left, and one with under 15 s
# left is skipped.
# At most 8 files of results are written (nvidia-smi.txt and summary.txt too), besides the
# build. The verdict, the last line of summary.txt, names every check that failed and every
# one that did not run: PASSED (exit status 0) only when every check ran and passed; FAILED
# (1) when one failed, was cut or was skipped; INCOMPLETE (3) when every check that ran passed
# but some did not run (no compute-sanitizer with SKIP_SANITIZER=1, no python with CUDA torch
# unless PYTHON= names one). summary.txt also holds gpu-bench's target lines and every MISMATCH
# line (gpu-bench exits 1 on any).
# NVIDIA_TF32_OVERRIDE=0 for every step: no TF32 anywhere. Each step's time is printed, and the
# total at the end.
#
# On a machine without network: run `make gpu-bundle` where the Debian packages are, carry
# .gpu-deps/ along, and the build below uses it. GPU_CHECK_DIR=dir puts every output in dir instead
# of gpu-check/<time>, the build too (dir/build, unless the first argument names another build
# folder; without GPU_CHECK_DIR it is build/). The CPU side is built for AVX2 + FMA, the path the
# CPU tests cover, whatever the GPU machine's processor (its AVX-512 path is compile-tested only).
#
# The verdicts, each on its own input (the suite feeds them canned tool outputs:
# tests/test_cuda_emulator.cpp):
#   gpu-check.sh --check-tests FILE             a doctest report (what step 2 applies)
#   gpu-check.sh --check-sanitizer TOOL FILE    TOOL's run in FILE (step 4)
#   gpu-check.sh --check-spills REPORT...       ptxas -v reports (step 1)
#   gpu-check.sh --check-bench FILE             gpu-bench's output (step 3)
#   gpu-check.sh --plan                          the time plan, and whether it fits its budget
#   gpu-check.sh --verdict FAILED NOT_RUN       the final verdict; each a comma-separated list
set -u

# The time plan: "step seconds", in the order the steps run, at PLAN_BUDGET seconds in all.
PLAN_BUDGET=480
PLAN_RESERVE=10  # the work between steps
PLAN=(
    "build 90"             # nvcc (every cuda/*.cu, twice: the objects and ptxas's reports) and
                           # the CPU side of cuda-tests and 6-cost-cuda, on all cores
    "cuda-tests 30"
    "gpu-bench-build 30"   # one nvcc compile, linked with the kernels above and cuBLAS
    "gpu-bench 40"
    "memcheck 20"
    "initcheck 20"
    "synccheck 20"
    "racecheck 155"        # the slowest tool, on the cases of the kernels with shared memory
    "chapter6-cuda 35"
    "torch-peer 30"
)

# Spills that are named and explained: "ERE on the demangled kernel name -- why". Any other
# spill fails the run.
why_v1="FlashAttention version 1 (one thread per row) keeps whole rows in registers; its ptxas"
why_v1+=" report spills these (cuda/attention_flash.cu); version 2 must not spill"
EXPLAINED_SPILLS=(
    "flash_v1::forward_kernel<128>\\( -- $why_v1"
    "flash_v1::backward_dq_kernel<(64|128)>\\( -- $why_v1"
    "flash_v1::backward_dkdv_kernel<(64|128)>\\( -- $why_v1"
)
# racecheck warnings that are named and explained, the same way, on the hazard's "Warning:"
# line. None: every warning fails the run.
EXPLAINED_RACECHECK_WARNINGS=()

# The explanation of LINE ($2) in the list named $1 ("pattern -- why" entries), or nothing.
explanation() {
    local -n entries=$1
    local entry
    for entry in "${entries[@]}"; do
        if grep -q -E -- "${entry%% -- *}" <<<"$2"; then
            echo "${entry#* -- }"
            return 0
        fi
    done
    return 1
}

# The counts of the last doctest summary line in $1 (a file, or - for stdin):
# "TOTAL PASSED FAILED SKIPPED", or nothing.
doctest_counts() {
    local n=' *([0-9]+) *'
    grep -a '^\[doctest\] test cases:' "$1" 2>/dev/null | tail -1 |
        sed -nE "s/.*test cases:$n\\|${n}passed *\\|${n}failed *\\|${n}skipped.*/\\1 \\2 \\3 \\4/p"
}

# passed > 0, failed = 0, skipped = 0 in the last doctest summary line of $1.
check_tests() {
    local total passed failed skipped
    read -r total passed failed skipped <<<"$(doctest_counts "$1")"
    if [ -z "${total:-}" ]; then
        echo "FAILED: no doctest summary in $1 (the program did not finish)"
        return 1
    fi
    if [ "$passed" -gt 0 ] && [ "$failed" -eq 0 ] && [ "$skipped" -eq 0 ]; then
        echo "ok: $passed passed, 0 failed, 0 skipped"
        return 0
    fi
    echo "FAILED: $passed passed, $failed failed, $skipped skipped (at least one must pass," \
         "none fail, none be skipped)"
    return 1
}

# What the run of compute-sanitizer tool $1 appended to $2: from its "==== compute-sanitizer
# --tool $1" line to the next such line.
sanitizer_section() {
    awk -v head="==== compute-sanitizer --tool $1" \
        '$0 == head { on = 1; next } /^==== compute-sanitizer --tool / { on = 0 } on' "$2"
}

# The verdict on tool $1's run in $2: its summary reads 0 errors (racecheck: 0 errors, and
# 0 warnings but for explained ones), and every case the test filter selects passed, at least
# one.
check_sanitizer() {
    local tool=$1 section total passed failed skipped line errors warnings hazard why
    local explained=""
    section=$(sanitizer_section "$tool" "$2")
    if [ -z "$section" ]; then
        echo "FAILED: $tool: no run of it in $2"
        return 1
    fi
    read -r total passed failed skipped <<<"$(doctest_counts - <<<"$section")"
    if [ -z "${total:-}" ]; then
        echo "FAILED: $tool: no doctest summary in its run (the program did not finish)"
        return 1
    fi
    if [ "$total" -eq 0 ] || [ "$passed" -ne "$total" ] || [ "$failed" -ne 0 ]; then
        echo "FAILED: $tool: $passed of the $total case(s) its filter selects passed," \
             "$failed failed (all must pass, and at least one be selected)"
        return 1
    fi
    if [ "$tool" = racecheck ]; then
        line=$(grep -a 'RACECHECK SUMMARY:' <<<"$section" | tail -1)
        read -r errors warnings <<<"$(sed -nE \
            's/.*RACECHECK SUMMARY:.*\(([0-9]+) errors?, *([0-9]+) warnings?\).*/\1 \2/p' \
            <<<"$line")"
        if [ -z "${errors:-}" ]; then
            echo "FAILED: racecheck: no \"RACECHECK SUMMARY: ... (E errors, W warnings)\" line" \
                 "(the tool did not finish)"
            return 1
        fi
        if [ "$errors" -ne 0 ]; then
            echo "FAILED: racecheck: $errors error(s), $warnings warning(s): ${line#*= }"
            return 1
        fi
        if [ "$warnings" -ne 0 ]; then
            local hazards
            hazards=$(grep -a -E '^=+ +Warning:' <<<"$section")
            if [ -z "$hazards" ]; then
                echo "FAILED: racecheck: $warnings warning(s), none of them on a" \
                     "\"Warning:\" line to name"
                return 1
            fi
            while IFS= read -r hazard; do
                if ! why=$(explanation EXPLAINED_RACECHECK_WARNINGS "$hazard"); then
                    echo "FAILED: racecheck: $warnings warning(s), one not explained:" \
                         "$(sed -E 's/^=+ +//' <<<"$hazard")"
                    return 1
                fi
                explained=", $warnings warning(s) explained ($why)"
            done <<<"$hazards"
        fi
    else
        line=$(grep -a 'ERROR SUMMARY:' <<<"$section" | tail -1)
        errors=$(sed -nE 's/.*ERROR SUMMARY: *([0-9]+) errors?.*/\1/p' <<<"$line")
        if [ -z "$errors" ]; then
            echo "FAILED: $tool: no \"ERROR SUMMARY: N errors\" line (the tool did not finish)"
            return 1
        fi
        if [ "$errors" -ne 0 ]; then
            echo "FAILED: $tool: ${line#*= }"
            return 1
        fi
    fi
    echo "ok: $tool: 0 errors$explained; $passed of $passed selected case(s) passed"
    return 0
}

# ptxas's reports ($@, make cuda-ptxas-report's files, or any -Xptxas -v output): a line per
# kernel that spills, explained or not, then the verdict: FAILED when a spill is not explained,
# or when no report names a kernel (-Xptxas -v was not in effect).
check_spills() {
    local report kernel name stores loads why src entries=0 bad=0 listed=0
    for report in "$@"; do
        [ -r "$report" ] || { echo "FAILED: no ptxas report $report"; return 1; }
        src=$report
        [[ $report == */cuda/ptxas/* ]] && src=${report##*/cuda/ptxas/} && src=${src%.txt}.cu
        entries=$((entries + $(grep -a -c "Compiling entry function" "$report")))
        while IFS=$'\t' read -r kernel stores loads; do
            [ -n "$kernel" ] || continue
            listed=$((listed + 1))
            name=${kernel%%(*}  # (named without its parameters)
            name=${name#void }
            if why=$(explanation EXPLAINED_SPILLS "$kernel"); then
                echo "spill (explained): $src: $name: $stores bytes spill stores, $loads bytes" \
                     "spill loads ($why)"
            else
                bad=$((bad + 1))
                echo "SPILL: $src: $name: $stores bytes spill stores, $loads bytes spill loads"
            fi
        done < <(awk '/Function properties for / { sub(/.*Function properties for /, ""); f = $0 }
                      /bytes spill stores/ {
                          s = $0; sub(/ bytes spill stores.*/, "", s); sub(/.*, */, "", s)
                          l = $0; sub(/ bytes spill loads.*/, "", l); sub(/.*, */, "", l)
                          if (s + 0 > 0 || l + 0 > 0) print f "\t" s "\t" l
                      }' "$report" | { command -v c++filt >/dev/null && c++filt || cat; })
    done
    if [ "$entries" -eq 0 ]; then
        echo "FAILED: no kernel in ptxas's reports ($#): was -Xptxas -v in effect?"
        return 1
    fi
    if [ "$bad" -gt 0 ]; then
        echo "FAILED: $bad of $entries kernels spill registers to local memory unexplained" \
             "(above); EXPLAINED_SPILLS in cuda/bench/gpu-check.sh names the known ones"
        return 1
    fi
    echo "ok: $entries kernels, $listed spill(s), each named and explained"
    return 0
}

# gpu-bench's output in $1: at least one target line, none NOT MET, no MISMATCH line, and its
# own closing verdict absent (it prints "gpu-bench: FAILED" on a failed cross-check).
check_bench() {
    local targets not_met mismatches
    if [ ! -r "$1" ]; then
        echo "FAILED: no gpu-bench output $1"
        return 1
    fi
    targets=$(grep -a -c '^target ' "$1")
    not_met=$(grep -a '^target .*: NOT MET$' "$1")
    # (a MISMATCH line may start inside a line gpu-bench had begun)
    mismatches=$(grep -a -o -E 'MISMATCH [^:]+: (worst|not finite) at index' "$1" | wc -l)
    if [ "$targets" -eq 0 ]; then
        echo "FAILED: no target line in $1 (gpu-bench did not reach its end)"
        return 1
    fi
    if [ "$mismatches" -gt 0 ] || grep -a -q '^gpu-bench: FAILED' "$1"; then
        echo "FAILED: $mismatches result(s) differ from their reference (MISMATCH lines)"
        return 1
    fi
    if [ -n "$not_met" ]; then
        echo "FAILED: $(grep -c . <<<"$not_met") of $targets target(s) NOT MET:" \
             "$(sed -E 's/^target //; s/: NOT MET$//' <<<"$not_met" | paste -sd ';' |
                sed 's/;/; /g')"
        return 1
    fi
    echo "ok: $targets target(s) met, every result matches its reference"
    return 0
}

# The plan's limit for step $1 at this run's budget (DEADLINE): its share of PLAN_BUDGET.
plan_limit() {
    local entry
    for entry in "${PLAN[@]}"; do
        if [ "${entry%% *}" = "$1" ]; then
            echo $(( ${entry##* } * DEADLINE / PLAN_BUDGET ))
            return 0
        fi
    done
    echo "gpu-check.sh: no step $1 in PLAN" >&2
    return 1
}
# The plan against its budget: each step, the sum; FAILED when the limits and the reserve add
# up to more than PLAN_BUDGET.
check_plan() {
    local entry total=0
    for entry in "${PLAN[@]}"; do
        echo "plan: ${entry%% *}: ${entry##* } s"
        total=$((total + ${entry##* }))
    done
    if [ $((total + PLAN_RESERVE)) -gt "$PLAN_BUDGET" ]; then
        echo "FAILED: the steps' limits add up to $total s, + $PLAN_RESERVE s between them:" \
             "over the $PLAN_BUDGET s budget; shorten a step in PLAN (cuda/bench/gpu-check.sh)"
        return 1
    fi
    echo "ok: the steps' limits add up to $total s, + $PLAN_RESERVE s between them, within" \
         "the $PLAN_BUDGET s budget"
    return 0
}

# The verdict on the whole run: FAILED_STEPS (checks that failed, were cut or skipped) and
# NOT_RUN_STEPS (checks that did not run). PASSED only when both are empty.
FAILED_STEPS=()
NOT_RUN_STEPS=()
fail() {  # fail NAME: NAME failed (once in the list)
    local s
    for s in "${FAILED_STEPS[@]}"; do [ "$s" = "$1" ] && return 0; done
    FAILED_STEPS+=("$1")
}
join_list() { local IFS=,; sed 's/,/, /g' <<<"$*"; }
final_verdict() {
    local not_run=""
    [ ${#NOT_RUN_STEPS[@]} -eq 0 ] || not_run=$(join_list "${NOT_RUN_STEPS[@]}")
    if [ ${#FAILED_STEPS[@]} -gt 0 ]; then
        echo "verdict: FAILED: ${#FAILED_STEPS[@]} check(s) failed, were cut or skipped:" \
             "$(join_list "${FAILED_STEPS[@]}")${not_run:+; not run: $not_run}"
        return 1
    fi
    if [ -n "$not_run" ]; then
        echo "verdict: INCOMPLETE: every check that ran passed, but ${#NOT_RUN_STEPS[@]} did" \
             "not run: $not_run"
        return 3
    fi
    echo "verdict: PASSED: every check ran and passed"
    return 0
}

case "${1:-}" in
    --check-tests)
        [ $# -eq 2 ] || { echo "usage: gpu-check.sh --check-tests DOCTEST_OUTPUT" >&2; exit 2; }
        check_tests "$2"
        exit $?
        ;;
    --check-sanitizer)
        [ $# -eq 3 ] || { echo "usage: gpu-check.sh --check-sanitizer TOOL OUTPUT" >&2; exit 2; }
        check_sanitizer "$2" "$3"
        exit $?
        ;;
    --check-spills)
        [ $# -ge 2 ] || { echo "usage: gpu-check.sh --check-spills PTXAS_REPORT..." >&2; exit 2; }
        shift
        check_spills "$@"
        exit $?
        ;;
    --check-bench)
        [ $# -eq 2 ] || { echo "usage: gpu-check.sh --check-bench GPU_BENCH_OUTPUT" >&2; exit 2; }
        check_bench "$2"
        exit $?
        ;;
    --plan)
        [ $# -eq 1 ] || { echo "usage: gpu-check.sh --plan" >&2; exit 2; }
        check_plan
        exit $?
        ;;
    --verdict)
        [ $# -eq 3 ] || { echo "usage: gpu-check.sh --verdict FAILED,... NOT_RUN,..." >&2; exit 2; }
        IFS=, read -r -a FAILED_STEPS <<<"$2"
        IFS=, read -r -a NOT_RUN_STEPS <<<"$3"
        final_verdict
        exit $?
        ;;
    -*)
        echo "gpu-check.sh: unknown option ${1@Q} (see the comment at its top)" >&2
        exit 2
        ;;
esac

DEADLINE=${GPU_CHECK_SECONDS:-$PLAN_BUDGET}
if ! [[ $DEADLINE =~ ^[0-9]+$ ]] || [ "$DEADLINE" -lt 1 ]; then
    echo "gpu-check.sh: GPU_CHECK_SECONDS=${DEADLINE@Q}: give a whole number of seconds" >&2
    exit 2
fi
if ! plan=$(check_plan); then
    echo "gpu-check.sh: $(tail -1 <<<"$plan")" >&2
    exit 2
fi
OUT=${GPU_CHECK_DIR:-gpu-check/$(date +%Y%m%d-%H%M%S)}
BUILD=${1:-${GPU_CHECK_DIR:+$GPU_CHECK_DIR/build}}
BUILD=${BUILD:-build}
mkdir -p "$OUT"
# Steps append to their files (the build and gpu-bench's build share one): start them empty.
rm -f "$OUT"/{summary.txt,nvidia-smi.txt,build.log,cuda-tests.txt,gpu-bench.txt} \
      "$OUT"/{chapter6-cuda.txt,6-cost-cuda.png,cost-cuda.txt,torch-peer.txt}
MAKE_VARS=(ARCH_FLAGS="-mavx2 -mfma" NVCC_WERROR= CUDA=1)
# .gpu-deps/ by relative paths (make runs here, and its functions split words at spaces, which
# the checkout's path may hold); the programs find the font through PLOT_FONT from any folder.
if [ -d .gpu-deps ]; then
    MAKE_VARS+=(DOCTEST_INC=.gpu-deps/doctest STB_INC=.gpu-deps/stb
                FONT=.gpu-deps/NanumGothic.ttf)
    export PLOT_FONT="$PWD/.gpu-deps/NanumGothic.ttf"
fi
export NVIDIA_TF32_OVERRIDE=0
SEQ_LENS=128,256,512,1024,2048,4096,8192,16384
log() { echo "gpu-check: $*" | tee -a "$OUT/summary.txt"; }
step() {  # step NAME FILE command...   (appends to FILE; NAME's limit from PLAN)
    local name=$1 file=$2 limit; shift 2
    limit=$(plan_limit "$name") || exit 2
    local left=$((DEADLINE - SECONDS))
    if [ "$left" -lt 15 ]; then
        log "$name: skipped, ${left} s left of GPU_CHECK_SECONDS=$DEADLINE"
        fail "$name"
        return 124
    fi
    [ "$limit" -le "$left" ] || limit=$left
    [ "$limit" -ge 1 ] || limit=1  # (timeout 0 would be no limit at all)
    local t0=$SECONDS
    timeout -k 5 "$limit" "$@" >>"$OUT/$file" 2>&1
    local rc=$?
    local cut=""
    [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && cut=" (cut at its limit: incomplete)"
    log "$name: exit $rc after $((SECONDS - t0)) s (limit $limit s)$cut -> $OUT/$file"
    [ "$rc" -eq 0 ] || fail "$name"
    return $rc
}

NVCC=${NVCC:-$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null)}
[ -n "$NVCC" ] ||
    { log "nvcc not found: install the CUDA toolkit or set NVCC=/path/to/nvcc"; exit 1; }
nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1 ||
    { log "nvidia-smi failed: no GPU visible (see $OUT/nvidia-smi.txt)"; exit 1; }
CUDA_HOME=$(dirname "$(dirname "$NVCC")")

# ptxas's report of every kernel source, made afresh by the same make (in parallel with the
# build): make cuda-ptxas-report's files.
PTXAS_REPORTS=()
for src in cuda/*.cu cuda/bench/*.cu; do PTXAS_REPORTS+=("$BUILD/cuda/ptxas/${src%.cu}.txt"); done
if ! step build build.log make BUILD="$BUILD" NVCC="$NVCC" "${MAKE_VARS[@]}" -j"$(nproc)" \
        "$BUILD/bin/cuda-tests" "$BUILD/bin/6-cost-cuda" "${PTXAS_REPORTS[@]}"; then
    tail -20 "$OUT/build.log"
    log "$(final_verdict); $SECONDS s in all; results in $OUT"
    exit 1
fi
ARCH=$(grep -o 'sm_[0-9a-z]*' "$OUT/build.log" | head -1)
# NVCC_WERROR= keeps a host compiler's warnings from stopping the run, but not a spill: no
# kernel may spill on this toolkit but the ones EXPLAINED_SPILLS names.
for report in "${PTXAS_REPORTS[@]}"; do
    echo "==== ptxas -v: ${report#"$BUILD"/cuda/ptxas/}" >>"$OUT/build.log"
    cat "$report" >>"$OUT/build.log" 2>&1
done
spills=$(check_spills "${PTXAS_REPORTS[@]}") || fail "spill check"
while IFS= read -r line; do log "spills: $line"; done <<<"$spills"
DEVICE_CASES=(env CUDA_TESTS_NEED_DEVICE=1 "$BUILD/bin/cuda-tests" -tc='cuda device:*')
step cuda-tests cuda-tests.txt "${DEVICE_CASES[@]}"
grep -a -A8 'cuda device: a CUDA device is visible' "$OUT/cuda-tests.txt" |
    grep -a -m1 -o 'cudaGetDeviceCount: .*\|device 0: .*' | sed 's/^/gpu-check: /' |
    tee -a "$OUT/summary.txt"
verdict=$(check_tests "$OUT/cuda-tests.txt") || fail cuda-tests
log "cuda-tests: $verdict"
# The speed targets first (the sweep below is the longest step). The kernels are the objects
# the build above compiled; only cuda/bench/gpu_bench.cu itself is compiled here.
# cuBLAS is found through an rpath, whatever the loader's own search path holds.
KOBJ=$BUILD/cuda/cuda
if step gpu-bench-build build.log "$NVCC" -std=c++20 -O3 -I. -arch="${ARCH:-sm_90}" \
        cuda/bench/gpu_bench.cu "$KOBJ/sgemm.o" "$KOBJ/softmax.o" "$KOBJ/reduce.o" \
        "$KOBJ/attention_naive.o" "$KOBJ/attention_flash.o" "$KOBJ/lstm.o" \
        "$KOBJ/device_memory.o" -L"$CUDA_HOME/lib64" -Xlinker -rpath,"$CUDA_HOME/lib64" -lcublas \
        -o "$BUILD/bin/gpu-bench"; then
    step gpu-bench gpu-bench.txt "$BUILD/bin/gpu-bench"
    cat "$OUT/gpu-bench.txt"
    grep -a -E '^(target |MISMATCH |gpu-bench: FAILED)' "$OUT/gpu-bench.txt" >>"$OUT/summary.txt"
    verdict=$(check_bench "$OUT/gpu-bench.txt") || fail "speed targets"
    log "gpu-bench: $verdict"
else
    tail -5 "$OUT/build.log"
    log "gpu-bench: FAILED: not built (build.log); the speed targets were not measured"
    fail "speed targets"
fi
# The device cases once under each compute-sanitizer tool; its own exit code (3) on a finding.
SANITIZER=$(command -v compute-sanitizer ||
            ls "$CUDA_HOME/bin/compute-sanitizer" "$CUDA_HOME/compute-sanitizer/compute-sanitizer" \
               2>/dev/null | head -1)
# racecheck is the slowest tool: only the cases of the kernels with shared memory.
SHARED_CASES=(env CUDA_TESTS_NEED_DEVICE=1 "$BUILD/bin/cuda-tests"
              -tc='cuda device: sgemm*,cuda device: reductions*,cuda device: FlashAttention*')
if [ -n "$SANITIZER" ]; then
    for tool in memcheck initcheck synccheck racecheck; do
        echo "==== compute-sanitizer --tool $tool" >>"$OUT/cuda-tests.txt"
        cases=("${DEVICE_CASES[@]}")
        [ "$tool" = racecheck ] && cases=("${SHARED_CASES[@]}")
        step "$tool" cuda-tests.txt "$SANITIZER" --tool "$tool" --error-exitcode 3 \
            "${cases[@]}"
        verdict=$(check_sanitizer "$tool" "$OUT/cuda-tests.txt") || fail "$tool"
        log "$verdict"
    done
elif [ "${SKIP_SANITIZER:-}" = 1 ]; then
    log "compute-sanitizer: NOT RUN: not on PATH nor in $CUDA_HOME/bin, and SKIP_SANITIZER=1" \
        "(memcheck, initcheck, synccheck, racecheck not run, as asked)"
    NOT_RUN_STEPS+=(memcheck initcheck synccheck racecheck)
else
    log "compute-sanitizer: FAILED: not on PATH nor in $CUDA_HOME/bin (memcheck, initcheck," \
        "synccheck, racecheck cannot run); install it, or set SKIP_SANITIZER=1 to run without"
    fail compute-sanitizer
fi
# Chapter 6 itself, the table and figure 3, once: device time is short.
step chapter6-cuda chapter6-cuda.txt "$BUILD/bin/6-cost-cuda" --device cuda \
    --seq-lens "$SEQ_LENS" --figure-dir "$OUT"
cat "$OUT/chapter6-cuda.txt"
PEER=
if [ -n "${PYTHON:-}" ]; then CANDIDATES=("$PYTHON"); else CANDIDATES=(/usr/bin/python3 python3); fi
for py in "${CANDIDATES[@]}"; do
    if "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
        2>/dev/null; then
        PEER=$py
        break
    fi
done
if [ -n "$PEER" ]; then
    step torch-peer torch-peer.txt env PYTHONUNBUFFERED=1 "$PEER" \
        chapters/6-cost/peer_torch.py --device cuda --seq-lens "$SEQ_LENS"
    cat "$OUT/torch-peer.txt"
elif [ -n "${PYTHON:-}" ]; then
    log "torch-peer: FAILED: PYTHON=$PYTHON has no torch that sees CUDA"
    fail torch-peer
else
    log "torch-peer: NOT RUN: no python with CUDA torch (tried ${CANDIDATES[*]});" \
        "set PYTHON=/path/to/python"
    NOT_RUN_STEPS+=(torch-peer)
fi
verdict=$(final_verdict)
rc=$?
log "$verdict; $SECONDS s in all; results in $OUT"
exit $rc
