// sgemm on the GPU in four teaching steps. Batched and row-major, with the transposes the
// attention layer needs (Q K^T is trans_b, P^T dO and dS^T Q are trans_a).
//
//   A: op(A_b) is (M, K), stored (M, lda) or, with trans_a, (K, lda)      b < batch
//   B: op(B_b) is (K, N), stored (K, ldb) or, with trans_b, (N, ldb)
//   C: C_b is (M, N), stored (M, ldc)          X_b = X + b * stride_X
//
// Versions (SgemmVersion):
//   1 naive           one thread per C element; every operand comes from global memory,
//                     K loads of A and of B per output.
//   2 tiled           a 16x16 block loads 16x16 tiles of op(A) and op(B) into shared memory
//                     once and every thread reuses them 16 times: global traffic / 16.
//   3 register_tiled  2D block tiling: a 128x128 C tile per block of 256 threads, BK = 8 deep
//                     slices of A (stored k-major) and B in shared memory, and each thread
//                     keeps an 8x8 sub-tile of C in registers: 64 FMAs per 16 shared loads.
//   4 warp_tiled      the same tiles, with each warp owning a 64x32 piece of the block tile
//                     and each lane 2x2 fragments of 4x4 in it (64 FMAs per 4 float4 shared
//                     loads, no bank conflicts), float4 global loads where the host finds the
//                     operands aligned, and the BK slices double-buffered in shared memory: the
//                     next slice's loads are in flight while the current one is multiplied.
//                     Blocks wholly inside the matrices run a loop without bounds checks.
//                     The default; its tile is 128x64 when C has at most 64 columns, and
//                     gpu-bench times other tile shapes (SgemmTile) beside it.
#include "cuda/kernels.h"
#include "cuda/launch.h"

#include <algorithm>
#include <cstdint>

// op(A)[i][k] and op(B)[k][j] of one batch element.
__device__ __forceinline__ float load_a(const float* A, int lda, bool trans_a, int i, int k) {
    return trans_a ? A[(long)k * lda + i] : A[(long)i * lda + k];
}
__device__ __forceinline__ float load_b(const float* B, int ldb, bool trans_b, int k, int j) {
    return trans_b ? B[(long)j * ldb + k] : B[(long)k * ldb + j];
}

// ---- 1: naive ------------------------------------------------------------------------------
__global__ void sgemm_naive_kernel(bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                                   const float* A, int lda, long stride_a, const float* B,
                                   int ldb, long stride_b, float beta, float* C, int ldc,
                                   long stride_c) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;  // column of C
    int i = blockIdx.y * blockDim.y + threadIdx.y;  // row of C
    A += blockIdx.z * stride_a;
    B += blockIdx.z * stride_b;
    C += blockIdx.z * stride_c;
    if (i >= M || j >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; k++)
        acc += load_a(A, lda, trans_a, i, k) * load_b(B, ldb, trans_b, k, j);
    float& c = C[(long)i * ldc + j];
    c = alpha * acc + (beta == 0.0f ? 0.0f : beta * c);
}

// ---- 2: shared-memory tiles ------------------------------------------------------------------
constexpr int TILE = 16;

__global__ void sgemm_tiled_kernel(bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                                   const float* A, int lda, long stride_a, const float* B,
                                   int ldb, long stride_b, float beta, float* C, int ldc,
                                   long stride_c) {
    SHARED(float, As, [TILE][TILE + 1]);  // (TILE rows of op(A), TILE k)   +1: no bank conflicts
    SHARED(float, Bs, [TILE][TILE + 1]);  // (TILE k, TILE columns of op(B))
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int i = blockIdx.y * TILE + ty, j = blockIdx.x * TILE + tx;
    A += blockIdx.z * stride_a;
    B += blockIdx.z * stride_b;
    C += blockIdx.z * stride_c;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        // Each thread loads one element of each tile; zeros outside the matrix.
        int ka = k0 + tx, kb = k0 + ty;
        As[ty][tx] = (i < M && ka < K) ? load_a(A, lda, trans_a, i, ka) : 0.0f;
        Bs[ty][tx] = (kb < K && j < N) ? load_b(B, ldb, trans_b, kb, j) : 0.0f;
        __syncthreads();  // the tiles are complete before anyone reads them
        for (int k = 0; k < TILE; k++) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();  // everyone is done reading before the next load overwrites
    }
    if (i < M && j < N) {
        float& c = C[(long)i * ldc + j];
        c = alpha * acc + (beta == 0.0f ? 0.0f : beta * c);
    }
}

// ---- 3: register tiles (2D block tiling) -------------------------------------------------------
constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
constexpr int RT_THREADS = (BM / TM) * (BN / TN);  // 256

