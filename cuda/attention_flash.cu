// Fused attention, FlashAttention style: the (n, n) score matrix never exists in memory. Two
// versions (FlashVersion, cuda/kernels.h), to be read in order; both mirror
// attention_fused_forward/backward in common/kernels/attention.h (same names, same buffers) and are
// tested against it and a double-precision reference under the emulator.
//
//   Q, K, V, O, dO, dQ, dK, dV: (B, h, n, d_k)     L: (B, h, n) row logsumexp of S
//   scratch: Dvec (B, h, n) = rowsum(dO * O)        d_k <= 128 (templated on D = 32, 64, 128)
//
// Paper names: Br query rows per tile, Bc key rows per tile, Tr = ceil(n / Br) query tiles,
// Tc = ceil(n / Bc) key tiles, S_ij = Q_i K_j^T / sqrt(d_k), m the running row max, l the
// running row sum of exp(s - m), L = m + log l, and the backward's D_i = rowsum(dO_i * O_i)
// (called Dvec here, since D is the head width the kernels are templated on: d_k rounded up to
// 32, 64 or 128, zero-padded).
//
// ---- from version 1 to version 2 ----------------------------------------------------------
// 1 simple          One thread per row; a block is one warp, Br = Bc = 32.
//   forward         Thread t keeps row t of Q_i and of O_i in registers. For each key tile j
//                   the block loads K_j and V_j into shared memory, the thread puts its row's
//                   Bc scores into its column of S_ij, then runs the online softmax one step
//                   per line: m_new, the rescale of l and O by exp(m - m_new), P_ij, l, O.
//   backward        Two passes that each own their rows, so nothing is added twice to one
//                   number: dQ in the forward's shape (thread = query row, K_j and V_j tiles),
//                   dK and dV with the roles swapped (thread = key row, Q_i and dO_i tiles).
//                   Both recompute P_ij = exp(S_ij - L_i) from the forward's L, and both need
//                   S_ij and dP_ij: 7 products of n^2 d_k multiply-adds, where one pass has 5.
//   Every multiply-add takes one operand from shared memory, and the 32 lanes of the warp read
//   the same address at once (a broadcast: one access serves the warp). The rows are 16-byte
//   aligned, so the compiler reads them as float4: 1 shared load per 4 FMAs in the forward,
//   1 per 6 in dQ and 1 per 8 in dK/dV (there a row of the tile feeds two products and stays
//   in registers between them). What it costs is registers: whole rows, 2 (forward), 3 (dQ) or
//   4 (dK/dV) of D floats per thread plus the tile row in flight. At D = 64 the forward fits in
//   registers; dQ and dK/dV reach ptxas's 255 and spill to local memory; at D = 128 all three
//   spill (make cuda-ptxas-report: ptxas's figures). And every score is one chain of D
//   dependent FMAs: a warp issues one of them per FMA latency, and only other warps fill the
//   gaps.
// 2 register_tiled  FlashAttention-2's tiling with register tiles, like the register-tiled
//                   sgemm (the default). What changes, and why:
//   - A row's work is split over 8 threads and a thread works on 4 rows: every tile product is
//     a (64 x 64) or (64 x D) block product of 128 threads, each holding a 4 x 8 (or 4 x D/8)
//     fragment of the result. A thread keeps 32 independent sums instead of one chain, and
//     never a whole row: no spills at any D.
//   - Its operands come from shared memory as float4, different ones in every lane, each float
//     used by 4 or 8 FMAs: 12 float4 loads per 128 FMAs (1 per 10.7).
//   - Br = Bc = 64: each K_j, V_j read from global memory serves twice as many query rows.
//   - The backward is one pass per key tile, dQ added to global memory with atomics, as
//     FlashAttention-2 does: 5 products, not 7.
//   - Exponentials in base 2 on the special-function unit, float4 global loads where aligned.
//   Occupancy is not what it buys: version 2's registers and shared memory per block leave an
//   SM about as many warps as version 1's registers do.
// gpu-bench times version 1 beside version 2 (and both beside the naive path) on a GPU.
//
// ---- version 2 in detail ------------------------------------------------------------------
// The block: 128 threads, tid = 8 tr + tc, so the 8 threads that share a row of S (same tr)
// are 8 neighbouring lanes of one warp and reduce the row's max and sum with __shfl_xor_sync.
// Two fragment shapes:
//   S fragment (Br x Bc tiles: S, P, dP, dS)   rows tr + 16 i (i < 4), keys tc + 8 j (j < 8)
//   O fragment (64 x D tiles: O, dQ)           rows tr + 16 i (i < 4), columns 4 tc + 32 c + e
//                                              (c < D / 32, e < 4): D / 8 columns per thread
//   O fragment (dK, dV: rows are keys)         keys 4 tr + i, the same columns
// Strided rows and keys (tr + 16 i, tc + 8 j rather than 4 tr + i, 8 tc + j) put the lanes of
// a warp on consecutive rows of Q_i and K_j: rows are D + 4 floats apart, 4 banks, so their
// float4 reads fall in different banks. dK and dV read P and dS down a column instead, where
// 4 consecutive keys are one float4.
//
// Shared memory: every tile is stored row-major as in global memory, rows padded by 4 floats.
//   forward   Qs (Br, D + 4) Q_i    Ks (Bc, D + 4) K_j    Vs (Bc, D + 4) V_j
//             Ps (Br, Bc + 4) P_ij = exp(S_ij - m_i)      D = 32 / 64 / 128: 44 / 68 / 116 KB
//   backward  Ks, Vs (Bc, D + 4) K_j, V_j (kept for the whole block)
//             Qs, dOs (Br, D + 4) Q_i, dO_i    Ps, dSs (Br, Bc + 4) P_ij, dS_ij
//             Ls, Ds (Br) L_i, D_i                  D = 32 / 64 / 128: 70.5 / 102.5 / 166.5 KB
//
//   forward   grid (Tr, B*h): one block per (query tile i, b*h), Br = Bc = 64.
//             S_ij = Q_i K_j^T as an S fragment, the online softmax on it (the rows' m and l
//             in registers, l summed over the 8 lanes only at the end), P_ij to shared
//             memory, then O_i = diag(exp(m_old - m_new)) O_i + P_ij V_j as an O fragment.
//             Causal: only j <= i, and the grid runs the last (longest) query tiles first.
//   backward  grid (Tc, B*h): one block per (key tile j, b*h), Bc = Br = 64, walking the
//             query tiles i (causal: i >= j only). S_ij and dP_ij = dO_i V_j^T as S
//             fragments, P_ij = exp(S_ij - L_i), dS_ij = P_ij (dP_ij - D_i); then
//             dV_j += P_ij^T dO_i and dK_j += dS_ij^T Q_i as O fragments (rows = keys) kept in
//             registers over the whole walk, and dQ_i += dS_ij K_j, added to global memory
//             with atomics because every key tile contributes to the same rows (as
//             FlashAttention-2 does).
//
// Exponentials in base 2, as FlashAttention-2 computes them: the scores are scaled by
// scale * log2(e) instead of scale, so e^(s - m) becomes 2^(s' - m'), one FFMA and one
// special-function instruction (ex2.approx.ftz; expf takes about 8, with its range checks).
// The row maxima m live in that base-2 scale; L is stored in natural log as before.
//
// Global loads are float4 only when the host has checked that every base pointer is 16-byte
// aligned and d_k % 4 == 0 (then each row starts aligned); otherwise a guarded scalar path.
#include "cuda/kernels.h"
#include "cuda/launch.h"

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>

