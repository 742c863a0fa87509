// The "emulator checks:" cases of the suite (make emu-racecheck runs them alone): the emulator's
// access checks (cuda/emu/racecheck.cpp, emu::access), which exist where the kernels are compiled
// with the access hooks (every GCC emulator build, cuda/cuda.mk). First every kernel in cuda/ at
// small sizes, which must run clean; then one planted bug per check, each caught and named, and
// each missed with its check turned off (or, for the carved tiles, with the tiles carved by
// hand), so that no test here passes without its check. This unit is compiled as the kernels
// are, and holds nothing where they have no hooks.
#include <doctest.h>

#include "cuda/emu/checks.h"
#include "cuda/kernels.h"
#include "tests/child.h"
#include "tests/emu.h"

#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include <csignal>

#include <sys/wait.h>
#include <unistd.h>

#ifdef EMU_INSTRUMENTED
namespace {

// A planted fault that no check catches kills the child only, quietly (tests/child.h).
using testutil::ChildResult;
template <class F>
ChildResult in_child(F f) {
    return testutil::in_child(f, true);
}

gpu::Buffer<float> filled(size_t n, unsigned seed = 1) {
    std::vector<float> v(n);
    unsigned long long s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (float& x : v) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x = float(double(s >> 40) / 16777216.0 - 0.5);
    }
    gpu::Buffer<float> d(n);
    if (n) CUDA_CHECK(cudaMemcpy(d.data(), v.data(), n * 4, cudaMemcpyHostToDevice));
    return d;
}

// Whether this build can turn a code address into file:line (addr2line and line tables; not,
// say, under qemu-user). Where it cannot, the reports name the code address instead.
bool lines_resolve() {
    static const bool yes = [] {
        const std::string s = emu::resolve_code_addresses(
            emu::code_at(reinterpret_cast<const char*>(&lines_resolve) + 1));
        return s.find("test_emulator_checks.cpp:") != std::string::npos;
    }();
    return yes;
}
// "file:LINE" where lines resolve, else "code address".
std::string at_line(int line) {
    return lines_resolve() ? "tests/test_emulator_checks.cpp:" + std::to_string(line)
                           : std::string("code address");
}

}  // namespace

// ---- every kernel, clean ------------------------------------------------------------------
TEST_CASE("emulator checks: every kernel in cuda/ runs clean under the access checks") {
    CHECK(emu::config().checks == emu::all_checks);  // (EMU_RACECHECK=0: to time the check)
    auto clean = [](const char* what, auto f) {
        const std::string e = launch_error(f);
        CHECK_MESSAGE(e.empty(), what << ": " << e);
    };
    // sgemm: every version, every tile shape, every transpose; a ragged shape (guards, the
    // scalar path: ld odd), an aligned one (float4, the unguarded inner loop), few rows (the
    // few-rows kernels), a deep K on a small grid (split-K and its sum: from K = 1024 on, the
    // one block of the 128x64 tile is cut in two; 1030 ends the second slice ragged).
    const SgemmTile tiles[] = {SgemmTile::automatic,        SgemmTile::b128x128t8x8,
                               SgemmTile::b128x64t8x8,      SgemmTile::b128x128t8x16,
                               SgemmTile::b128x256t8x16,    SgemmTile::b256x128t16x8,
                               SgemmTile::few_rows_one_pass};
    const SgemmVersion versions[] = {SgemmVersion::naive, SgemmVersion::tiled,
                                     SgemmVersion::register_tiled, SgemmVersion::warp_tiled};
    struct Shape {
        int M, N, K;
    };
    for (Shape sh :
         {Shape{130, 129, 17}, Shape{128, 128, 16}, Shape{8, 96, 200}, Shape{64, 64, 1030}})
        for (int t = 0; t < 4; t++) {
            const bool ta = t & 2, tb = t & 1;
            const int lda = ta ? sh.M : sh.K, ldb = tb ? sh.K : sh.N;
            auto A = filled(size_t(sh.M) * sh.K), B = filled(size_t(sh.K) * sh.N, 2);
            gpu::Buffer<float> C(size_t(sh.M) * sh.N);
            for (SgemmVersion v : versions)
                for (SgemmTile tile : tiles) {
                    if (v != SgemmVersion::warp_tiled && tile != SgemmTile::automatic) continue;
                    if (sh.K == 1030 && tile != SgemmTile::automatic) continue;
                    clean("sgemm", [&] {
                        sgemm_cuda(ta, tb, sh.M, sh.N, sh.K, 1.0f, A.data(), lda, B.data(), ldb,
                                   0.0f, C.data(), sh.N, 1, 0, 0, 0, v, tile);
                    });
                }
        }
    {
        const int rows = 140, cols = 70;  // causal: two 70 x 70 blocks
        auto S = filled(size_t(rows) * cols), dP = filled(size_t(rows) * cols, 3);
        gpu::Buffer<float> P(size_t(rows) * cols), dS(size_t(rows) * cols), out(cols);
        for (bool causal : {false, true})
            clean("softmax", [&] { softmax_forward_cuda(S.data(), P.data(), rows, cols, causal); });
        clean("softmax backward",
              [&] { softmax_backward_cuda(P.data(), dP.data(), dS.data(), rows, cols); });
        clean("row_dot", [&] { row_dot_cuda(S.data(), dP.data(), out.data(), 1, cols); });
        clean("column_sum", [&] { column_sum_cuda(S.data(), out.data(), rows, cols); });
        clean("sum", [&] { sum_cuda(S.data(), out.data(), long(rows) * cols); });
        clean("max_abs", [&] { max_abs_cuda(S.data(), out.data(), long(rows) * cols); });
    }
    {
        const int B = 2, n = 5, h = 3, d_k = 4;
        const size_t sz = size_t(B) * n * h * d_k;
        auto x = filled(sz), qkv = filled(3 * sz);
        gpu::Buffer<float> y(sz), Q(sz), K(sz), V(sz), back(3 * sz);
        clean("split_heads", [&] { split_heads_cuda(x.data(), y.data(), B, n, h, d_k); });
        clean("merge_heads", [&] { merge_heads_cuda(y.data(), x.data(), B, n, h, d_k); });
        clean("split_qkv",
              [&] { split_qkv_cuda(qkv.data(), Q.data(), K.data(), V.data(), B, n, h, d_k); });
        clean("merge_qkv",
              [&] { merge_qkv_cuda(Q.data(), K.data(), V.data(), back.data(), B, n, h, d_k); });
    }
    // Attention: naive, FlashAttention 1 and 2 at every head width they are compiled for,
    // causal and not, the float4 path (d_k % 4 == 0) and the scalar one (d_k = 30).
    for (int d_k : {30, 64, 128})
        for (bool causal : {false, true}) {
            const int B = 1, h = 2, n = 70;
            const size_t sz = size_t(B) * h * n * d_k;
            auto Q = filled(sz, 1), K = filled(sz, 2), V = filled(sz, 3), dO = filled(sz, 4);
            gpu::Buffer<float> O(sz), L(size_t(B) * h * n), dQ(sz), dK(sz), dV(sz);
            gpu::Buffer<float> P(size_t(B) * h * n * n);
            if (d_k == 64)
                clean("naive attention", [&] {
                    attention_naive_forward_cuda(Q.data(), K.data(), V.data(), O.data(), P.data(),
                                                 B, h, n, d_k, causal);
                    attention_naive_backward_cuda(Q.data(), K.data(), V.data(), P.data(), dO.data(),
                                                  dQ.data(), dK.data(), dV.data(), B, h, n, d_k,
                                                  causal);
                });
            for (FlashVersion v : {FlashVersion::simple, FlashVersion::register_tiled})
                clean("fused attention", [&] {
                    attention_fused_forward_cuda(Q.data(), K.data(), V.data(), O.data(), L.data(),
                                                 B, h, n, d_k, causal, v);
                    attention_fused_backward_cuda(Q.data(), K.data(), V.data(), O.data(), L.data(),
                                                  dO.data(), dQ.data(), dK.data(), dV.data(), B, h,
                                                  n, d_k, causal, v);
                });
        }
    {
        const int n = 3, B = 2, d = 24;
        auto x = filled(size_t(n) * B * d), Wi = filled(size_t(4) * d * d, 2),
             Wh = filled(size_t(4) * d * d, 3), b = filled(size_t(4) * d, 4),
             dh = filled(size_t(n) * B * d, 5);
        gpu::Buffer<float> hb(size_t(n + 1) * B * d), cb(size_t(n + 1) * B * d),
            g(size_t(n) * B * 4 * d), dx(size_t(n) * B * d), dWi(size_t(4) * d * d),
            dWh(size_t(4) * d * d), db(size_t(4) * d), tmp(size_t(B) * d);
        for (bool fused : {true, false})
            clean("lstm forward", [&] {
                CUDA_CHECK(cudaMemset(hb.data(), 0, size_t(B) * d * 4));
                CUDA_CHECK(cudaMemset(cb.data(), 0, size_t(B) * d * 4));
                lstm_forward_cuda(x.data(), Wi.data(), Wh.data(), b.data(), n, B, d, hb.data(),
                                  cb.data(), g.data(), fused);
            });
        clean("lstm backward", [&] {
            lstm_backward_cuda(x.data(), Wi.data(), Wh.data(), hb.data(), cb.data(), g.data(),
                               dh.data(), n, B, d, dx.data(), dWi.data(), dWh.data(), db.data());
        });
    }
    const size_t kernels = emu::launched_kernels().size();
    MESSAGE("distinct kernels launched under the checks: " << kernels);
    CHECK(kernels >= 60);
}