__global__ void __launch_bounds__(RT_THREADS)
sgemm_register_tiled_kernel(bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                            const float* A, int lda, long stride_a, const float* B, int ldb,
                            long stride_b, float beta, float* C, int ldc, long stride_c) {
    SHARED(float, As, [BK][BM]);  // k-major: a thread reads TM consecutive rows of one k
    SHARED(float, Bs, [BK][BN]);
    const int tid = threadIdx.x;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int tr = tid / (BN / TN), tc = tid % (BN / TN);  // this thread's TM x TN sub-tile
    A += blockIdx.z * stride_a;
    B += blockIdx.z * stride_b;
    C += blockIdx.z * stride_c;

    float acc[TM][TN] = {};
    float a_reg[TM], b_reg[TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
        // BM*BK = 1024 elements of op(A): 4 per thread, consecutive threads on the contiguous
        // axis of the stored array so the loads coalesce.
        for (int e = tid; e < BM * BK; e += RT_THREADS) {
            int ii, kk;
            if (trans_a) ii = e % BM, kk = e / BM;  // stored (K, M): contiguous along i
            else ii = e / BK, kk = e % BK;          // stored (M, K): contiguous along k
            int gi = row0 + ii, gk = k0 + kk;
            As[kk][ii] = (gi < M && gk < K) ? load_a(A, lda, trans_a, gi, gk) : 0.0f;
        }
        for (int e = tid; e < BK * BN; e += RT_THREADS) {
            int kk, jj;
            if (trans_b) jj = e / BK, kk = e % BK;  // stored (N, K): contiguous along k
            else kk = e / BN, jj = e % BN;          // stored (K, N): contiguous along j
            int gk = k0 + kk, gj = col0 + jj;
            Bs[kk][jj] = (gk < K && gj < N) ? load_b(B, ldb, trans_b, gk, gj) : 0.0f;
        }
        __syncthreads();
        for (int k = 0; k < BK; k++) {
            // Registers hold one column of the A sub-tile and one row of the B sub-tile:
            // TM + TN shared loads feed TM * TN FMAs.
            for (int m = 0; m < TM; m++) a_reg[m] = As[k][tr * TM + m];
            for (int nn = 0; nn < TN; nn++) b_reg[nn] = Bs[k][tc * TN + nn];
            for (int m = 0; m < TM; m++)
                for (int nn = 0; nn < TN; nn++) acc[m][nn] += a_reg[m] * b_reg[nn];
        }
        __syncthreads();
    }
    for (int m = 0; m < TM; m++) {
        int i = row0 + tr * TM + m;
        if (i >= M) break;
        for (int nn = 0; nn < TN; nn++) {
            int j = col0 + tc * TN + nn;
            if (j >= N) break;
            float& c = C[(long)i * ldc + j];
            c = alpha * acc[m][nn] + (beta == 0.0f ? 0.0f : beta * c);
        }
    }
}

// ---- 4: warp tiles, float4 loads, double-buffered shared memory --------------------------------
// The same 128x128 C tile per block of 256 threads, BK = 8 and 64 outputs per thread as
// version 3 (also CUTLASS's default tile for fp32 on the CUDA cores, 128x128x8), with the
// changes of the last kernels of the SGEMM_CUDA worklog:
//   - warp tiling: each of the 8 warps owns a 64x32 piece of the block tile (2 warps down,
//     4 across). Its 32 lanes form an 8x4 grid that steps 2x2 times over 32x16 sub-tiles, each
//     lane computing a 4x4 fragment per step. A lane's 8 values of op(A) and 8 of op(B) per k are
//     4 float4 shared loads (version 3: 16 scalar ones) for the same 64 FMAs. Because a lane's
//     4x4 fragments are 32 rows / 16 columns apart rather than one contiguous 8x8, every float4
//     load instruction of a warp reads consecutive float4s (or the same one): no bank conflicts.
//   - float4 global loads: each thread moves groups of 4 consecutive floats along the
//     contiguous axis of the stored array. op(A) is stored k-major in shared memory (a
//     transposing store when A is row-major) so that the inner loop reads float4s along rows.
//   - double buffering: the BK slices alternate between two shared buffers; the next slice's
//     global loads are issued into registers before the current slice's FMAs and written to
//     the other buffer after them, so the memory latency hides behind arithmetic and one
//     __syncthreads per slice suffices.
// The float4 path (VEC) needs every row start 16-byte aligned: the host checks base pointers,
// leading dimensions and batch strides. A group of 4 that crosses the matrix edge, or any
// group when !VEC, is loaded element by element with guards, so any shape is correct.
// The transposes are template parameters: the loads of each of the 4 variants are branch-free.
// 128 registers per thread (2 blocks per SM): acc 64, a and b 16, the prefetched slice 8, the
// rest addresses. nvcc leaves some loops over acc rolled unless told, and acc then lives in
// (slow, local) memory; g++ for the emulator needs no hint. The inner loop reads its fragments
// from one shared address per operand plus constants: indexed as As[cur][k][wm + mi SUB_M + lm]
// instead, ptxas keeps more addresses live and, capped at 128 registers by
// __launch_bounds__(256, 2), spills in the float4 variants (NN among them, the 4096^3 target's
// kernel); this way none of the 8 variants spills. cuda/cuda.mk builds this file with
// -Xptxas -warn-spills: a spill fails the development build.
#if defined(__CUDACC__)
#define WT_UNROLL _Pragma("unroll")
#else
// g++ for the emulator: left to the compiler. Unrolled in full, every tile shape's loops would
// multiply the instrumented code of the access checks, and the compile time with it.
#define WT_UNROLL
#endif
// The shape of the tiles, as one type so that gpu-bench can time other shapes beside the
// default (the register budget, and so the best shape, differs between GPUs).
template <int BM_, int BN_, int BK_, int WM_, int WN_, int MITER_, int NITER_, int MIN_BLOCKS_>
struct WarpTile {
    static constexpr int BM = BM_, BN = BN_, BK = BK_;  // block tile, k-slice depth
    static constexpr int WM = WM_, WN = WN_;            // warp tile
    static constexpr int MITER = MITER_, NITER = NITER_;  // sub-tiles per warp tile, down, across
    static constexpr int TM = 4, TN = 4;                // a lane's fragment of one sub-tile
    static constexpr int MIN_BLOCKS = MIN_BLOCKS_;      // resident blocks per SM (registers)
    static constexpr int SUB_M = WM / MITER, SUB_N = WN / NITER;  // 32x16: one fragment a lane
    static constexpr int LANES_N = SUB_N / TN;                    // 4 lanes across, 8 down
    static constexpr int WARPS_N = BN / WN;
    static constexpr int THREADS = 32 * (BM / WM) * WARPS_N;
    static constexpr int A_LOADS = BM * BK / 4 / THREADS;  // float4 groups per thread and slice
    static constexpr int B_LOADS = BN * BK / 4 / THREADS;
    static constexpr int LDA = BM + 4, LDB = BN + 4;  // shared rows: float4-aligned; the +4
                                                      // makes the transposing store conflict-free
    static_assert((SUB_M / TM) * LANES_N == 32, "a sub-tile is one fragment per lane");
    static_assert(A_LOADS * 4 * THREADS == BM * BK && B_LOADS * 4 * THREADS == BN * BK,
                  "every thread loads the same number of float4 groups");
};
// The default: a 128x128 tile, 8 warps of 64x32, 8x8 outputs a thread, 2 blocks per SM; and
// its half for C at most 64 columns wide, 4 warps, 3 blocks per SM.
using WarpTileDefault = WarpTile<128, 128, 8, 64, 32, 2, 2, 2>;
using WarpTileNarrow = WarpTile<128, 64, 8, 64, 32, 2, 2, 3>;
// The shapes gpu-bench times beside it, all with twice the outputs per thread (8x16: 128 FMAs
// per 6 float4 shared loads instead of 64 per 4, about 215 registers): the same tile with 4
// warps of 64x64 (the SGEMM_CUDA worklog's last shape), and 128x256 or 256x128 tiles of 8
// warps, one block per SM.
using WarpTileQuad = WarpTile<128, 128, 8, 64, 64, 2, 4, 2>;
using WarpTileWide = WarpTile<128, 256, 8, 64, 64, 2, 4, 1>;
using WarpTileTall = WarpTile<256, 128, 8, 128, 32, 4, 2, 1>;