#if defined(__CUDACC__)
#define FA_UNROLL _Pragma("unroll")
#define FA_UNROLL_2 _Pragma("unroll 2")
#define FA_UNROLL_4 _Pragma("unroll 4")
#else
// (the emulator: left to the compiler, as WT_UNROLL in cuda/sgemm.cu)
#define FA_UNROLL
#define FA_UNROLL_2
#define FA_UNROLL_4
#endif

// ---- version 1: one thread per row -----------------------------------------------------------
// A block is one warp. Each thread owns one row (a query row in the forward and dQ, a key row in
// dK/dV), keeps that row and its result in registers, and the block loads the other side one
// tile at a time into shared memory, where all 32 threads read the same element at once (a
// broadcast). The loops over d run over D, d_k rounded up to 32, 64 or 128, and are unrolled so
// that the row arrays are registers; the tiles are zero past d_k and past n.
namespace flash_v1 {

constexpr int Br = 32, Bc = 32;  // query rows, key rows per tile: one row per thread
static_assert(Br == Bc, "the dK/dV pass loads L_i and D_i one row per thread");

// Rows row0 .. row0 + R - 1 of X (n, d_k) into tile (R, D): consecutive threads read consecutive
// floats of a row, so the warp's global reads coalesce.
template <int R, int D>
__device__ void load_tile(float (&tile)[R][D], const float* X, int row0, int n, int d_k) {
    for (int e = threadIdx.x; e < R * D; e += blockDim.x) {
        const int r = e / D, d = e % D;
        tile[r][d] = row0 + r < n && d < d_k ? X[(long)(row0 + r) * d_k + d] : 0.0f;
    }
}
// Row `row` of X into registers (each thread its own row: these reads do not coalesce, but
// they happen once per kernel).
template <int D>
__device__ void load_row(float (&x)[D], const float* X, int row, int n, int d_k) {
    FA_UNROLL
    for (int d = 0; d < D; d++)
        x[d] = row < n && d < d_k ? X[(long)row * d_k + d] : 0.0f;
}
template <int D>
__device__ void store_row(float* X, int row, int d_k, const float (&x)[D], float mul) {
    FA_UNROLL
    for (int d = 0; d < D; d++)
        if (d < d_k) X[(long)row * d_k + d] = mul * x[d];
}

// Forward. Block (i, b h): query tile Q_i, rows i Br + t; thread t owns one of them.
template <int D>
__global__ void __launch_bounds__(Br)
forward_kernel(const float* Q, const float* K, const float* V, float* O, float* L, int n,
               int d_k, float scale, bool causal) {
    SHARED(float, Kj, [Bc][D]);    // K_j (16-byte rows: float4 reads)
    SHARED(float, Vj, [Bc][D]);    // V_j
    SHARED(float, Sij, [Bc][Br]);  // S_ij, thread t's row in column t
    const long head = (long)blockIdx.y * n * d_k;
    Q += head, K += head, V += head, O += head, L += (long)blockIdx.y * n;
    const int row0 = blockIdx.x * Br, row = row0 + threadIdx.x;
    float q[D], o[D];  // the row of Q_i; the row of O_i, unnormalised
    load_row(q, Q, row, n, d_k);
    FA_UNROLL
    for (int d = 0; d < D; d++)
        o[d] = 0.0f;
    float m = -INFINITY, l = 0.0f;  // running max of the row's scores, sum of exp(s - m)
    // j = 0 .. Tc - 1, Tc = ceil(n / Bc); causal: only the tiles up to the block's last row.
    const int kv_end = causal ? min(n, row0 + Br) : n;
    for (int col0 = 0; col0 < kv_end; col0 += Bc) {
        __syncthreads();  // everyone is done with K_{j-1} and V_{j-1}
        load_tile(Kj, K, col0, n, d_k);
        load_tile(Vj, V, col0, n, d_k);
        __syncthreads();  // K_j and V_j are complete
        // S_ij = scale Q_i K_j^T: this row's Bc scores, in this thread's column of Sij (masked
        // keys get -inf, so exp gives 0). Key 0 is in the first tile and visible to every row:
        // from then on m is finite.
        float m_ij = -INFINITY;  // rowmax(S_ij)
        for (int c = 0; c < Bc; c++) {
            float dot = 0.0f;
            FA_UNROLL
            for (int d = 0; d < D; d++)
                dot += q[d] * Kj[c][d];
            const int key = col0 + c;
            const float s = key < n && !(causal && key > row) ? scale * dot : -INFINITY;
            Sij[c][threadIdx.x] = s;
            m_ij = fmaxf(m_ij, s);
        }
        // m_new = max(m, rowmax(S_ij)): l and O were summed relative to the old m, so both
        // shrink by exp(m - m_new) before this tile's terms join them.
        const float m_new = fmaxf(m, m_ij), alpha = expf(m - m_new);
        l *= alpha;
        FA_UNROLL
        for (int d = 0; d < D; d++)
            o[d] *= alpha;
        // P_ij = exp(S_ij - m_new);  l += rowsum(P_ij);  O_i += P_ij V_j
        for (int c = 0; c < Bc; c++) {
            const float p = expf(Sij[c][threadIdx.x] - m_new);
            l += p;
            FA_UNROLL
            for (int d = 0; d < D; d++)
                o[d] += p * Vj[c][d];
        }
        m = m_new;
    }
    if (row >= n) return;
    // O_i = O_i / l;  L_i = m + log l, the row's logsumexp: all the backward keeps of softmax.
    store_row(O, row, d_k, o, 1.0f / l);
    L[row] = m + logf(l);
}

// Backward, in two passes that each own their rows, so no two threads add to the same number
// (FlashAttention-2 does both in one pass and adds dQ with atomics, as version 2 does). Both
// recompute P_ij = exp(S_ij - L_i) from the forward's L: no max, no rescaling, L is final.
//   dS_ij = P_ij (dP_ij - D_i),  dP_ij = dO_i V_j^T,  D_i = rowsum(dO_i O_i) (Dvec)
// dQ: block (i, b h), thread t owns query row i Br + t and walks the key tiles j, like the
// forward: dQ_i = scale sum_j dS_ij K_j.
template <int D>
__global__ void __launch_bounds__(Br)
backward_dq_kernel(const float* Q, const float* K, const float* V, const float* dO,
                   const float* L, const float* Dvec, float* dQ, int n, int d_k, float scale,
                   bool causal) {
    SHARED(float, Kj, [Bc][D]);  // K_j (16-byte rows: float4 reads)
    SHARED(float, Vj, [Bc][D]);  // V_j
    const long head = (long)blockIdx.y * n * d_k;
    Q += head, K += head, V += head, dO += head, dQ += head;
    L += (long)blockIdx.y * n, Dvec += (long)blockIdx.y * n;
    const int row0 = blockIdx.x * Br, row = row0 + threadIdx.x;
    float q[D], dout[D], dq[D];  // the rows of Q_i, dO_i, dQ_i
    load_row(q, Q, row, n, d_k);
    load_row(dout, dO, row, n, d_k);
    FA_UNROLL
    for (int d = 0; d < D; d++)
        dq[d] = 0.0f;
    const float L_i = row < n ? L[row] : 0.0f, D_i = row < n ? Dvec[row] : 0.0f;
    const int kv_end = causal ? min(n, row0 + Br) : n;
    for (int col0 = 0; col0 < kv_end; col0 += Bc) {
        __syncthreads();  // everyone is done with K_{j-1} and V_{j-1}
        load_tile(Kj, K, col0, n, d_k);
        load_tile(Vj, V, col0, n, d_k);
        __syncthreads();  // K_j and V_j are complete
        for (int c = 0; c < Bc; c++) {
            const int key = col0 + c;
            if (key >= n || (causal && key > row)) continue;  // P_ij = 0, so dS_ij = 0
            float s = 0.0f, dp = 0.0f;
            FA_UNROLL
            for (int d = 0; d < D; d++)
                s += q[d] * Kj[c][d], dp += dout[d] * Vj[c][d];
            const float p = expf(scale * s - L_i);  // P_ij
            const float ds = p * (dp - D_i);        // dS_ij
            FA_UNROLL
            for (int d = 0; d < D; d++)
                dq[d] += ds * Kj[c][d];  // dQ_i += dS_ij K_j
        }
    }
    if (row < n) store_row(dQ, row, d_k, dq, scale);
}

// dK, dV: the same walk with the roles swapped. Block (j, b h), thread t owns key row j Bc + t
// and walks the query tiles i (causal: only those that reach this tile's keys), with Q_i, dO_i
// and the rows' L_i, D_i in shared memory:
//   dV_j = sum_i P_ij^T dO_i,  dK_j = scale sum_i dS_ij^T Q_i.
template <int D>
__global__ void __launch_bounds__(Bc)
backward_dkdv_kernel(const float* Q, const float* K, const float* V, const float* dO,
                     const float* L, const float* Dvec, float* dK, float* dV, int n, int d_k,
                     float scale, bool causal) {
    SHARED(float, Qi, [Br][D]);   // Q_i (16-byte rows: float4 reads)
    SHARED(float, dOi, [Br][D]);  // dO_i
    SHARED(float, Li, [Br]);      // L_i
    SHARED(float, Di, [Br]);      // D_i
    const long head = (long)blockIdx.y * n * d_k;
    Q += head, K += head, V += head, dO += head, dK += head, dV += head;
    L += (long)blockIdx.y * n, Dvec += (long)blockIdx.y * n;
    const int col0 = blockIdx.x * Bc, key = col0 + threadIdx.x;
    float k[D], v[D], dk[D], dv[D];  // the rows of K_j, V_j, dK_j, dV_j
    load_row(k, K, key, n, d_k);
    load_row(v, V, key, n, d_k);
    FA_UNROLL
    for (int d = 0; d < D; d++)
        dk[d] = dv[d] = 0.0f;
    // i = 0 .. Tr - 1, Tr = ceil(n / Br); causal: rows before col0 see none of these keys.
    for (int row0 = causal ? col0 / Br * Br : 0; row0 < n; row0 += Br) {
        __syncthreads();  // everyone is done with Q_{i-1}, dO_{i-1}, L_{i-1}, D_{i-1}
        load_tile(Qi, Q, row0, n, d_k);
        load_tile(dOi, dO, row0, n, d_k);
        const int r = row0 + threadIdx.x;
        Li[threadIdx.x] = r < n ? L[r] : 0.0f;  // Br == blockDim.x: one each
        Di[threadIdx.x] = r < n ? Dvec[r] : 0.0f;
        __syncthreads();  // Q_i, dO_i, L_i, D_i are complete
        for (int c = 0; c < Br; c++) {
            const int row = row0 + c;
            if (row >= n || (causal && key > row)) continue;  // P_ij = 0, so dS_ij = 0
            float s = 0.0f, dp = 0.0f;
            FA_UNROLL
            for (int d = 0; d < D; d++)
                s += Qi[c][d] * k[d], dp += dOi[c][d] * v[d];
            const float p = expf(scale * s - Li[c]);  // P_ij
            const float ds = p * (dp - Di[c]);        // dS_ij
            FA_UNROLL
            for (int d = 0; d < D; d++)
                dv[d] += p * dOi[c][d], dk[d] += ds * Qi[c][d];
        }
    }
    if (key >= n) return;
    store_row(dK, key, d_k, dk, scale);
    store_row(dV, key, d_k, dv, 1.0f);
}

}  // namespace flash_v1