// ---- planted bugs ---------------------------------------------------------------------------
namespace {

// Two warps: each thread writes its word, then reads the other warp's mirror word. Between them
// a __syncthreads (correct), a __syncwarp or a shuffle (a race: they order one warp's lanes
// only; a schedule that runs every thread to them before releasing any hides it, so the race
// check must find it).
enum class Between { syncthreads, syncwarp, shuffle };
constexpr int MIRROR_KERNEL_LINE = __LINE__;  // the lines below are counted from here
__global__ void mirror_kernel(float* out, Between between) {
    SHARED(float, tile, [64]);
    float v = float(threadIdx.x);
    tile[threadIdx.x] = v;  // the write (MIRROR_WRITE_LINE)
    if (between == Between::syncthreads)
        __syncthreads();
    else if (between == Between::syncwarp)
        __syncwarp();
    else
        v += __shfl_xor_sync(0xffffffffu, v, 1);
    out[threadIdx.x] = tile[63 - threadIdx.x] + 0.0f * v;  // the read (MIRROR_READ_LINE)
}
constexpr int MIRROR_WRITE_LINE = MIRROR_KERNEL_LINE + 4;
constexpr int MIRROR_READ_LINE = MIRROR_KERNEL_LINE + 11;

// One warp: each lane writes its word, then reads the word of the lane 16 away. Between them
// each half-warp passes a __syncwarp naming only itself (a race: nothing orders a lane after
// the other half's write; on sm_70+ the halves run independently), or the whole warp's
// (correct). chain: the halves' __syncwarp, then one naming lanes 15 and 16 only, and only those
// two read: correct, through the chain (lane 31 -> its half -> lane 16 -> the pair -> lane 15).
// chain_and_lane0: lane 0 reads lane 16's word too, which no chain orders.
enum class Halves { own_half, whole_warp, chain, chain_and_lane0 };
__global__ void half_warp_kernel(float* out, Halves halves) {
    SHARED(float, tile, [32]);
    const int lane = threadIdx.x;
    tile[lane] = float(lane);
    const bool chain = halves == Halves::chain || halves == Halves::chain_and_lane0;
    if (halves == Halves::whole_warp) {
        __syncwarp();
    } else {
        __syncwarp(lane < 16 ? 0x0000ffffu : 0xffff0000u);
        if (chain && (lane == 15 || lane == 16)) __syncwarp(0x00018000u);
    }
    if (!chain || lane == 15 || lane == 16 || (lane == 0 && halves == Halves::chain_and_lane0))
        out[lane] = tile[lane ^ 16];
}

// Memory nobody wrote, read where its fill happens to look harmless: every thread atomicMax's
// its value into *best (the 0xFF fill reads as -1, below every value), and thread 0 takes the
// argmax of a shared array whose first `written` entries were written (comparisons with the NaN
// fill are false, so the stale entries never win) into out[blockIdx.x].
__global__ void max_into_unwritten_kernel(int* best, const int* v) {
    atomicMax(best, v[threadIdx.x]);
}
__global__ void stale_argmax_kernel(int* out, int written) {
    SHARED(float, vals, [32]);
    if (int(threadIdx.x) < written) vals[threadIdx.x] = float(threadIdx.x);
    __syncthreads();
    if (threadIdx.x != 0) return;
    int best = 0;
    for (int i = 1; i < 32; i++)
        if (vals[i] > vals[best]) best = i;
    out[blockIdx.x] = best;
}

// Atomics on one shared word from every warp, then a read after the barrier: no race. Each
// block writes its own part of out.
__global__ void shared_atomics_kernel(int* out) {
    SHARED(int, count, [1]);
    if (threadIdx.x == 0) count[0] = 0;
    __syncthreads();
    atomicAdd(&count[0], 1);
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = count[0];
}

// Thread 0 of every block adds the block's value into out[0]: with a plain += (atomicAdd
// forgotten: on a GPU the blocks' read-add-write sequences interleave and updates are lost), or
// with atomicAdd.
constexpr int BLOCK_SUM_KERNEL_LINE = __LINE__;
__global__ void block_sum_kernel(float* out, const float* v, bool atomic) {
    if (threadIdx.x != 0) return;
    if (atomic)
        atomicAdd(out, v[blockIdx.x]);
    else
        out[0] += v[blockIdx.x];  // (BLOCK_SUM_KERNEL_LINE + 6)
}
// An in-place shift across blocks: block b's thread 0 copies x[b + 1] into x[b], which block b + 1
// overwrites (a race: on a GPU block b + 1 may run first). A correct shift writes a second buffer.
constexpr int SHIFT_KERNEL_LINE = __LINE__;
__global__ void shift_kernel(float* x, int n) {
    if (threadIdx.x == 0 && int(blockIdx.x) + 1 < n) x[blockIdx.x] = x[blockIdx.x + 1];
}

// Global scratch shared by two warps: each thread writes its word, then reads the other warp's
// mirror word, with a __syncwarp between (a race: it orders one warp's lanes only) or a
// __syncthreads (correct). (No branch before the barrier: GCC may copy a call after an `if` into
// both of its paths, and two copies of one __syncthreads call look like two barriers here.)
constexpr int WARP_SCRATCH_KERNEL_LINE = __LINE__;
__global__ void warp_scratch_kernel(float* scratch, float* out, bool barrier) {
    scratch[threadIdx.x] = float(threadIdx.x);
    if (barrier)
        __syncthreads();
    else
        __syncwarp();
    out[threadIdx.x] = scratch[63 - threadIdx.x];  // (WARP_SCRATCH_KERNEL_LINE + 7)
}

// Legal: warp 0 writes scratch, every thread passes one __syncthreads, warp 1 reads it back
// reversed. GCC copies the __syncthreads call after `if (warp == 0) ...` into both of its paths
// (tail duplication), so the threads of warp 0 and of warp 1 reach the barrier through two call
// instructions of one source call.
__global__ void copied_barrier_kernel(float* scratch, float* out, bool barrier) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (barrier) {
        if (warp == 0) scratch[lane] = float(lane);
        __syncthreads();
    } else {
        if (warp == 0) scratch[lane] = float(lane);
        __syncwarp();
    }
    if (warp == 1) out[lane] = scratch[31 - lane];
}