// Where thread tid's p-th group of 4 floats lies in a (ROWS rows) x (BK k) slice of an
// operand: along k when the stored array is (rows, K) (K_CONTIG: A, or B with trans_b), along
// the rows when it is (K, rows). Consecutive threads take consecutive groups, so a warp reads
// whole 32-byte sectors: 16 rows x 32 bytes (K_CONTIG, BK = 8) or 512 bytes of one row.
template <class T, int ROWS, bool K_CONTIG>
__device__ __forceinline__ void wt_group(int tid, int p, int& r, int& k) {
    const int g = tid + p * T::THREADS;
    if (K_CONTIG) r = g / (T::BK / 4), k = g % (T::BK / 4) * 4;
    else k = g / (ROWS / 4), r = g % (ROWS / 4) * 4;
}

// One operand's share of every slice for this thread: LOADS groups of 4 floats. `at` points at
// each group in the current slice and walks along K, so the loop does no index arithmetic
// (the step, BK or BK * ld floats, is the same for every thread: a uniform register).
// GUARD (blocks at the matrix edges): groups are checked against the matrix, with zeros outside
// it, and loaded element by element unless VEC and wholly inside. Without GUARD (blocks wholly
// inside, K a multiple of BK, the float4 path aligned): one float4 load per group, no checks.
template <class T, int ROWS, bool K_CONTIG, int LOADS>
struct WtLoader {
    const float* at[LOADS];
    int r[LOADS], k[LOADS];  // the group's row and k in the matrix (for the guards)

    __device__ __forceinline__ WtLoader(const float* X, int ld, int r0, int tid) {
        WT_UNROLL
        for (int p = 0; p < LOADS; p++) {
            wt_group<T, ROWS, K_CONTIG>(tid, p, r[p], k[p]);
            r[p] += r0;
            at[p] = X + (K_CONTIG ? (long)r[p] * ld + k[p] : (long)k[p] * ld + r[p]);
        }
    }
    template <bool VEC, bool GUARD>
    __device__ __forceinline__ void load(float4 (&v)[LOADS], int rows, int K) const {
        WT_UNROLL
        for (int p = 0; p < LOADS; p++) {
            const bool whole =
                K_CONTIG ? (r[p] < rows && k[p] + 3 < K) : (k[p] < K && r[p] + 3 < rows);
            if (!GUARD || (VEC && whole)) {
                v[p] = *reinterpret_cast<const float4*>(at[p]);
            } else {
                float e[4];
                WT_UNROLL
                for (int q = 0; q < 4; q++) {
                    const bool in =
                        K_CONTIG ? (r[p] < rows && k[p] + q < K) : (k[p] < K && r[p] + q < rows);
                    e[q] = in ? at[p][q] : 0.0f;
                }
                v[p] = make_float4(e[0], e[1], e[2], e[3]);
            }
        }
    }
    __device__ __forceinline__ void next(int ld) {
        WT_UNROLL
        for (int p = 0; p < LOADS; p++) at[p] += K_CONTIG ? T::BK : (long)T::BK * ld, k[p] += T::BK;
    }
};