// ---- version 2: register tiles, the pieces ----------------------------------------------------
// 128 threads per block, Br = Bc = 64; every tile product is a register-tiled block product (the
// file header draws the fragments and the shared-memory layout).
namespace flash_v2 {

constexpr int FA_BR = 64, FA_BC = 64;  // Br query rows, Bc key rows per tile
constexpr int FA_THREADS = 128;         // 16 x 8 threads (tr, tc)
constexpr int FA_LDP = FA_BC + 4;       // row stride of the P and dS tiles

template <int D>
constexpr int FA_LD = D + 4;            // row stride of the Q, K, V, dO tiles

// Max and sum over the 8 lanes that share a row (lanes 8k .. 8k + 7).
__device__ __forceinline__ float row8_max(float v) {
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
    return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 4));
}
__device__ __forceinline__ float row8_sum(float v) {
    v += __shfl_xor_sync(0xffffffffu, v, 1);
    v += __shfl_xor_sync(0xffffffffu, v, 2);
    return v + __shfl_xor_sync(0xffffffffu, v, 4);
}

// 2^x on the special-function unit, results below 2^-126 flushed to zero (a probability that
// small is 0 in float32 softmax anyway). The emulator computes the same value in float.
__device__ __forceinline__ float exp2_approx(float x) {
#if defined(__CUDA_ARCH__)
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
#else
    return std::exp2(x);
#endif
}
constexpr float FA_LOG2E = 1.4426950408889634f, FA_LN2 = 0.6931471805599453f;