// Each thread fills a local array of 8 floats; thread 0 reads local[index] into out[0]: past
// its end by 4 KB, the read leaves the thread's stack (on a GPU, its local memory). (The access
// hooks never see it: the instrumentation leaves a function's own arrays alone; the stack's
// guard pages do.)
__global__ void local_array_kernel(float* out, int index) {
    float local[8];
    for (int i = 0; i < 8; i++) local[i] = float(i + int(threadIdx.x));
    if (threadIdx.x == 0) out[0] = local[index];
}

// Thread 0 reads in[index] into out[0].
constexpr int GLOBAL_READ_KERNEL_LINE = __LINE__;
__global__ void global_read_kernel(const float* in, float* out, long index) {
    if (threadIdx.x == 0) out[0] = in[index];
}

// Thread 0 reads row[index] of a 64-float shared array.
__global__ void shared_read_kernel(float* out, int index) {
    SHARED(float, row, [64]);
    row[threadIdx.x] = 1.0f;
    __syncthreads();
    if (threadIdx.x == 0) out[0] = row[index];
}

// Two 32-float tiles carved from the dynamic shared memory; thread 0 reads a[index]: a[32] is an
// overrun into b (on a GPU, b[0]). by_hand: carved by pointer arithmetic, as before SHARED_TILE.
__global__ void carved_kernel(float* out, int index, bool by_hand) {
    DYNAMIC_SHARED(float, smem);
    float* a = smem;
    float* b = smem + 32;
    if (!by_hand) {
        SHARED_TILE(float, ta, smem, 32);
        SHARED_TILE(float, tb, smem, 32);
        a = ta, b = tb;
    }
    a[threadIdx.x] = 1.0f;
    b[threadIdx.x] = 2.0f;
    __syncthreads();
    if (threadIdx.x == 0) out[0] = a[index];
}

// Tiles carved at `skip` floats into the dynamic shared memory: a float tile that thread 0
// reads as float4 (its byte 0 is 4 * skip bytes past the 16-byte aligned start, as on a GPU),
// or, with as_float4, a float4 tile carved there.
__global__ void carved_vector_kernel(float* out, int skip, bool as_float4) {
    DYNAMIC_SHARED(float, smem);
    float* cursor = smem + skip;
    if (as_float4) {
        float4* cursor4 = reinterpret_cast<float4*>(cursor);
        SHARED_TILE(float4, t4, cursor4, 2);
        if (threadIdx.x == 0) t4[0] = float4{1, 2, 3, 4}, out[0] = t4[0].x;
        return;
    }
    SHARED_TILE(float, t, cursor, 8);
    if (threadIdx.x < 8) t[threadIdx.x] = float(threadIdx.x);
    __syncthreads();
    if (threadIdx.x == 0) {
        float4 v;
        v = *reinterpret_cast<const float4*>(t);  // one 16-byte load on a GPU
        out[0] = v.x + v.y + v.z + v.w;
    }
}

