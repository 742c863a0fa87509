#!/usr/bin/env bash
# make gpu-check: everything the GPU side promises, on a machine with a GPU, in one folder.
#   1. build (nvcc, the visible GPU's architecture)      -> build.log (gpu-bench's build too)
#   2. the CUDA test cases on the device                 -> cuda-tests.txt
#   3. speed targets: sgemm vs cuBLAS, fused vs naive attention, fused vs unfused LSTM gates
#                                                        -> gpu-bench.txt
#   4. chapter 6 on cuda (6-cost-cuda --device cuda), n = 128 ... 16384, table and figure 3
#                                                        -> chapter6-cuda.txt, 6-cost-cuda.png
#      (cells that do not fit are skipped)
#   5. PyTorch peers where python3 has torch with CUDA    -> torch-peer.txt
# Each step has its own time limit, and none runs past GPU_CHECK_SECONDS (480: 8 minutes) from
# the start: a step that would is cut to the time left, and one with under 15 s left is skipped.
# At most 8 files are written (nvidia-smi.txt and summary.txt too); the exit status is 1 when a
# step failed or was skipped, and summary.txt says which.
#
# On a machine without network (the lent GPU machines): run `make gpu-bundle` where the Debian
# packages are, carry .gpu-deps/ along, and the build below uses it. GPU_CHECK_DIR=dir puts the
# results in dir instead of gpu-check/<time>. The CPU side is built for AVX2 + FMA, the path the
# CPU tests cover, whatever the GPU machine's processor (its AVX-512 path is compile-tested only).
set -u
BUILD=${1:-build}
OUT=${GPU_CHECK_DIR:-gpu-check/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
# Steps append to their files (the build and gpu-bench's build share one): start them empty.
rm -f "$OUT"/{summary.txt,nvidia-smi.txt,build.log,cuda-tests.txt,gpu-bench.txt,chapter6-cuda.txt,6-cost-cuda.png,cost-cuda.txt,torch-peer.txt}
MAKE_VARS=(ARCH_FLAGS="-mavx2 -mfma")
if [ -d .gpu-deps ]; then
    MAKE_VARS+=(DOCTEST_INC="$PWD/.gpu-deps/doctest" STB_INC="$PWD/.gpu-deps/stb"
                FONT="$PWD/.gpu-deps/NanumGothic.ttf")
fi
SEQ_LENS=128,256,512,1024,2048,4096,8192,16384
DEADLINE=${GPU_CHECK_SECONDS:-480}
FAILED=0
log() { echo "gpu-check: $*" | tee -a "$OUT/summary.txt"; }
step() {  # step NAME SECONDS FILE command...   (appends to FILE)
    local name=$1 limit=$2 file=$3; shift 3
    local left=$((DEADLINE - SECONDS))
    if [ "$left" -lt 15 ]; then
        log "$name: skipped, ${left} s left of GPU_CHECK_SECONDS=$DEADLINE"
        FAILED=$((FAILED + 1))
        return 124
    fi
    [ "$limit" -le "$left" ] || limit=$left
    local t0=$SECONDS
    timeout -k 5 "$limit" "$@" >>"$OUT/$file" 2>&1
    local rc=$?
    log "$name: exit $rc after $((SECONDS - t0)) s (limit $limit s) -> $OUT/$file"
    [ "$rc" -eq 0 ] || FAILED=$((FAILED + 1))
    return $rc
}

NVCC=${NVCC:-$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null)}
[ -n "$NVCC" ] || { log "nvcc not found: install the CUDA toolkit or set NVCC=/path/to/nvcc"; exit 1; }
nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1 || { log "nvidia-smi failed: no GPU visible (see $OUT/nvidia-smi.txt)"; exit 1; }
CUDA_HOME=$(dirname "$(dirname "$NVCC")")

step build 240 build.log make BUILD="$BUILD" NVCC="$NVCC" "${MAKE_VARS[@]}" -j"$(nproc)" \
        "$BUILD/bin/cuda-tests" "$BUILD/bin/6-cost-cuda" ||
    { tail -20 "$OUT/build.log"; exit 1; }
ARCH=$(grep -o 'sm_[0-9a-z]*' "$OUT/build.log" | head -1)
step cuda-tests 120 cuda-tests.txt "$BUILD/bin/cuda-tests" -tc='cuda device:*'
tail -3 "$OUT/cuda-tests.txt" | tee -a "$OUT/summary.txt"
# The speed targets first (the sweep below is the longest step). The kernels are the objects
# the build above compiled; only cuda/bench/gpu_bench.cu itself is compiled here.
# cuBLAS is found through an rpath, whatever the loader's own search path holds.
KOBJ=$BUILD/cuda/cuda
if step gpu-bench-build 90 build.log "$NVCC" -std=c++20 -O3 -I. -arch="${ARCH:-sm_90}" \
        cuda/bench/gpu_bench.cu "$KOBJ/sgemm.o" "$KOBJ/softmax.o" "$KOBJ/reduce.o" \
        "$KOBJ/attention_naive.o" "$KOBJ/attention_flash.o" "$KOBJ/lstm.o" "$KOBJ/device_memory.o" \
        -L"$CUDA_HOME/lib64" -Xlinker -rpath,"$CUDA_HOME/lib64" -lcublas -o "$BUILD/bin/gpu-bench"; then
    step gpu-bench 120 gpu-bench.txt "$BUILD/bin/gpu-bench"
    cat "$OUT/gpu-bench.txt"
    grep '^target ' "$OUT/gpu-bench.txt" >>"$OUT/summary.txt"
else
    tail -5 "$OUT/build.log"
fi
# Chapter 6 itself, the table and figure 3, once: device time is short.
step chapter6-cuda 240 chapter6-cuda.txt "$BUILD/bin/6-cost-cuda" --device cuda \
    --seq-lens "$SEQ_LENS" --figure-dir "$OUT"
cat "$OUT/chapter6-cuda.txt"
for py in /usr/bin/python3 python3; do
    if "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
        step torch-peer 150 torch-peer.txt env PYTHONUNBUFFERED=1 "$py" \
            chapters/6-cost/peer_torch.py --device cuda --seq-lens "$SEQ_LENS"
        cat "$OUT/torch-peer.txt"
        break
    fi
done
if [ "$FAILED" -gt 0 ]; then
    log "$FAILED step(s) failed or were skipped; results in $OUT"
    exit 1
fi
log "results in $OUT"