__device__ __forceinline__ float4 lds4(const float* p) {
    return *reinterpret_cast<const float4*>(p);
}

// Rows [row0, row0 + 64) of a (n, d_k) matrix into a (64, D + 4) shared tile, zeros past n and
// past d_k (so the products can run over the full width D). Thread t always takes the same
// float4 column, 4 (t % (D / 4)), of rows t / (D / 4) + k * (128 / (D / 4)): consecutive
// threads read consecutive float4s of a row, so the global reads coalesce, and no index is
// divided inside the loop. A whole tile (every row below n, d_k = D, aligned) is loaded with
// no checks at all: 8 float4 loads per thread for D = 64, all in flight at once.
template <int D>
__device__ __forceinline__ void fa_load_tile(float* tile, const float* X, int row0, int n,
                                             int d_k, bool vec) {
    constexpr int Q4 = D / 4;                // float4s per row
    constexpr int STEP = FA_THREADS / Q4;    // rows the block covers in one pass
    const int d = 4 * (threadIdx.x % Q4), r0 = threadIdx.x / Q4;
    if (vec && d_k == D && row0 + 64 <= n) {
        const float* x = X + (long)(row0 + r0) * D + d;
        float4 v[64 / STEP];
        FA_UNROLL
        for (int k = 0; k < 64 / STEP; k++)
            v[k] = *reinterpret_cast<const float4*>(x + (long)k * STEP * D);
        FA_UNROLL
        for (int k = 0; k < 64 / STEP; k++)
            *reinterpret_cast<float4*>(tile + (r0 + k * STEP) * FA_LD<D> + d) = v[k];
        return;
    }
    FA_UNROLL
    for (int k = 0; k < 64 / STEP; k++) {
        const int r = r0 + k * STEP, row = row0 + r;
        float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (row < n && d < d_k) {
            const float* x = X + (long)row * d_k + d;
            if (vec) {
                v = *reinterpret_cast<const float4*>(x);
            } else {
                v.x = x[0];
                if (d + 1 < d_k) v.y = x[1];
                if (d + 2 < d_k) v.z = x[2];
                if (d + 3 < d_k) v.w = x[3];
            }
        }
        *reinterpret_cast<float4*>(tile + r * FA_LD<D> + d) = v;
    }
}