// A float4 read member by member through a pointer `offset` floats into p: g++ reads four
// floats, each 4-byte aligned; nvcc may read the float4 whole, one 16-byte load that faults
// where p + offset is not 16-byte aligned.
__global__ void float4_members_kernel(const float* p, float* out, int offset) {
    if (threadIdx.x != 0) return;
    const float4* q = reinterpret_cast<const float4*>(p + offset);
    out[0] = q->x + q->y + q->z + q->w;  // FLOAT4_MEMBERS_LINE
}
constexpr int FLOAT4_MEMBERS_LINE = __LINE__ - 2;

// Thread 0 applies one atomic to the int (or float) `offset` bytes from p: every atomic the
// emulator provides, each on its own line (counted from ATOMIC_KERNEL_LINE).
enum class Atomic { add, add_float, sub, max, min, exch, cas };
constexpr int ATOMIC_KERNEL_LINE = __LINE__;
__global__ void atomic_kernel(int* p, long offset, Atomic op) {
    if (threadIdx.x != 0) return;
    int* a = reinterpret_cast<int*>(reinterpret_cast<char*>(p) + offset);
    if (op == Atomic::add) atomicAdd(a, 1);
    if (op == Atomic::add_float) atomicAdd(reinterpret_cast<float*>(a), 1.0f);
    if (op == Atomic::sub) atomicSub(a, 1);
    if (op == Atomic::max) atomicMax(a, 7);
    if (op == Atomic::min) atomicMin(a, -7);
    if (op == Atomic::exch) atomicExch(a, 7);
    if (op == Atomic::cas) atomicCAS(a, -1, 7);
}
constexpr int atomic_line(Atomic op) { return ATOMIC_KERNEL_LINE + 4 + int(op); }

// Every thread adds 1 to count[index] of a one-int shared array.
__global__ void shared_atomic_kernel(int* out, int index) {
    SHARED(int, count, [1]);
    if (threadIdx.x == 0) count[0] = 0;
    __syncthreads();
    atomicAdd(&count[index], 1);
    __syncthreads();
    if (threadIdx.x == 0) out[0] = count[0];
}

}  // namespace

TEST_CASE("emulator checks: a race between warps with a __syncwarp or a shuffle between") {
    gpu::Buffer<float> out(64);
    for (Between between : {Between::syncwarp, Between::shuffle}) {
        CAPTURE(int(between));
        auto run = [&] { launch_kernel(mirror_kernel, dim3(1), dim3(64), 0, out.data(), between); };
        const std::string e = launch_error(run);
        CHECK_MESSAGE(e.find("shared-memory race on byte ") != std::string::npos, e);
        CHECK_MESSAGE(e.find("of shared array `tile`") != std::string::npos, e);
        // Both threads (one of each warp) and both source lines: the write and the read.
        CHECK_MESSAGE(std::regex_search(e, std::regex(R"(thread \(\d+,0,0\) \(warp 1\))")), e);
        CHECK_MESSAGE(std::regex_search(e, std::regex(R"(thread \(\d+,0,0\) \(warp 0\))")), e);
        CHECK_MESSAGE(e.find(at_line(MIRROR_WRITE_LINE)) != std::string::npos, e);
        CHECK_MESSAGE(e.find(at_line(MIRROR_READ_LINE)) != std::string::npos, e);
        // What the check adds: the schedule comparison passes this kernel, and so does the
        // launch with the race check off.
        CHECK(emu::same_under_both_schedules(
            [&] {
                Without off(emu::check_races);
                run();
            },
            [&] {
                std::vector<float> v(64);
                CUDA_CHECK(cudaMemcpy(v.data(), out.data(), 256, cudaMemcpyDeviceToHost));
                return v;
            }));
        Without off(emu::check_races);
        CHECK(launch_error(run).empty());
    }
    // Correct: a __syncthreads between; atomics from every warp on one word.
    CHECK(launch_error([&] {
              launch_kernel(mirror_kernel, dim3(1), dim3(64), 0, out.data(), Between::syncthreads);
          }).empty());
    gpu::Buffer<int> counts(2 * 96);
    CHECK(launch_error([&] {
              launch_kernel(shared_atomics_kernel, dim3(2), dim3(96), 0, counts.data());
          }).empty());
    std::vector<int> c(2 * 96);
    CUDA_CHECK(cudaMemcpy(c.data(), counts.data(), 2 * 96 * 4, cudaMemcpyDeviceToHost));
    CHECK(c == std::vector<int>(2 * 96, 96));
}

