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
//                     The default.
#include "cuda/kernels.h"
#include "cuda/launch.h"

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
    for (int k = 0; k < K; k++) acc += load_a(A, lda, trans_a, i, k) * load_b(B, ldb, trans_b, k, j);
    float& c = C[(long)i * ldc + j];
    c = alpha * acc + (beta == 0.0f ? 0.0f : beta * c);
}

// ---- 2: shared-memory tiles ------------------------------------------------------------------
constexpr int TILE = 16;

__global__ void sgemm_tiled_kernel(bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                                   const float* A, int lda, long stride_a, const float* B,
                                   int ldb, long stride_b, float beta, float* C, int ldc,
                                   long stride_c) {
    __shared__ float As[TILE][TILE + 1];  // (TILE rows of op(A), TILE k)   +1: no bank conflicts
    __shared__ float Bs[TILE][TILE + 1];  // (TILE k, TILE columns of op(B))
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
    __shared__ float As[BK][BM];  // k-major: a thread reads TM consecutive rows of one k
    __shared__ float Bs[BK][BN];
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
// rest addresses. nvcc left some loops over acc rolled unless told, and acc then lived in
// (slow, local) memory; g++ for the emulator needs no hint.
#if defined(__CUDACC__)
#define WT_UNROLL _Pragma("unroll")
#else
#define WT_UNROLL
#endif
constexpr int WT_BM = 128, WT_BN = 128, WT_BK = 8;  // block tile, k-slice depth
constexpr int WT_WM = 64, WT_WN = 32;                 // warp tile
constexpr int WT_MITER = 2, WT_NITER = 2;             // sub-tiles per warp tile, down and across
constexpr int WT_TM = 4, WT_TN = 4;                   // a lane's fragment of one sub-tile
constexpr int WT_SUB_M = WT_WM / WT_MITER, WT_SUB_N = WT_WN / WT_NITER;  // 32x16 sub-tile
constexpr int WT_LANES_N = WT_SUB_N / WT_TN;          // 4 lanes across, 8 down
constexpr int WT_WARPS_N = WT_BN / WT_WN;             // 4 warps across, 2 down
constexpr int WT_THREADS = 32 * (WT_BM / WT_WM) * WT_WARPS_N;  // 256
constexpr int WT_LOADS = WT_BM * WT_BK / 4 / WT_THREADS;        // float4 groups per thread: 1
constexpr int WT_LD = WT_BM + 4;  // shared row: float4-aligned; the +4 makes the transposing
                                  // store conflict-free (2-way without it)
static_assert((WT_SUB_M / WT_TM) * WT_LANES_N == 32, "a sub-tile is one fragment per lane");
static_assert(WT_BM == WT_BN, "A and B slices share the loader below");

// Where thread tid's p-th group of 4 floats lies in a (WT_BM rows) x (WT_BK k) slice of an
// operand: along k when the stored array is (rows, K) (K_CONTIG: A, or B with trans_b), along
// the rows when it is (K, rows). Consecutive threads take consecutive groups, so a warp reads
// 16 rows x 32 bytes (K_CONTIG) or one 512-byte row: whole 32-byte sectors.
template <bool K_CONTIG>
__device__ __forceinline__ void wt_group(int tid, int p, int& r, int& k) {
    const int g = tid + p * WT_THREADS;
    if (K_CONTIG) r = g / (WT_BK / 4), k = g % (WT_BK / 4) * 4;
    else k = g / (WT_BM / 4), r = g % (WT_BM / 4) * 4;
}

// Global -> registers: the slice at rows r0.., k0.. of a (rows, K) operand; zeros outside it.
template <bool K_CONTIG, bool VEC>
__device__ __forceinline__ void wt_load(const float* X, int ld, int rows, int K, int r0, int k0,
                                        int tid, float4 (&v)[WT_LOADS]) {
    WT_UNROLL
    for (int p = 0; p < WT_LOADS; p++) {
        int r, k;
        wt_group<K_CONTIG>(tid, p, r, k);
        r += r0, k += k0;
        const long at = K_CONTIG ? (long)r * ld + k : (long)k * ld + r;  // first of the 4
        const bool whole = K_CONTIG ? (r < rows && k + 3 < K) : (k < K && r + 3 < rows);
        if (VEC && whole) {
            v[p] = *reinterpret_cast<const float4*>(X + at);
        } else {
            float e[4];
            WT_UNROLL
            for (int q = 0; q < 4; q++) {
                const bool in = K_CONTIG ? (r < rows && k + q < K) : (k < K && r + q < rows);
                e[q] = in ? X[at + q] : 0.0f;
            }
            v[p] = make_float4(e[0], e[1], e[2], e[3]);
        }
    }
}

// Registers -> shared, k-major: Xs[k][r]. A group along k becomes 4 scalar stores down a column.
template <bool K_CONTIG>
__device__ __forceinline__ void wt_store(float (*Xs)[WT_LD], const float4 (&v)[WT_LOADS],
                                         int tid) {
    WT_UNROLL
    for (int p = 0; p < WT_LOADS; p++) {
        int r, k;
        wt_group<K_CONTIG>(tid, p, r, k);
        if (K_CONTIG) {
            Xs[k][r] = v[p].x, Xs[k + 1][r] = v[p].y, Xs[k + 2][r] = v[p].z, Xs[k + 3][r] = v[p].w;
        } else {
            *reinterpret_cast<float4*>(&Xs[k][r]) = v[p];
        }
    }
}

template <bool TRANS_A, bool TRANS_B, bool VEC>
__global__ void __launch_bounds__(WT_THREADS, 2)
sgemm_warp_tiled_kernel(int M, int N, int K, float alpha, const float* A, int lda,
                        long stride_a, const float* B, int ldb, long stride_b, float beta,
                        float* C, int ldc, long stride_c) {
    alignas(16) __shared__ float As[2][WT_BK][WT_LD];  // (buffer, k, rows of op(A))
    alignas(16) __shared__ float Bs[2][WT_BK][WT_LD];  // (buffer, k, columns of op(B))
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int row0 = blockIdx.y * WT_BM, col0 = blockIdx.x * WT_BN;
    // This warp's tile in the block tile, and this lane's 4x4 fragment in each sub-tile.
    const int wm = warp / WT_WARPS_N * WT_WM, wn = warp % WT_WARPS_N * WT_WN;
    const int lm = lane / WT_LANES_N * WT_TM, ln = lane % WT_LANES_N * WT_TN;
    A += blockIdx.z * stride_a;
    B += blockIdx.z * stride_b;
    C += blockIdx.z * stride_c;

    // op(A) rows are M, contiguous along k unless trans_a; op(B) "rows" are its N columns,
    // contiguous along k when trans_b.
    float4 a_next[WT_LOADS], b_next[WT_LOADS];
    wt_load<!TRANS_A, VEC>(A, lda, M, K, row0, 0, tid, a_next);
    wt_load<TRANS_B, VEC>(B, ldb, N, K, col0, 0, tid, b_next);
    wt_store<!TRANS_A>(As[0], a_next, tid);
    wt_store<TRANS_B>(Bs[0], b_next, tid);
    __syncthreads();

    float acc[WT_MITER * WT_TM][WT_NITER * WT_TN] = {};  // this thread's 8x8 outputs
    const int slices = (K + WT_BK - 1) / WT_BK;
    for (int s = 0; s < slices; s++) {
        const int cur = s % 2;
        const bool more = s + 1 < slices;
        if (more) {  // issued now, used after the FMAs below: the loads are in flight meanwhile
            wt_load<!TRANS_A, VEC>(A, lda, M, K, row0, (s + 1) * WT_BK, tid, a_next);
            wt_load<TRANS_B, VEC>(B, ldb, N, K, col0, (s + 1) * WT_BK, tid, b_next);
        }
        WT_UNROLL
        for (int k = 0; k < WT_BK; k++) {
            // This lane's column of op(A) and row of op(B) at this k: 2 + 2 float4 loads.
            float a[WT_MITER * WT_TM], b[WT_NITER * WT_TN];
            WT_UNROLL
            for (int mi = 0; mi < WT_MITER; mi++) {
                const float4 t =
                    *reinterpret_cast<const float4*>(&As[cur][k][wm + mi * WT_SUB_M + lm]);
                float* d = a + mi * WT_TM;
                d[0] = t.x, d[1] = t.y, d[2] = t.z, d[3] = t.w;
            }
            WT_UNROLL
            for (int ni = 0; ni < WT_NITER; ni++) {
                const float4 t =
                    *reinterpret_cast<const float4*>(&Bs[cur][k][wn + ni * WT_SUB_N + ln]);
                float* d = b + ni * WT_TN;
                d[0] = t.x, d[1] = t.y, d[2] = t.z, d[3] = t.w;
            }
            WT_UNROLL
            for (int m = 0; m < WT_MITER * WT_TM; m++)
                WT_UNROLL
                for (int n = 0; n < WT_NITER * WT_TN; n++) acc[m][n] += a[m] * b[n];
        }
        if (more) {  // the other buffer was last read in slice s - 1, before its barrier
            wt_store<!TRANS_A>(As[cur ^ 1], a_next, tid);
            wt_store<TRANS_B>(Bs[cur ^ 1], b_next, tid);
        }
        __syncthreads();  // slice s + 1 is complete, and nobody reads buffer cur any more
    }

    // C = alpha * acc + beta * C, a float4 per row of a fragment where it lies inside C.
    WT_UNROLL
    for (int mi = 0; mi < WT_MITER; mi++)
        WT_UNROLL
        for (int i = 0; i < WT_TM; i++)
            WT_UNROLL
            for (int ni = 0; ni < WT_NITER; ni++) {
                const int r = row0 + wm + mi * WT_SUB_M + lm + i;
                const int c = col0 + wn + ni * WT_SUB_N + ln;
                const int m = mi * WT_TM + i, n = ni * WT_TN;  // the fragment row in acc
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
                    for (int q = 0; q < WT_TN; q++)
                        if (c + q < N)
                            out[q] = alpha * acc[m][n + q] + (beta == 0.0f ? 0.0f : beta * out[q]);
                }
            }
}