// S fragment += A B^T over the width D: acc[i][j] += sum_d A[tr + 16 i][d] * B[tc + 8 j][d].
// A, B: row-major shared tiles with row stride D + 4. Per 4 values of d: 4 + 8 float4 loads
// feed 128 FMAs.
template <int D>
__device__ __forceinline__ void fa_mma_abt(float (&acc)[4][8], const float* A, const float* B,
                                           int tr, int tc) {
    constexpr int ld = FA_LD<D>;
    const float* a = A + tr * ld;
    const float* b = B + tc * ld;
    FA_UNROLL_2
    for (int d = 0; d < D; d += 4) {
        float4 av[4], bv[8];
        FA_UNROLL
        for (int i = 0; i < 4; i++) av[i] = lds4(a + 16 * i * ld + d);
        FA_UNROLL
        for (int j = 0; j < 8; j++) bv[j] = lds4(b + 8 * j * ld + d);
        FA_UNROLL
        for (int i = 0; i < 4; i++) {
            FA_UNROLL
            for (int j = 0; j < 8; j++) {
                acc[i][j] += av[i].x * bv[j].x;
                acc[i][j] += av[i].y * bv[j].y;
                acc[i][j] += av[i].z * bv[j].z;
                acc[i][j] += av[i].w * bv[j].w;
            }
        }
    }
}

// acc[i][4 c + e] += b.{x,y,z,w}[e] * a: one row of an O fragment times a scalar.
template <int D>
__device__ __forceinline__ void fa_axpy_row(float (&acc)[D / 8], float a, const float* brow,
                                            int tc) {
    FA_UNROLL
    for (int c = 0; c < D / 32; c++) {
        const float4 b = lds4(brow + 4 * tc + 32 * c);
        acc[4 * c + 0] += a * b.x;
        acc[4 * c + 1] += a * b.y;
        acc[4 * c + 2] += a * b.z;
        acc[4 * c + 3] += a * b.w;
    }
}

// O fragment += A B over 64 keys: acc[i][.] += sum_k A[tr + 16 i][k] * B[k][4 tc + 32 c + e].
// A: (64, Bc + 4) P or dS tile, B: (64, D + 4) V or K tile.
template <int D>
__device__ __forceinline__ void fa_mma_ab(float (&acc)[4][D / 8], const float* A,
                                          const float* B, int tr, int tc) {
    const float* a = A + tr * FA_LDP;
    FA_UNROLL_2
    for (int k = 0; k < 64; k += 4) {
        float4 av[4];
        FA_UNROLL
        for (int i = 0; i < 4; i++) av[i] = lds4(a + 16 * i * FA_LDP + k);
        const float* b = B + k * FA_LD<D>;
        FA_UNROLL
        for (int i = 0; i < 4; i++) {
            fa_axpy_row<D>(acc[i], av[i].x, b, tc);
            fa_axpy_row<D>(acc[i], av[i].y, b + FA_LD<D>, tc);
            fa_axpy_row<D>(acc[i], av[i].z, b + 2 * FA_LD<D>, tc);
            fa_axpy_row<D>(acc[i], av[i].w, b + 3 * FA_LD<D>, tc);
        }
    }
}

// O fragment += A^T B over 64 query rows: acc[i][.] += sum_r A[r][4 tr + i] * B[r][4 tc + ..].
// A: (64, Bc + 4) P or dS tile read down its columns (the fragment's rows are keys),
// B: (64, D + 4) dO or Q tile.
template <int D>
__device__ __forceinline__ void fa_mma_atb(float (&acc)[4][D / 8], const float* A,
                                           const float* B, int tr, int tc) {
    FA_UNROLL_4
    for (int r = 0; r < 64; r++) {
        const float4 a = lds4(A + r * FA_LDP + 4 * tr);
        const float* b = B + r * FA_LD<D>;
        fa_axpy_row<D>(acc[0], a.x, b, tc);
        fa_axpy_row<D>(acc[1], a.y, b, tc);
        fa_axpy_row<D>(acc[2], a.z, b, tc);
        fa_axpy_row<D>(acc[3], a.w, b, tc);
    }
}