// Registers -> shared, k-major: Xs[k][r]. A group along k becomes 4 scalar stores down a column.
template <class T, int ROWS, bool K_CONTIG, int LD, int LOADS>
__device__ __forceinline__ void wt_store(float (*Xs)[LD], const float4 (&v)[LOADS], int tid) {
    WT_UNROLL
    for (int p = 0; p < LOADS; p++) {
        int r, k;
        wt_group<T, ROWS, K_CONTIG>(tid, p, r, k);
        if (K_CONTIG) {
            Xs[k][r] = v[p].x, Xs[k + 1][r] = v[p].y, Xs[k + 2][r] = v[p].z, Xs[k + 3][r] = v[p].w;
        } else {
            *reinterpret_cast<float4*>(&Xs[k][r]) = v[p];
        }
    }
}

// The slices of K: acc += op(A) op(B) over this block's tile, double-buffered in As and Bs.
template <class T, bool TRANS_A, bool TRANS_B, bool VEC, bool GUARD>
__device__ __forceinline__ void wt_main_loop(
    const float* A, int lda, const float* B, int ldb, int M, int N, int K, int row0, int col0,
    float (*As)[T::BK][T::LDA], float (*Bs)[T::BK][T::LDB],
    float (&acc)[T::MITER * T::TM][T::NITER * T::TN]) {
    constexpr int BK = T::BK, TM = T::TM, TN = T::TN, MITER = T::MITER, NITER = T::NITER;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    // This warp's tile in the block tile, and this lane's 4x4 fragment in each sub-tile.
    const int wm = warp / T::WARPS_N * T::WM, wn = warp % T::WARPS_N * T::WN;
    const int lm = lane / T::LANES_N * TM, ln = lane % T::LANES_N * TN;
    // op(A) rows are M, contiguous along k unless trans_a; op(B) "rows" are its N columns,
    // contiguous along k when trans_b.
    WtLoader<T, T::BM, !TRANS_A, T::A_LOADS> a_src(A, lda, row0, tid);
    WtLoader<T, T::BN, TRANS_B, T::B_LOADS> b_src(B, ldb, col0, tid);
    float4 a_next[T::A_LOADS], b_next[T::B_LOADS];
    a_src.template load<VEC, GUARD>(a_next, M, K);
    b_src.template load<VEC, GUARD>(b_next, N, K);
    wt_store<T, T::BM, !TRANS_A>(As[0], a_next, tid);
    wt_store<T, T::BN, TRANS_B>(Bs[0], b_next, tid);
    __syncthreads();

    // Where this lane reads its fragments: buffer 0, k = 0; the loop adds constants.
    const float* a_frag = &As[0][0][wm + lm];
    const float* b_frag = &Bs[0][0][wn + ln];
    const int slices = (K + BK - 1) / BK;
    for (int s = 0; s < slices; s++) {
        const int cur = s % 2;
        const bool more = s + 1 < slices;
        if (more) {  // issued now, used after the FMAs below: the loads are in flight meanwhile
            a_src.next(lda), b_src.next(ldb);
            a_src.template load<VEC, GUARD>(a_next, M, K);
            b_src.template load<VEC, GUARD>(b_next, N, K);
        }
        WT_UNROLL
        for (int k = 0; k < BK; k++) {
            // This lane's column of op(A) and row of op(B) at this k: MITER + NITER float4s.
            float a[MITER * TM], b[NITER * TN];
            WT_UNROLL
            for (int mi = 0; mi < MITER; mi++) {
                const float4 t = *reinterpret_cast<const float4*>(
                    a_frag + (cur * BK + k) * T::LDA + mi * T::SUB_M);
                float* d = a + mi * TM;
                d[0] = t.x, d[1] = t.y, d[2] = t.z, d[3] = t.w;
            }
            WT_UNROLL
            for (int ni = 0; ni < NITER; ni++) {
                const float4 t = *reinterpret_cast<const float4*>(
                    b_frag + (cur * BK + k) * T::LDB + ni * T::SUB_N);
                float* d = b + ni * TN;
                d[0] = t.x, d[1] = t.y, d[2] = t.z, d[3] = t.w;
            }
            WT_UNROLL
            for (int m = 0; m < MITER * TM; m++)
                WT_UNROLL
                for (int n = 0; n < NITER * TN; n++) acc[m][n] += a[m] * b[n];
        }
        if (more) {  // the other buffer was last read in slice s - 1, before its barrier
            wt_store<T, T::BM, !TRANS_A>(As[cur ^ 1], a_next, tid);
            wt_store<T, T::BN, TRANS_B>(Bs[cur ^ 1], b_next, tid);
        }
        __syncthreads();  // slice s + 1 is complete, and nobody reads buffer cur any more
    }
}