// One instantiation per transpose pair and alignment; the grid covers C in 128x128 tiles.
template <bool TRANS_A, bool TRANS_B>
static void launch_warp_tiled(bool vec, int M, int N, int K, float alpha, const float* A,
                              int lda, long stride_a, const float* B, int ldb, long stride_b,
                              float beta, float* C, int ldc, long stride_c, int batch) {
    const dim3 grid(ceil_div(N, WT_BN), ceil_div(M, WT_BM), batch);
    auto kernel = vec ? sgemm_warp_tiled_kernel<TRANS_A, TRANS_B, true>
                      : sgemm_warp_tiled_kernel<TRANS_A, TRANS_B, false>;
    launch_kernel(kernel, grid, dim3(WT_THREADS), 0, M, N, K, alpha, A, lda, stride_a, B, ldb,
                  stride_b, beta, C, ldc, stride_c);
}

// float4 accesses need 16-byte alignment at every row start of every batch element.
static bool float4_aligned(const void* p, int ld, long stride, int batch) {
    return reinterpret_cast<uintptr_t>(p) % 16 == 0 && ld % 4 == 0 &&
           (batch == 1 || stride % 4 == 0);
}

void sgemm_cuda(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
                int lda, const float* B, int ldb, float beta, float* C, int ldc, int batch,
                long stride_a, long stride_b, long stride_c, SgemmVersion version) {
    if (M <= 0 || N <= 0 || batch <= 0) return;
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
            const bool vec = float4_aligned(A, lda, stride_a, batch) &&
                             float4_aligned(B, ldb, stride_b, batch) &&
                             float4_aligned(C, ldc, stride_c, batch);
            auto launch = trans_a ? (trans_b ? launch_warp_tiled<true, true>
                                             : launch_warp_tiled<true, false>)
                                  : (trans_b ? launch_warp_tiled<false, true>
                                             : launch_warp_tiled<false, false>);
            launch(vec, M, N, K, alpha, A, lda, stride_a, B, ldb, stride_b, beta, C, ldc,
                   stride_c, batch);
            break;
        }
    }
}