// Write an O fragment row (columns 4 tc + 32 c + e) times `mul` into row `row` of a (n, d_k)
// matrix; columns past d_k are padding and are dropped. Atomic: add instead of store (dQ: every
// key tile adds to the same rows); sm_90 has a float4 atomicAdd for global memory, one
// operation instead of four.
template <int D, bool Atomic>
__device__ __forceinline__ void fa_write_row(float* X, int row, int d_k, const float (&acc)[D / 8],
                                             float mul, int tc, bool vec) {
    FA_UNROLL
    for (int c = 0; c < D / 32; c++) {
        const int d = 4 * tc + 32 * c;
        if (d >= d_k) break;
        float* x = X + (long)row * d_k + d;
        const float4 v = make_float4(mul * acc[4 * c], mul * acc[4 * c + 1], mul * acc[4 * c + 2],
                                     mul * acc[4 * c + 3]);
        if (vec && !Atomic) {
            *reinterpret_cast<float4*>(x) = v;
        } else if (vec) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
            atomicAdd(reinterpret_cast<float4*>(x), v);
#else
            atomicAdd(x, v.x), atomicAdd(x + 1, v.y), atomicAdd(x + 2, v.z), atomicAdd(x + 3, v.w);
#endif
        } else {
            const float parts[4] = {v.x, v.y, v.z, v.w};
            for (int e = 0; e < 4 && d + e < d_k; e++)
                if (Atomic) atomicAdd(x + e, parts[e]);
                else x[e] = parts[e];
        }
    }
}

// ---- version 2: forward ---------------------------------------------------------------------
template <int D>
size_t forward_smem() {
    return sizeof(float) * (size_t(FA_BR + 2 * FA_BC) * FA_LD<D> + FA_BR * FA_LDP);
}

// At most 170 registers, so that 3 blocks fit an SM's 64K registers as they fit its shared
// memory for D = 64 (3 x 68 KB).
template <int D>
__global__ void __launch_bounds__(FA_THREADS, 3)
forward_kernel(const float* Q, const float* K, const float* V, float* O,
                               float* L, int n, int d_k, float scale, bool causal, bool vec) {
    constexpr int ld = FA_LD<D>;
    DYNAMIC_SHARED(float, smem);  // carved into the tiles (each bounds-checked by the emulator)
    SHARED_TILE(float, Qs, smem, FA_BR * ld);     // (Br, D + 4)    Q_i
    SHARED_TILE(float, Ks, smem, FA_BC * ld);     // (Bc, D + 4)    K_j
    SHARED_TILE(float, Vs, smem, FA_BC * ld);     // (Bc, D + 4)    V_j
    SHARED_TILE(float, Ps, smem, FA_BR * FA_LDP); // (Br, Bc + 4)   P_ij, unnormalised
    const int tr = threadIdx.x / 8, tc = threadIdx.x % 8;
    const long head = (long)blockIdx.y * n * d_k;
    Q += head, K += head, V += head, O += head;
    L += (long)blockIdx.y * n;
    // Causal: query tile i sees i + 1 key tiles; start the longest ones first.
    const int tile = causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
    const int row0 = tile * FA_BR;

    fa_load_tile<D>(Qs, Q, row0, n, d_k, vec);
    float m[4], l[4];  // rows tr + 16 i: running max, and this thread's part of the running sum
    float o[4][D / 8] = {};  // O fragment, unnormalised
    FA_UNROLL
    for (int i = 0; i < 4; i++) m[i] = -INFINITY, l[i] = 0.0f;
    const int kv_end = causal ? min(n, row0 + FA_BR) : n;
    const float scale2 = scale * FA_LOG2E;  // scores in base 2: 2^(s scale2) = e^(s scale)
    for (int col0 = 0; col0 < kv_end; col0 += FA_BC) {
        __syncthreads();  // everyone is done with the previous K_j, V_j (and Q_i is loaded)
        fa_load_tile<D>(Ks, K, col0, n, d_k, vec);
        fa_load_tile<D>(Vs, V, col0, n, d_k, vec);
        __syncthreads();  // K_j and V_j are complete

        float s[4][8] = {};  // S_ij fragment: rows tr + 16 i, keys tc + 8 j
        fa_mma_abt<D>(s, Qs, Ks, tr, tc);
        // Only the last key tile (keys past n) and, causal, the diagonal tile have masked keys.
        const bool edge = col0 + FA_BC > n || (causal && col0 + FA_BC - 1 > row0);
        FA_UNROLL
        for (int i = 0; i < 4; i++) {
            const int row = row0 + tr + 16 * i;
            float m_tile = -INFINITY;
            FA_UNROLL
            for (int j = 0; j < 8; j++) {
                const int key = col0 + tc + 8 * j;
                const bool visible = !edge || (key < n && !(causal && key > row));
                s[i][j] = visible ? s[i][j] * scale2 : -INFINITY;
                m_tile = fmaxf(m_tile, s[i][j]);
            }
            // Online softmax: the new max, and how much the old sum and O shrink relative to it.
            const float m_new = fmaxf(m[i], row8_max(m_tile));
            const bool empty = m_new == -INFINITY;  // every key so far masked: keep 0, not NaN
            const float alpha = empty ? 1.0f : exp2_approx(m[i] - m_new);
            float l_tile = 0.0f;
            FA_UNROLL
            for (int j = 0; j < 8; j++) {
                const float p = empty ? 0.0f : exp2_approx(s[i][j] - m_new);
                Ps[(tr + 16 * i) * FA_LDP + tc + 8 * j] = p;
                l_tile += p;
            }
            l[i] = alpha * l[i] + l_tile;
            m[i] = m_new;
            FA_UNROLL
            for (int c = 0; c < D / 8; c++) o[i][c] *= alpha;
        }
        // The rows of P this thread reads next were written by the 8 lanes of its own row group.
        __syncwarp();
        fa_mma_ab<D>(o, Ps, Vs, tr, tc);  // O_i += P_ij V_j
    }
    FA_UNROLL
    for (int i = 0; i < 4; i++) {
        const float l_row = row8_sum(l[i]);  // all 8 lanes take part, rows past n included
        const int row = row0 + tr + 16 * i;
        if (row >= n) continue;
        fa_write_row<D, false>(O, row, d_k, o[i], 1.0f / l_row, tc, vec);
        // The logsumexp of S's row, in natural log: all the backward needs.
        if (tc == 0) L[row] = (m[i] + log2f(l_row)) * FA_LN2;
    }
}