// Split-K (k_split < K): the K axis is cut into slices of k_split (a multiple of BK), and
// blockIdx.z = batch element * splits + slice. Each slice writes alpha op(A) op(B) over its
// part of K to its own C (beta = 0; C + blockIdx.z * stride_c), and sgemm_split_k_sum adds them.
template <class T, bool TRANS_A, bool TRANS_B, bool VEC>
__global__ void __launch_bounds__(T::THREADS, T::MIN_BLOCKS)
sgemm_warp_tiled_kernel(int M, int N, int K, float alpha, const float* A, int lda,
                        long stride_a, const float* B, int ldb, long stride_b, float beta,
                        float* C, int ldc, long stride_c, int k_split) {
    constexpr int BM = T::BM, BN = T::BN, TM = T::TM, TN = T::TN;
    constexpr int MITER = T::MITER, NITER = T::NITER;
    SHARED(float, As, [2][T::BK][T::LDA]);  // (buffer, k, rows of op(A))
    SHARED(float, Bs, [2][T::BK][T::LDB]);  // (buffer, k, columns of op(B))
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int splits = (K + k_split - 1) / k_split;
    const int batch = blockIdx.z / splits, k0 = blockIdx.z % splits * k_split;
    K = min(K - k0, k_split);
    A += batch * stride_a + (TRANS_A ? (long)k0 * lda : k0);
    B += batch * stride_b + (TRANS_B ? k0 : (long)k0 * ldb);

    float acc[MITER * TM][NITER * TN] = {};  // this thread's outputs (8x8 in the default)
    // Most blocks lie wholly inside the matrices: their loop has no bounds checks at all.
    if (VEC && row0 + BM <= M && col0 + BN <= N && K % T::BK == 0)
        wt_main_loop<T, TRANS_A, TRANS_B, VEC, false>(A, lda, B, ldb, M, N, K, row0, col0, As,
                                                      Bs, acc);
    else
        wt_main_loop<T, TRANS_A, TRANS_B, VEC, true>(A, lda, B, ldb, M, N, K, row0, col0, As,
                                                     Bs, acc);

    // (Everything below is computed again after the loop rather than kept in registers.)
    C += blockIdx.z * stride_c;  // batch element, or batch element and slice of K
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wm = warp / T::WARPS_N * T::WM, wn = warp % T::WARPS_N * T::WN;
    const int lm = lane / T::LANES_N * TM, ln = lane % T::LANES_N * TN;
    // C = alpha * acc + beta * C, a float4 per row of a fragment where it lies inside C.
    WT_UNROLL
    for (int mi = 0; mi < MITER; mi++)
        WT_UNROLL
        for (int i = 0; i < TM; i++)
            WT_UNROLL
            for (int ni = 0; ni < NITER; ni++) {
                const int r = row0 + wm + mi * T::SUB_M + lm + i;
                const int c = col0 + wn + ni * T::SUB_N + ln;
                const int m = mi * TM + i, n = ni * TN;  // the fragment row in acc
                if (r >= M) continue;
                float* out = C + (long)r * ldc + c;
                if (VEC && c + 3 < N) {
                    float4 o = make_float4(alpha * acc[m][n], alpha * acc[m][n + 1],
                                           alpha * acc[m][n + 2], alpha * acc[m][n + 3]);
                    if (beta != 0.0f) {  // beta = 0 never reads C (it may hold NaN)
                        const float4 old = *reinterpret_cast<const float4*>(out);
                        o.x += beta * old.x, o.y += beta * old.y;
                        o.z += beta * old.z, o.w += beta * old.w;
                    }
                    *reinterpret_cast<float4*>(out) = o;
                } else {
                    WT_UNROLL
                    for (int q = 0; q < TN; q++)
                        if (c + q < N)
                            out[q] = alpha * acc[m][n + q] + (beta == 0.0f ? 0.0f : beta * out[q]);
                }
            }
}

namespace {

// One instantiation per tile shape, transpose pair and alignment; the grid covers C in tiles,
// times the batch, times the slices of K when k_split < K.
template <class T, bool TRANS_A, bool TRANS_B>
void launch_warp_tiled(bool vec, int M, int N, int K, float alpha, const float* A, int lda,
                       long stride_a, const float* B, int ldb, long stride_b, float beta, float* C,
                       int ldc, long stride_c, int batch, int k_split) {
    const dim3 grid(ceil_div(N, T::BN), ceil_div(M, T::BM), batch * ceil_div(K, k_split));
    auto kernel = vec ? sgemm_warp_tiled_kernel<T, TRANS_A, TRANS_B, true>
                      : sgemm_warp_tiled_kernel<T, TRANS_A, TRANS_B, false>;
    launch_kernel(kernel, grid, dim3(T::THREADS), 0, M, N, K, alpha, A, lda, stride_a, B, ldb,
                  stride_b, beta, C, ldc, stride_c, k_split);
}

template <class T>
void launch_warp_tiled(bool trans_a, bool trans_b, bool vec, int M, int N, int K, float alpha,
                       const float* A, int lda, long stride_a, const float* B, int ldb,
                       long stride_b, float beta, float* C, int ldc, long stride_c, int batch,
                       int k_split) {
    auto launch = trans_a ? (trans_b ? launch_warp_tiled<T, true, true>
                                     : launch_warp_tiled<T, true, false>)
                          : (trans_b ? launch_warp_tiled<T, false, true>
                                     : launch_warp_tiled<T, false, false>);
    launch(vec, M, N, K, alpha, A, lda, stride_a, B, ldb, stride_b, beta, C, ldc, stride_c,
           batch, k_split);
}

}  // namespace