TEST_CASE("emulator checks: a global race between blocks, or between warps with __syncwarp") {
    // Four blocks add 1, 2, 3, 4 into one float: the fibers run the blocks one after another, so
    // the plain += gives the right 10 under both schedules; only the race check sees it. (One
    // worker: blocks in order, so the report names the first two.)
    const int workers = emu::config().workers;
    emu::set_workers(1);
    std::vector<float> host = {1, 2, 3, 4};
    gpu::Buffer<float> v(4), sum(1);
    CUDA_CHECK(cudaMemcpy(v.data(), host.data(), 16, cudaMemcpyHostToDevice));
    auto add = [&](bool atomic) {
        CUDA_CHECK(cudaMemset(sum.data(), 0, 4));
        return launch_error([&] {
            launch_kernel(block_sum_kernel, dim3(4), dim3(32), 0, sum.data(),
                          static_cast<const float*>(v.data()), atomic);
        });
    };
    auto total = [&] {
        float t = 0;
        CUDA_CHECK(cudaMemcpy(&t, sum.data(), 4, cudaMemcpyDeviceToHost));
        return t;
    };
    const std::string e = add(false);
    CHECK_MESSAGE(e.find("global-memory race on byte 0 of a buffer of 4 bytes") !=
                      std::string::npos,
                  e);
    CHECK_MESSAGE(e.find("thread (0,0,0) (warp 0) of block (1,0,0) reads it at " +
                         at_line(BLOCK_SUM_KERNEL_LINE + 6)) != std::string::npos,
                  e);
    CHECK_MESSAGE(e.find("warp 0 of block (0,0,0) wrote it earlier in this launch") !=
                      std::string::npos,
                  e);
    CHECK(add(true).empty());
    CHECK(total() == 10.0f);
    {
        Without off(emu::check_global_races);
        CHECK(add(false).empty());
        CHECK(total() == 10.0f);
        CHECK(emu::same_under_both_schedules([&] { add(false); },
                                             [&] { return std::vector<float>{total()}; }));
    }
    // A write after another block's read: block 0 read x[1], block 1 writes it.
    gpu::Buffer<float> x(4);
    CUDA_CHECK(cudaMemcpy(x.data(), host.data(), 16, cudaMemcpyHostToDevice));
    auto shift = [&] {
        return launch_error(
            [&] { launch_kernel(shift_kernel, dim3(4), dim3(32), 0, x.data(), 4); });
    };
    const std::string w = shift();
    CHECK_MESSAGE(w.find("on byte 4 of a buffer of 16 bytes") != std::string::npos, w);
    CHECK_MESSAGE(w.find("thread (0,0,0) (warp 0) of block (1,0,0) writes it at " +
                         at_line(SHIFT_KERNEL_LINE + 2)) != std::string::npos,
                  w);
    CHECK_MESSAGE(w.find("warp 0 of block (0,0,0) read it earlier") != std::string::npos, w);
    {
        Without off(emu::check_global_races);
        CHECK(shift().empty());
    }
    // Scratch between warps, with only a __syncwarp: the fibers run every thread to its warp's
    // __syncwarp before any goes on, so the reads come after all the writes; warp 0's first.
    gpu::Buffer<float> scratch(64), out(64);
    CUDA_CHECK(cudaMemset(scratch.data(), 0, 256));
    auto swap = [&](bool barrier) {
        return launch_error([&] {
            launch_kernel(warp_scratch_kernel, dim3(1), dim3(64), 0, scratch.data(), out.data(),
                          barrier);
        });
    };
    const std::string s = swap(false);
    CHECK_MESSAGE(s.find("global-memory race on byte ") != std::string::npos, s);
    CHECK_MESSAGE(s.find("byte 252 of a buffer of 256 bytes") != std::string::npos, s);
    CHECK_MESSAGE(s.find("thread (0,0,0) (warp 0) of block (0,0,0) reads it at " +
                         at_line(WARP_SCRATCH_KERNEL_LINE + 7)) != std::string::npos,
                  s);
    CHECK_MESSAGE(s.find("warp 1 of this block wrote it earlier") != std::string::npos, s);
    CHECK(swap(true).empty());
    Without off(emu::check_global_races);
    CHECK(swap(false).empty());
    std::vector<float> o(64);
    CUDA_CHECK(cudaMemcpy(o.data(), out.data(), 256, cudaMemcpyDeviceToHost));
    CHECK(o[0] == 63.0f);
    emu::set_workers(workers);
}

TEST_CASE("emulator checks: one __syncthreads call the compiler copied is one barrier") {
    gpu::Buffer<float> scratch(32), out(32);
    const std::string e = launch_error([&] {
        launch_kernel(copied_barrier_kernel, dim3(1), dim3(64), 0, scratch.data(), out.data(),
                      true);
    });
    // Where lines do not resolve, the copies cannot be told from two calls (the header says so).
    if (lines_resolve()) {
        CHECK_MESSAGE(e.empty(), e);
        std::vector<float> o(32);
        CUDA_CHECK(cudaMemcpy(o.data(), out.data(), 128, cudaMemcpyDeviceToHost));
        CHECK(o[0] == 31.0f);
    } else {
        CHECK_MESSAGE((e.empty() || e.find("reached through different calls") != std::string::npos),
                      e);
    }
}

TEST_CASE("emulator checks: a read of memory nothing wrote, global or shared, is named") {
    gpu::Buffer<int> best(1), v(32), out(2);
    std::vector<int> host(32);
    for (int i = 0; i < 32; i++) host[i] = i * 3;
    CUDA_CHECK(cudaMemcpy(v.data(), host.data(), 32 * 4, cudaMemcpyHostToDevice));
    auto max_into = [&] {
        return launch_error(
            [&] { launch_kernel(max_into_unwritten_kernel, dim3(1), dim3(32), 0, best.data(),
                                static_cast<const int*>(v.data())); });
    };
    auto argmax = [&](int written) {
        return launch_error(
            [&] { launch_kernel(stale_argmax_kernel, dim3(2), dim3(32), 0, out.data(), written); });
    };
    const std::string g = max_into();
    CHECK_MESSAGE(g.find("uninitialised global memory: thread (0,0,0) (warp 0) of block (0,0,0) "
                         "atomically updates 4 bytes at") != std::string::npos,
                  g);
    CHECK_MESSAGE(g.find("byte 0 of a buffer of 4 bytes from gpu::allocate") != std::string::npos,
                  g);
    const std::string sh = argmax(16);
    CHECK_MESSAGE(sh.find("uninitialised shared memory: thread (0,0,0) (warp 0) of block") !=
                      std::string::npos,
                  sh);
    CHECK_MESSAGE(sh.find("reads byte 64 of shared array `vals`") != std::string::npos, sh);
    // Written first, both are clean; with the check off the planted reads go unseen (and give
    // the "right" answers: the fill never wins).
    CHECK(argmax(32).empty());
    CUDA_CHECK(cudaMemset(best.data(), 0, 4));
    CHECK(max_into().empty());
    Without off(emu::check_init);
    gpu::Buffer<int> fresh(1);
    CHECK(launch_error([&] {
              launch_kernel(max_into_unwritten_kernel, dim3(1), dim3(32), 0, fresh.data(),
                            static_cast<const int*>(v.data()));
          }).empty());
    CHECK(argmax(16).empty());
    int b = 0;
    CUDA_CHECK(cudaMemcpy(&b, fresh.data(), 4, cudaMemcpyDeviceToHost));
    CHECK(b == 93);
    CUDA_CHECK(cudaMemcpy(&b, out.data(), 4, cudaMemcpyDeviceToHost));
    CHECK(b == 15);
}