// ---- version 2: backward --------------------------------------------------------------------
template <int D>
size_t backward_smem() {
    return sizeof(float) *
           (size_t(2 * FA_BC + 2 * FA_BR) * FA_LD<D> + 2 * FA_BR * FA_LDP + 2 * FA_BR);
}

template <int D>
__global__ void __launch_bounds__(FA_THREADS)
backward_kernel(const float* Q, const float* K, const float* V, const float* dO,
                                const float* L, const float* Dvec, float* dQ, float* dK,
                                float* dV, int n, int d_k, float scale, bool causal, bool vec) {
    constexpr int ld = FA_LD<D>;
    DYNAMIC_SHARED(float, smem);  // carved into the tiles (each bounds-checked by the emulator)
    SHARED_TILE(float, Ks, smem, FA_BC * ld);       // (Bc, D + 4)    K_j
    SHARED_TILE(float, Vs, smem, FA_BC * ld);       // (Bc, D + 4)    V_j
    SHARED_TILE(float, Qs, smem, FA_BR * ld);       // (Br, D + 4)    Q_i
    SHARED_TILE(float, dOs, smem, FA_BR * ld);      // (Br, D + 4)    dO_i
    SHARED_TILE(float, Ps, smem, FA_BR * FA_LDP);   // (Br, Bc + 4)   P_ij
    SHARED_TILE(float, dSs, smem, FA_BR * FA_LDP);  // (Br, Bc + 4)   dS_ij
    SHARED_TILE(float, Ls, smem, FA_BR);            // (Br)           L_i
    SHARED_TILE(float, Ds, smem, FA_BR);            // (Br)           D_i
    const int tr = threadIdx.x / 8, tc = threadIdx.x % 8;
    const long head = (long)blockIdx.y * n * d_k;
    Q += head, K += head, V += head, dO += head, dQ += head, dK += head, dV += head;
    L += (long)blockIdx.y * n;
    Dvec += (long)blockIdx.y * n;
    const int col0 = blockIdx.x * FA_BC;
    const float scale2 = scale * FA_LOG2E;  // scores in base 2, as in the forward

    fa_load_tile<D>(Ks, K, col0, n, d_k, vec);
    fa_load_tile<D>(Vs, V, col0, n, d_k, vec);
    // O fragments whose rows are keys col0 + 4 tr + i: dK_j (without the scale), dV_j.
    float dk[4][D / 8] = {}, dv[4][D / 8] = {};
    // Causal: query rows before this key tile never see its keys.
    const int row_start = causal ? col0 / FA_BR * FA_BR : 0;
    for (int row0 = row_start; row0 < n; row0 += FA_BR) {
        __syncthreads();  // the previous Q_i, dO_i, P, dS are no longer read (K_j, V_j loaded)
        fa_load_tile<D>(Qs, Q, row0, n, d_k, vec);
        fa_load_tile<D>(dOs, dO, row0, n, d_k, vec);
        if (threadIdx.x < FA_BR) {
            const int row = row0 + threadIdx.x;
            Ls[threadIdx.x] = row < n ? L[row] : 0.0f;
            Ds[threadIdx.x] = row < n ? Dvec[row] : 0.0f;
        }
        __syncthreads();  // Q_i, dO_i, L_i, D_i are complete

        // Recompute P_ij = exp(S_ij - L_i) and form dS_ij = P_ij (dP_ij - D_i).
        float s[4][8] = {}, dp[4][8] = {};  // S fragments: rows tr + 16 i, keys tc + 8 j
        fa_mma_abt<D>(s, Qs, Ks, tr, tc);   // S_ij = Q_i K_j^T (before the scale)
        fa_mma_abt<D>(dp, dOs, Vs, tr, tc); // dP_ij = dO_i V_j^T
        const bool edge = row0 + FA_BR > n || col0 + FA_BC > n ||
                          (causal && col0 + FA_BC - 1 > row0);
        FA_UNROLL
        for (int i = 0; i < 4; i++) {
            const int r = tr + 16 * i, row = row0 + r;
            // Read once (the stores below might alias); L in base 2 like the scores.
            const float L2_r = Ls[r] * FA_LOG2E, D_r = Ds[r];
            FA_UNROLL
            for (int j = 0; j < 8; j++) {
                const int c = tc + 8 * j, key = col0 + c;
                const bool visible = !edge || (row < n && key < n && !(causal && key > row));
                const float p = visible ? exp2_approx(s[i][j] * scale2 - L2_r) : 0.0f;
                Ps[r * FA_LDP + c] = p;
                dSs[r * FA_LDP + c] = p * (dp[i][j] - D_r);
            }
        }
        __syncthreads();  // the products below read every thread's P and dS

        fa_mma_atb<D>(dv, Ps, dOs, tr, tc);  // dV_j += P_ij^T dO_i
        fa_mma_atb<D>(dk, dSs, Qs, tr, tc);  // dK_j += dS_ij^T Q_i
        // dQ_i += scale * dS_ij K_j: the other key tiles add to the same rows concurrently.
        float dq[4][D / 8] = {};
        fa_mma_ab<D>(dq, dSs, Ks, tr, tc);
        FA_UNROLL
        for (int i = 0; i < 4; i++) {
            const int row = row0 + tr + 16 * i;
            if (row < n) fa_write_row<D, true>(dQ, row, d_k, dq[i], scale, tc, vec);
        }
    }
    FA_UNROLL
    for (int i = 0; i < 4; i++) {
        const int key = col0 + 4 * tr + i;
        if (key >= n) continue;
        fa_write_row<D, false>(dK, key, d_k, dk[i], scale, tc, vec);
        fa_write_row<D, false>(dV, key, d_k, dv[i], 1.0f, tc, vec);
    }
}

}  // namespace flash_v2