// ---- few rows: the LSTM's recurrent step ------------------------------------------------------
// C with M <= 16 rows (one LSTM step: the batch rows times W_hh) is too thin for the tiles
// above: a 128-row tile multiplies 120 rows of zeros, and its few blocks leave most SMs idle.
// Each operand is read coalesced, in one of two ways:
//   trans_b (h W^T, B stored (N, K)): one warp per column j of C. Lane l takes k = l, l + 32,
//     ..., so a row of A and row j of B are read 32 consecutive floats at a time; the M sums
//     then meet across the lanes with __shfl_xor_sync. N warps: thousands for 4d = 2048.
//   !trans_b (dG W, B stored (K, N)): one lane per column of C, 32 columns per warp, and the 8
//     warps of a block take 8 slices of K; their partial sums meet in shared memory. That is
//     ceil(N / 32) blocks: 16 for the LSTM's d = 512, so 16 of an H200's 132 SMs would hold 8
//     warps each (1.5% of its 8448 warp slots) and stream W_hh's 4 MB per step with few loads
//     in flight. So the blocks also split K (gridDim.y slices of k_split, up to one block per
//     SM in all; 8 slices at d = 512, 128 blocks), each writing its partial C, and
//     sgemm_split_k_sum adds the slices: two launches instead of one, each step. gpu-bench
//     times it against the one-pass kernel (SgemmTile::few_rows_one_pass).
// A is never transposed here (the LSTM's A is h or dG, row-major); its rows are small and stay
// in L1. These are the sgemm the default picks for M <= 16 (SgemmTile::automatic).
constexpr int FEW_ROWS = 16;

__global__ void __launch_bounds__(256)
sgemm_few_rows_nt_kernel(int M, int N, int K, float alpha, const float* A, int lda,
                         long stride_a, const float* B, int ldb, long stride_b, float beta,
                         float* C, int ldc, long stride_c) {
    const int lane = threadIdx.x % 32, j = blockIdx.x * 8 + threadIdx.x / 32;  // column of C
    if (j >= N) return;  // the whole warp leaves together
    A += blockIdx.z * stride_a;
    B += blockIdx.z * stride_b + (long)j * ldb;  // row j of B: column j of op(B)
    C += blockIdx.z * stride_c;
    float acc[FEW_ROWS] = {};
    for (int k = lane; k < K; k += 32) {
        const float b = B[k];
        WT_UNROLL
        for (int m = 0; m < FEW_ROWS; m++)
            if (m < M) acc[m] += A[(long)m * lda + k] * b;
    }
    WT_UNROLL
    for (int m = 0; m < FEW_ROWS; m++) {
        if (m >= M) break;  // M is the same for the whole warp
        float v = acc[m];
        for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
        if (lane == 0) {
            float& c = C[(long)m * ldc + j];
            c = alpha * v + (beta == 0.0f ? 0.0f : beta * c);
        }
    }
}

// Block (x, y, z): columns 32 x .. 32 x + 31 of batch element z, k in [y k_split, (y + 1)
// k_split). With one slice (gridDim.y = 1) it writes C; with several, slice y writes
// alpha * its partial sums to C + (z gridDim.y + y) stride_c, beta = 0.
__global__ void __launch_bounds__(256)
sgemm_few_rows_nn_kernel(int M, int N, int K, float alpha, const float* A, int lda,
                         long stride_a, const float* B, int ldb, long stride_b, float beta,
                         float* C, int ldc, long stride_c, int k_split) {
    SHARED(float, partial, [8][FEW_ROWS][32]);  // (warp, row of C, lane)
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int j = blockIdx.x * 32 + lane;  // this lane's column of C
    A += blockIdx.z * stride_a;
    B += blockIdx.z * stride_b;
    C += (blockIdx.z * gridDim.y + blockIdx.y) * stride_c;
    const int k_lo = blockIdx.y * k_split, k_hi = min(K, k_lo + k_split);
    const int slice = (k_hi - k_lo + 7) / 8, k0 = k_lo + warp * slice, k1 = min(k_hi, k0 + slice);
    float acc[FEW_ROWS] = {};
    if (j < N)
        for (int k = k0; k < k1; k++) {
            const float b = B[(long)k * ldb + j];  // 32 lanes: 32 consecutive floats
            WT_UNROLL
            for (int m = 0; m < FEW_ROWS; m++)
                if (m < M) acc[m] += A[(long)m * lda + k] * b;  // one address for the warp
        }
    WT_UNROLL
    for (int m = 0; m < FEW_ROWS; m++) partial[warp][m][lane] = acc[m];
    __syncthreads();  // every warp's partial sums are in shared memory
    for (int e = threadIdx.x; e < M * 32; e += blockDim.x) {
        const int m = e / 32, l = e % 32, col = blockIdx.x * 32 + l;
        float v = 0.0f;
        for (int w = 0; w < 8; w++) v += partial[w][m][l];
        if (col < N) {
            float& c = C[(long)m * ldc + col];
            c = alpha * v + (beta == 0.0f ? 0.0f : beta * c);
        }
    }
}