TEST_CASE("emulator checks: a race between the lanes of one warp, half-warp masks between") {
    gpu::Buffer<float> out(32);
    auto run = [&](Halves h) {
        return launch_error(
            [&] { launch_kernel(half_warp_kernel, dim3(1), dim3(32), 0, out.data(), h); });
    };
    const std::string e = run(Halves::own_half);
    CHECK_MESSAGE(e.find("shared-memory race on byte ") != std::string::npos, e);
    CHECK_MESSAGE(e.find("whose mask names both lanes") != std::string::npos, e);
    // A chain of warp operations orders lanes 15 and 16 after the other half's writes; lane 0
    // it does not order after lane 16's.
    CHECK(run(Halves::chain).empty());
    const std::string lane0 = run(Halves::chain_and_lane0);
    CHECK_MESSAGE(lane0.find("thread (0,0,0)") != std::string::npos, lane0);
    CHECK_MESSAGE(lane0.find("thread (16,0,0)") != std::string::npos, lane0);
    CHECK(run(Halves::whole_warp).empty());
    // With the check off the planted race goes unseen: the fiber schedule hides it.
    Without off(emu::check_races);
    CHECK(run(Halves::own_half).empty());
}

TEST_CASE("emulator checks: a host pointer, or a local array read 4 KB past its end") {
    gpu::Buffer<float> out(1);
    // A host vector's data passed to a kernel: its memory is mapped here, so without the check
    // the kernel reads the host's value; a GPU faults.
    std::vector<float> host(100, 7.0f);
    auto host_read = [&] {
        return launch_error([&] {
            launch_kernel(global_read_kernel, dim3(1), dim3(32), 0,
                          static_cast<const float*>(host.data()), out.data(), 3L);
        });
    };
    const std::string h = host_read();
    CHECK_MESSAGE(h.find("host memory in a kernel: thread (0,0,0) (warp 0) of block (0,0,0) "
                         "reads 4 bytes at " +
                         at_line(GLOBAL_READ_KERNEL_LINE + 2)) != std::string::npos,
                  h);
    CHECK_MESSAGE(h.find("no cudaMalloc'd buffer, no shared array and not the thread's own "
                         "stack") != std::string::npos,
                  h);
    // A local array 4 KB past its end: beyond the top of the thread's stack.
    auto local_read = [&](int index) {
        return launch_error(
            [&] { launch_kernel(local_array_kernel, dim3(1), dim3(32), 0, out.data(), index); });
    };
    const std::string l = local_read(8 + 1024);
    CHECK_MESSAGE(l.find("host memory in a kernel: thread (0,0,0) (warp 0) of block (0,0,0) "
                         "reads byte ") != std::string::npos,
                  l);
    CHECK_MESSAGE(l.find(" past the top of its own stack in kernel ") != std::string::npos, l);
    CHECK(local_read(7).empty());  // inside the array
    Without off(emu::check_host_memory);
    CHECK(host_read().empty());
    float o = 0;
    CUDA_CHECK(cudaMemcpy(&o, out.data(), 4, cudaMemcpyDeviceToHost));
    CHECK(o == 7.0f);
    // With the check off the stack's guard is an unnamed fault: the process dies.
    ChildResult r = in_child([&] { return local_read(8 + 1024); });
    CHECK_FALSE(r.exited);
}

TEST_CASE("emulator checks: a global read past a buffer's end or before its start") {
    gpu::Buffer<float> out(1);
    struct Case {
        long index;
        const char* expect;
    };
    for (Case c : {Case{100, "byte 400 of a cudaMalloc'd buffer of 400 bytes, past its end"},
                   Case{1000, "byte 4000 of a cudaMalloc'd buffer of 400 bytes, past its end"},
                   Case{-1, "4 bytes before the start of a cudaMalloc'd buffer of 400 bytes"}}) {
        CAPTURE(c.index);
        float* in = nullptr;
        CUDA_CHECK(cudaMalloc(&in, 400));  // 100 floats: the slack to 512 bytes is checked too
        ChildResult r = in_child([&] {
            return launch_error([&] {
                launch_kernel(global_read_kernel, dim3(1), dim3(32), 0, in, out.data(), c.index);
            });
        });
        REQUIRE_MESSAGE(r.exited, "the child died: the access was not caught");
        CHECK_MESSAGE(r.text.find("global memory out of bounds: thread (0,0,0) (warp 0) of block "
                                  "(0,0,0) reads 4 bytes at") != std::string::npos,
                      r.text);
        CHECK_MESSAGE(r.text.find(c.expect) != std::string::npos, r.text);
        if (c.index == 100) {  // inside the last page: only the check sees it
            Without off(emu::check_global_bounds);
            CHECK(launch_error([&] {
                      launch_kernel(global_read_kernel, dim3(1), dim3(32), 0, in, out.data(),
                                    c.index);
                  }).empty());
        }
        CUDA_CHECK(cudaFree(in));
    }
}

// Atomics take the bounds and alignment checks of a plain access (not the race check): an
// atomic one past a buffer's end, inside the buffer's last page (no fault), is named with the
// atomic's line; so is one at an address not a multiple of its size, which x86 carries out
// but a GPU faults on.
TEST_CASE("emulator checks: an atomic past a buffer's end, or misaligned, is named") {
    int* p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, 200));  // 50 ints: byte 200 is the first past the end
    CUDA_CHECK(cudaMemset(p, 0, 200));  // (an atomic reads its int: written first)
    auto run = [&](long offset, Atomic op) {
        return launch_error(
            [&] { launch_kernel(atomic_kernel, dim3(1), dim3(32), 0, p, offset, op); });
    };
    for (Atomic op : {Atomic::add, Atomic::add_float, Atomic::sub, Atomic::max, Atomic::min,
                      Atomic::exch, Atomic::cas}) {
        CAPTURE(int(op));
        const std::string e = run(200, op);
        CHECK_MESSAGE(e.find("global memory out of bounds: thread (0,0,0) (warp 0) of block "
                             "(0,0,0) atomically updates 4 bytes at " +
                             at_line(atomic_line(op))) != std::string::npos,
                      e);
        CHECK_MESSAGE(e.find("byte 200 of a cudaMalloc'd buffer of 200 bytes, past its end") !=
                          std::string::npos,
                      e);
        CHECK(run(196, op).empty());  // the last int
        const std::string m = run(2, op);
        CHECK_MESSAGE(m.find("misaligned 4-byte atomic update of ") != std::string::npos, m);
        CHECK_MESSAGE(m.find("(2 bytes past a 4-byte boundary) by thread (0,0,0) (warp 0) of "
                             "block (0,0,0) at " +
                             at_line(atomic_line(op))) != std::string::npos,
                      m);
        CHECK_MESSAGE(m.find("an atomic needs an address aligned to its size") != std::string::npos,
                      m);
        Without off(emu::check_global_bounds);
        CHECK(run(200, op).empty());
    }
    // (in a child: a misaligned atomic may fault where the processor refuses it)
    ChildResult r = in_child([&] {
        Without off(emu::check_alignment);
        return run(2, Atomic::add);
    });
    CHECK_MESSAGE(r.text.find("misaligned") == std::string::npos, r.text);
    CUDA_CHECK(cudaFree(p));
    // In shared memory: before the array's start. Without the check the atomic's write is found
    // in the padding only when the block ends, with neither thread nor line.
    gpu::Buffer<int> out(1);
    auto shared = [&](int index) {
        return launch_error(
            [&] { launch_kernel(shared_atomic_kernel, dim3(1), dim3(64), 0, out.data(), index); });
    };
    const std::string e = shared(-1);
    CHECK_MESSAGE(e.find("shared memory out of bounds: thread (0,0,0) (warp 0) of block (0,0,0) "
                         "atomically updates 4 bytes at") != std::string::npos,
                  e);
    CHECK_MESSAGE(e.find("4 bytes before the start of shared array `count`") != std::string::npos,
                  e);
    CHECK(shared(0).empty());
    Without off(emu::check_shared_bounds);
    CHECK(shared(-1).find("atomically updates") == std::string::npos);
}