// ---- host ----------------------------------------------------------------------------------
namespace {

// float4 global accesses are safe when every row starts 16-byte aligned: aligned base
// pointers (cudaMalloc gives 256 bytes; a caller's offset view may not) and d_k % 4 == 0.
bool fa_vectorisable(int d_k, std::initializer_list<const void*> ptrs) {
    if (d_k % 4 != 0) return false;
    for (const void* p : ptrs)
        if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0) return false;
    return true;
}

template <int D>
void forward_launch(FlashVersion version, const float* Q, const float* K, const float* V, float* O,
                    float* L, int B, int h, int n, int d_k, bool causal) {
    const float scale = 1.0f / std::sqrt(float(d_k));
    if (version == FlashVersion::simple) {
        launch_kernel(flash_v1::forward_kernel<D>, dim3(ceil_div(n, flash_v1::Br), B * h),
                      dim3(flash_v1::Br), 0, Q, K, V, O, L, n, d_k, scale, causal);
        return;
    }
    const size_t smem = flash_v2::forward_smem<D>();
    CUDA_CHECK(cudaFuncSetAttribute(flash_v2::forward_kernel<D>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    launch_kernel(flash_v2::forward_kernel<D>, dim3(ceil_div(n, flash_v2::FA_BR), B * h),
                  dim3(flash_v2::FA_THREADS), smem, Q, K, V, O, L, n, d_k, scale, causal,
                  fa_vectorisable(d_k, {Q, K, V, O}));
}

template <int D>
void backward_launch(FlashVersion version, const float* Q, const float* K, const float* V,
                     const float* dO, const float* L, const float* Dvec, float* dQ, float* dK,
                     float* dV, int B, int h, int n, int d_k, bool causal) {
    const float scale = 1.0f / std::sqrt(float(d_k));
    if (version == FlashVersion::simple) {
        launch_kernel(flash_v1::backward_dq_kernel<D>, dim3(ceil_div(n, flash_v1::Br), B * h),
                      dim3(flash_v1::Br), 0, Q, K, V, dO, L, Dvec, dQ, n, d_k, scale, causal);
        launch_kernel(flash_v1::backward_dkdv_kernel<D>, dim3(ceil_div(n, flash_v1::Bc), B * h),
                      dim3(flash_v1::Bc), 0, Q, K, V, dO, L, Dvec, dK, dV, n, d_k, scale, causal);
        return;
    }
    CUDA_CHECK(cudaMemset(dQ, 0, sizeof(float) * (size_t)B * h * n * d_k));  // atomics add up
    const size_t smem = flash_v2::backward_smem<D>();
    CUDA_CHECK(cudaFuncSetAttribute(flash_v2::backward_kernel<D>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    launch_kernel(flash_v2::backward_kernel<D>, dim3(ceil_div(n, flash_v2::FA_BC), B * h),
                  dim3(flash_v2::FA_THREADS), smem, Q, K, V, dO, L, Dvec, dQ, dK, dV, n, d_k, scale,
                  causal, fa_vectorisable(d_k, {Q, K, V, dO, dQ, dK, dV}));
}

void check_head_dim(int d_k) {
    if (d_k < 1 || d_k > 128)
        throw std::invalid_argument("fused attention: d_k = " + std::to_string(d_k) +
                                    " is outside 1..128; use the naive path for wider heads");
}

}  // namespace

// D, the width the kernels are compiled for: d_k rounded up to 32, 64 or 128.
void attention_fused_forward_cuda(const float* Q, const float* K, const float* V, float* O,
                                  float* L, int B, int h, int n, int d_k, bool causal,
                                  FlashVersion version) {
    check_head_dim(d_k);
    if (B * h * n == 0) return;
    if (d_k <= 32)
        forward_launch<32>(version, Q, K, V, O, L, B, h, n, d_k, causal);
    else if (d_k <= 64)
        forward_launch<64>(version, Q, K, V, O, L, B, h, n, d_k, causal);
    else
        forward_launch<128>(version, Q, K, V, O, L, B, h, n, d_k, causal);
}

void attention_fused_backward_cuda(const float* Q, const float* K, const float* V, const float* O,
                                   const float* L, const float* dO, float* dQ, float* dK, float* dV,
                                   int B, int h, int n, int d_k, bool causal,
                                   FlashVersion version) {
    check_head_dim(d_k);
    if (B * h * n == 0) return;
    gpu::Buffer<float> Dvec((size_t)B * h * n);  // (B, h, n) = rowsum(dO * O)
    row_dot_cuda(dO, O, Dvec.data(), B * h * n, d_k);
    const float* Dv = Dvec.data();
    if (d_k <= 32)
        backward_launch<32>(version, Q, K, V, dO, L, Dv, dQ, dK, dV, B, h, n, d_k, causal);
    else if (d_k <= 64)
        backward_launch<64>(version, Q, K, V, dO, L, Dv, dQ, dK, dV, B, h, n, d_k, causal);
    else
        backward_launch<128>(version, Q, K, V, dO, L, Dv, dQ, dK, dV, B, h, n, d_k, causal);
}