// ---- the slices of a split K added up, and K = 0 --------------------------------------------
// C_b = sum_s W_{b splits + s} + beta C_b, the slices in order (the same bits on every run).
//   W: (batch * splits) partial results of (M, ldw), stride_w apart      C_b: (M, ldc)
__global__ void __launch_bounds__(256)
sgemm_split_k_sum_kernel(const float* W, int splits, int ldw, long stride_w, int M, int N,
                         float beta, float* C, int ldc, long stride_c) {
    const long e = blockIdx.x * 256L + threadIdx.x;  // element (i, j) of C_b
    if (e >= (long)M * N) return;
    const int i = int(e / N), j = int(e % N);
    W += (long)blockIdx.z * splits * stride_w + (long)i * ldw + j;
    float v = 0.0f;
    for (int s = 0; s < splits; s++) v += W[s * stride_w];
    float& c = C[blockIdx.z * stride_c + (long)i * ldc + j];
    c = v + (beta == 0.0f ? 0.0f : beta * c);
}

// K = 0: op(A) op(B) is an empty sum, C_b = beta C_b (beta = 0 reads nothing: C may hold NaN).
__global__ void __launch_bounds__(256)
sgemm_scale_kernel(int M, int N, float beta, float* C, int ldc, long stride_c) {
    const long e = blockIdx.x * 256L + threadIdx.x;
    if (e >= (long)M * N) return;
    float& c = C[blockIdx.z * stride_c + e / N * ldc + e % N];
    c = beta == 0.0f ? 0.0f : beta * c;
}

namespace {

// float4 accesses need 16-byte alignment at every row start of every batch element.
bool float4_aligned(const void* p, int ld, long stride, int batch) {
    return reinterpret_cast<uintptr_t>(p) % 16 == 0 && ld % 4 == 0 &&
           (batch == 1 || stride % 4 == 0);
}

// The device's SM count, asked once (the emulator reports an H200's 132).
int sm_count() {
    static const int count = [] {
        int device = 0, sms = 0;
        CUDA_CHECK(cudaGetDevice(&device));
        CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
        return sms;
    }();
    return count;
}

// Split-K: a grid of fewer blocks than SMs (the weight gradients' 512 x 512 or 1536 x 512 C
// with K = B n = 131072: 16 or 48 tiles) cuts K into slices until about `slots` blocks run at
// once, each slice at least SPLIT_K_MIN_DEPTH deep and at most SPLIT_K_MAX of them. Returns the
// slice length (a multiple of `step`); K itself means no split.
constexpr int SPLIT_K_MIN_DEPTH = 512, SPLIT_K_MAX = 16;
int split_k_length(long blocks, int K, int slots, int min_depth, int step) {
    if (blocks >= sm_count()) return K;
    const long splits = std::min<long>({slots / blocks, K / min_depth, SPLIT_K_MAX});
    if (splits <= 1) return K;
    const int length = (ceil_div(K, splits) + step - 1) / step * step;
    return length >= K ? K : length;
}

// The few-rows kernels: trans_b always runs in one pass (N warps); !trans_b splits K until the
// column blocks fill the SMs once, slices at least 256 deep (32 a warp).
int few_rows_k_split(bool trans_b, int N, int K, int batch, SgemmTile tile) {
    if (trans_b || tile == SgemmTile::few_rows_one_pass) return K;
    return split_k_length(long(ceil_div(N, 32)) * batch, K, sm_count(), 256, 8);
}
int warp_tiled_k_split(int M, int N, int K, int batch, SgemmTile tile) {
    if (tile != SgemmTile::automatic) return K;  // the explicit tiles run as asked (gpu-bench)
    const bool narrow = N <= 64;
    const int BM_ = narrow ? WarpTileNarrow::BM : WarpTileDefault::BM;
    const int BN_ = narrow ? WarpTileNarrow::BN : WarpTileDefault::BN;
    const int min_blocks = narrow ? WarpTileNarrow::MIN_BLOCKS : WarpTileDefault::MIN_BLOCKS;
    const long blocks = long(ceil_div(M, BM_)) * ceil_div(N, BN_) * batch;
    return split_k_length(blocks, K, sm_count() * min_blocks, SPLIT_K_MIN_DEPTH,
                          WarpTileDefault::BK);
}
bool takes_few_rows(int M, bool trans_a, SgemmTile tile) {
    return (tile == SgemmTile::automatic || tile == SgemmTile::few_rows_one_pass) &&
           M <= FEW_ROWS && !trans_a;
}

// C_b = sum of the slices + beta C_b, from the (batch * splits) partial products in W.
void split_k_sum(const float* W, int splits, int ldw, int M, int N, float beta, float* C, int ldc,
                 int batch, long stride_c) {
    launch_kernel(sgemm_split_k_sum_kernel, dim3(ceil_div(long(M) * N, 256), 1, batch),
                  dim3(256), 0, W, splits, ldw, long(M) * ldw, M, N, beta, C, ldc, stride_c);
}

}  // namespace

int sgemm_k_splits(bool trans_a, bool trans_b, int M, int N, int K, int batch,
                   SgemmVersion version, SgemmTile tile) {
    if (M <= 0 || N <= 0 || K <= 0 || batch <= 0 || version != SgemmVersion::warp_tiled) return 1;
    const int length = takes_few_rows(M, trans_a, tile)
                           ? few_rows_k_split(trans_b, N, K, batch, tile)
                           : warp_tiled_k_split(M, N, K, batch, tile);
    return ceil_div(K, length);
}