// gpu::allocate (cuda/device_memory.cu) asks cudaMalloc for whole 512-byte units and caches
// released blocks: the checks hold a buffer to the bytes asked for, and a released block to none.
TEST_CASE("emulator checks: a read past a gpu::Buffer inside its rounded block, or after release") {
    gpu::Buffer<float> out(1);
    auto read = [&](const float* in, long index) {
        return launch_error([&] {
            launch_kernel(global_read_kernel, dim3(1), dim3(32), 0, in, out.data(), index);
        });
    };
    {
        gpu::Buffer<float> in(100);  // 400 bytes, of a block of 512
        CUDA_CHECK(cudaMemset(in.data(), 0, 400));  // (read: written first)
        const std::string e = read(in.data(), 100);
        CHECK_MESSAGE(e.find("global memory out of bounds: thread (0,0,0) (warp 0) of block "
                             "(0,0,0) reads 4 bytes at") != std::string::npos,
                      e);
        CHECK_MESSAGE(e.find("byte 400 of a buffer of 400 bytes from gpu::allocate (its "
                             "cudaMalloc'd block: 512 bytes), past its end") != std::string::npos,
                      e);
        CHECK(read(in.data(), 99).empty());
        Without off(emu::check_global_bounds);
        CHECK(read(in.data(), 100).empty());
    }
    const float* released = nullptr;
    {
        gpu::Buffer<float> in(128);
        CUDA_CHECK(cudaMemset(in.data(), 0, 512));
        released = in.data();
        CHECK(read(released, 0).empty());
    }
    const std::string e = read(released, 0);
    CHECK_MESSAGE(e.find("byte 0 of a cudaMalloc'd block of 512 bytes in gpu::allocate's cache "
                         "(released: no buffer holds it)") != std::string::npos,
                  e);
    // A cached block lent again, for fewer bytes: held to those.
    gpu::Buffer<float> again(50);
    CUDA_CHECK(cudaMemset(again.data(), 0, 200));
    CHECK(read(again.data(), 49).empty());
    const std::string a = read(again.data(), 50);
    CHECK_MESSAGE(a.find("byte 200 of a buffer of 200 bytes from gpu::allocate (its cudaMalloc'd "
                         "block: 512 bytes), past its end") != std::string::npos,
                  a);
}

TEST_CASE("emulator checks: a shared read before an array's start or in its padding") {
    gpu::Buffer<float> out(1);
    for (int index : {-1, -3}) {
        CAPTURE(index);
        auto run = [&] {
            return launch_error([&] {
                launch_kernel(shared_read_kernel, dim3(1), dim3(64), 0, out.data(), index);
            });
        };
        const std::string e = run();
        CHECK_MESSAGE(e.find("shared memory out of bounds: thread (0,0,0) (warp 0) of block "
                             "(0,0,0) reads 4 bytes at") != std::string::npos,
                      e);
        CHECK_MESSAGE(e.find(std::to_string(-4 * index) +
                             " bytes before the start of shared array `row`") != std::string::npos,
                      e);
        Without off(emu::check_shared_bounds);
        CHECK(run().empty());  // it reads the NaN padding, unseen
    }
}

TEST_CASE("emulator checks: an overrun from one carved shared tile into the next") {
    gpu::Buffer<float> out(1);
    auto run = [&](int index, bool by_hand) {
        return launch_error([&] {
            launch_kernel(carved_kernel, dim3(1), dim3(32), 64 * sizeof(float), out.data(), index,
                          by_hand);
        });
    };
    ChildResult r = in_child([&] { return run(32, false); });
    REQUIRE_MESSAGE(r.exited, "the child died: the access was not caught");
    CHECK_MESSAGE(r.text.find("shared memory out of bounds") != std::string::npos, r.text);
    CHECK_MESSAGE(r.text.find("byte 128 of shared tile `ta`") != std::string::npos, r.text);
    CHECK_MESSAGE(r.text.find("carved from the dynamic shared memory") != std::string::npos,
                  r.text);
    CHECK(run(31, false).empty());
    // Carved by hand the overrun reads b[0]: a valid address, nothing to see.
    CHECK(run(32, true).empty());
    float v = 0;
    CUDA_CHECK(cudaMemcpy(&v, out.data(), 4, cudaMemcpyDeviceToHost));
    CHECK(v == 2.0f);
    // Tiles that do not fit the launch's dynamic shared memory.
    const std::string small = launch_error([&] {
        launch_kernel(carved_kernel, dim3(1), dim3(32), 40 * sizeof(float), out.data(), 0, false);
    });
    CHECK_MESSAGE(small.find("shared tile `tb`") != std::string::npos, small);
    CHECK_MESSAGE(small.find("fewer bytes than the tiles") != std::string::npos, small);
}

// On a GPU a tile is at its offset into the dynamic shared memory: a float4 access to a float
// tile carved 4 bytes past a 16-byte boundary faults, and so does any access to a float4 tile
// carved there. The emulator gives each tile an array of its own, placed as the offset is.
TEST_CASE("emulator checks: a carved tile misaligned for its accesses, or its type") {
    gpu::Buffer<float> out(1);
    auto run = [&](int skip, bool as_float4) {
        return launch_error([&] {
            launch_kernel(carved_vector_kernel, dim3(1), dim3(32), 32 * sizeof(float),
                          out.data(), skip, as_float4);
        });
    };
    const std::string v = run(1, false);
    CHECK_MESSAGE(v.find("misaligned 16-byte load from") != std::string::npos, v);
    CHECK_MESSAGE(v.find("(4 bytes past a 16-byte boundary)") != std::string::npos, v);
    CHECK(run(4, false).empty());
    float sum = 0;
    CUDA_CHECK(cudaMemcpy(&sum, out.data(), 4, cudaMemcpyDeviceToHost));
    CHECK(sum == 6.0f);  // 0 + 1 + 2 + 3
    const std::string t = run(3, true);
    CHECK_MESSAGE(t.find("shared tile `t4`") != std::string::npos, t);
    CHECK_MESSAGE(t.find("starts at byte 12 of the dynamic shared memory, not a multiple of its "
                         "type's alignment (16 bytes)") != std::string::npos,
                  t);
    CHECK(run(4, true).empty());
    // With the alignment check off the float tile's float4 read goes unseen.
    Without off(emu::check_alignment);
    CHECK(run(1, false).empty());
}

// A struct's members through a pointer misaligned for the struct: the check follows the type's
// alignment, not the width of the loads g++ emits.
TEST_CASE("emulator checks: a float4's members through a misaligned pointer are named") {
    const std::vector<float> host = {1, 2, 3, 4, 5, 6, 7, 8};
    gpu::Buffer<float> p(8), out(1);
    CUDA_CHECK(cudaMemcpy(p.data(), host.data(), 8 * sizeof(float), cudaMemcpyHostToDevice));
    auto run = [&](int offset) {
        return launch_error([&] {
            launch_kernel(float4_members_kernel, dim3(1), dim3(32), 0, p.data(), out.data(),
                          offset);
        });
    };
    auto result = [&] {
        float sum = 0;
        CUDA_CHECK(cudaMemcpy(&sum, out.data(), 4, cudaMemcpyDeviceToHost));
        return sum;
    };
    const std::string e = run(1);
    CHECK_MESSAGE(e.find("misaligned member access within float4 at ") != std::string::npos, e);
    CHECK_MESSAGE(e.find("(4 bytes past a 16-byte boundary) by thread ") != std::string::npos, e);
    CHECK_MESSAGE(
        e.find("test_emulator_checks.cpp:" + std::to_string(FLOAT4_MEMBERS_LINE)) !=
            std::string::npos,
        e);
    CHECK(run(4).empty());
    CHECK(result() == 26.0f);  // 5 + 6 + 7 + 8
    // With the alignment check off the four 4-byte loads pass.
    Without off(emu::check_alignment);
    CHECK(run(1).empty());
    CHECK(result() == 14.0f);  // 2 + 3 + 4 + 5
}

// ---- __launch_bounds__, checked at every launch without a hand-written call ---------------
// The three spellings nvcc accepts; none has CHECK_LAUNCH_BOUNDS in its body: the build's
// cuda/emu/launch_bounds.pl inserts it.
__global__ void __launch_bounds__(64) bounds_after_void(int* out) { out[threadIdx.x] = 1; }
__global__ __launch_bounds__(64) void bounds_before_void(int* out) { out[threadIdx.x] = 2; }
__launch_bounds__(64, 2) __global__ void bounds_first(int* out) { out[threadIdx.x] = 3; }

// A kernel declared __launch_bounds__(64): 128 threads are refused, naming the bounds; 64 run.
static void check_bounds_64(void (*k)(int*), int* out) {
    const std::string e = launch_error([&] { launch_kernel(k, dim3(1), dim3(128), 0, out); });
    CHECK_MESSAGE(e.find("128 threads per block, over the kernel's __launch_bounds__(64)") !=
                      std::string::npos,
                  e);
    CHECK(launch_error([&] { launch_kernel(k, dim3(1), dim3(64), 0, out); }).empty());
}

TEST_CASE("emulator checks: a block over __launch_bounds__, without a hand-written check") {
    gpu::Buffer<int> out(128);
    for (void (*k)(int*) : {bounds_after_void, bounds_before_void, bounds_first})
        check_bounds_64(k, out.data());
}

// Launch bounds reached through macros (one that expands to __launch_bounds__, on two kernels;
// a parameterised one), declared on a prototype whose definition repeats none, and the text
// "__launch_bounds__(64) {" in host code's string literals, which must stay as written: the
// build preprocesses each source before cuda/emu/launch_bounds.pl reads it.
#define EMU_TEST_BOUNDS __launch_bounds__(64)
#define EMU_TEST_LB(n) __launch_bounds__(n)
__global__ void EMU_TEST_BOUNDS bounds_macro_a(int* out) { out[threadIdx.x] = 4; }
__global__ void EMU_TEST_BOUNDS bounds_macro_b(int* out) { out[threadIdx.x] = 5; }
__global__ void EMU_TEST_LB(2 * 32) bounds_macro_param(int* out) { out[threadIdx.x] = 6; }
__global__ void __launch_bounds__(64) bounds_prototype(int* out);
__global__ void bounds_prototype(int* out) { out[threadIdx.x] = 7; }
const char* bounds_text() { return "__launch_bounds__(64) { not code"; }
int bounds_host_code(const char* name) {
    if (std::string(name) == "__launch_bounds__(64)") { return 1; }
    return 0;
}

TEST_CASE("emulator checks: __launch_bounds__ through macros, and never in a string literal") {
    gpu::Buffer<int> out(128);
    for (void (*k)(int*) : {bounds_macro_a, bounds_macro_b, bounds_macro_param, bounds_prototype})
        check_bounds_64(k, out.data());
    // (Its length: an insertion into the literal would change this line's literal as well.)
    CHECK(std::string(bounds_text()).size() == 32);
    // Host code after such a literal runs as written (a check there would fault: no block).
    const ChildResult r =
        in_child([] { return std::to_string(bounds_host_code("__launch_bounds__(64)")); });
    CHECK(r.exited);
    CHECK_MESSAGE(r.text == "1", r.text);
}
#endif