void sgemm_cuda(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
                int lda, const float* B, int ldb, float beta, float* C, int ldc, int batch,
                long stride_a, long stride_b, long stride_c, SgemmVersion version,
                SgemmTile tile) {
    if (M <= 0 || N <= 0 || batch <= 0) return;
    if (K <= 0) {  // no operand is read: the tiled kernels' prologue would load a first slice
        launch_kernel(sgemm_scale_kernel, dim3(ceil_div(long(M) * N, 256), 1, batch), dim3(256),
                      0, M, N, beta, C, ldc, stride_c);
        return;
    }
    switch (version) {
        case SgemmVersion::naive:
            launch_kernel(sgemm_naive_kernel, dim3(ceil_div(N, 16), ceil_div(M, 16), batch),
                          dim3(16, 16), 0, trans_a, trans_b, M, N, K, alpha, A, lda, stride_a,
                          B, ldb, stride_b, beta, C, ldc, stride_c);
            break;
        case SgemmVersion::tiled:
            launch_kernel(sgemm_tiled_kernel, dim3(ceil_div(N, TILE), ceil_div(M, TILE), batch),
                          dim3(TILE, TILE), 0, trans_a, trans_b, M, N, K, alpha, A, lda,
                          stride_a, B, ldb, stride_b, beta, C, ldc, stride_c);
            break;
        case SgemmVersion::register_tiled:
            launch_kernel(sgemm_register_tiled_kernel,
                          dim3(ceil_div(N, BN), ceil_div(M, BM), batch), dim3(RT_THREADS), 0,
                          trans_a, trans_b, M, N, K, alpha, A, lda, stride_a, B, ldb, stride_b,
                          beta, C, ldc, stride_c);
            break;
        case SgemmVersion::warp_tiled: {
            if (takes_few_rows(M, trans_a, tile)) {
                if (trans_b) {
                    launch_kernel(sgemm_few_rows_nt_kernel, dim3(ceil_div(N, 8), 1, batch),
                                  dim3(256), 0, M, N, K, alpha, A, lda, stride_a, B, ldb,
                                  stride_b, beta, C, ldc, stride_c);
                    break;
                }
                const int k_split = few_rows_k_split(trans_b, N, K, batch, tile);
                const int splits = ceil_div(K, k_split);
                const dim3 grid(ceil_div(N, 32), splits, batch);
                if (splits == 1) {
                    launch_kernel(sgemm_few_rows_nn_kernel, grid, dim3(256), 0, M, N, K, alpha, A,
                                  lda, stride_a, B, ldb, stride_b, beta, C, ldc, stride_c, K);
                    break;
                }
                gpu::Buffer<float> W(size_t(batch) * splits * M * N);  // (batch, splits, M, N)
                launch_kernel(sgemm_few_rows_nn_kernel, grid, dim3(256), 0, M, N, K, alpha, A,
                              lda, stride_a, B, ldb, stride_b, 0.0f, W.data(), N, long(M) * N,
                              k_split);
                split_k_sum(W.data(), splits, N, M, N, beta, C, ldc, batch, stride_c);
                break;
            }
            const bool vec = float4_aligned(A, lda, stride_a, batch) &&
                             float4_aligned(B, ldb, stride_b, batch) &&
                             float4_aligned(C, ldc, stride_c, batch);
            const int k_split = warp_tiled_k_split(M, N, K, batch, tile);
            if (tile == SgemmTile::automatic)
                tile = N <= 64 ? SgemmTile::b128x64t8x8 : SgemmTile::b128x128t8x8;
            auto launch = tile == SgemmTile::b128x64t8x8     ? launch_warp_tiled<WarpTileNarrow>
                          : tile == SgemmTile::b128x128t8x16 ? launch_warp_tiled<WarpTileQuad>
                          : tile == SgemmTile::b128x256t8x16 ? launch_warp_tiled<WarpTileWide>
                          : tile == SgemmTile::b256x128t16x8 ? launch_warp_tiled<WarpTileTall>
                                                             : launch_warp_tiled<WarpTileDefault>;
            if (k_split == K) {
                launch(trans_a, trans_b, vec, M, N, K, alpha, A, lda, stride_a, B, ldb, stride_b,
                       beta, C, ldc, stride_c, batch, K);
                break;
            }
            // Each slice into its own (M, ldw) partial product, rows padded to float4s.
            const int splits = ceil_div(K, k_split), ldw = (N + 3) / 4 * 4;
            gpu::Buffer<float> W(size_t(batch) * splits * M * ldw);  // (batch, splits, M, ldw)
            const bool vec_w = float4_aligned(A, lda, stride_a, batch) &&
                               float4_aligned(B, ldb, stride_b, batch);
            launch(trans_a, trans_b, vec_w, M, N, K, alpha, A, lda, stride_a, B, ldb, stride_b,
                   0.0f, W.data(), ldw, long(M) * ldw, batch, k_split);
            split_k_sum(W.data(), splits, ldw, M, N, beta, C, ldc, batch, stride_c);
            break;
        }
    }
}
