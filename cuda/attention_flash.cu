// Fused attention, FlashAttention-2 style: the (n, n) score matrix never exists in memory.
// Mirrors attention_fused_forward/backward in common/attention.h (same names, same buffers).
//
//   Q, K, V, O, dO, dQ, dK, dV: (B, h, n, d_k)     L: (B, h, n) row logsumexp of S
//   scratch: Dvec (B, h, n) = rowsum(dO * O)        d_k <= 128 (templated on D = 32, 64, 128)
//
// Paper names: Br query rows per tile, Bc key rows per tile, Tr = ceil(n / Br) query tiles,
// Tc = ceil(n / Bc) key tiles, m the running row max, l the running row sum of exp(s - m),
// L = m + log l, and the backward's D_i = rowsum(dO_i * O_i) (called Dvec here, since D is the
// head width the kernels are templated on: d_k rounded up to 32, 64 or 128, zero-padded).
//
// Versions:
//   1 (replaced)  4 threads per query row, every dot product reading both operands from
//                 shared memory: about 2 shared loads per FMA, so shared-memory bound.
//   2 (this file) register tiles, like the register-tiled sgemm: every tile product is a
//                 (64 x 64) or (64 x D) block of 128 threads in which thread (tr, tc), tr < 16,
//                 tc < 8, keeps a 4 x 8 (or 4 x D/8) fragment of the result in registers and
//                 reads its operands as float4 from shared memory: 12 float4 loads per 128 FMAs.
//
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
#define FA_UNROLL
#define FA_UNROLL_2
#define FA_UNROLL_4
#endif

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

// ---- forward -------------------------------------------------------------------------------
template <int D>
size_t fused_forward_smem() {
    return sizeof(float) * (size_t(FA_BR + 2 * FA_BC) * FA_LD<D> + FA_BR * FA_LDP);
}

// At most 170 registers, so that 3 blocks fit an SM's 64K registers as they fit its shared
// memory for D = 64 (3 x 68 KB).
template <int D>
__global__ void __launch_bounds__(FA_THREADS, 3)
attention_fused_forward_kernel(const float* Q, const float* K, const float* V, float* O,
                               float* L, int n, int d_k, float scale, bool causal, bool vec) {
    constexpr int ld = FA_LD<D>;
    DYNAMIC_SHARED(float, smem);
    float* Qs = smem;             // (Br, D + 4)    Q_i
    float* Ks = Qs + FA_BR * ld;  // (Bc, D + 4)    K_j
    float* Vs = Ks + FA_BC * ld;  // (Bc, D + 4)    V_j
    float* Ps = Vs + FA_BC * ld;  // (Br, Bc + 4)   P_ij, unnormalised
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

// ---- backward ------------------------------------------------------------------------------
template <int D>
size_t fused_backward_smem() {
    return sizeof(float) *
           (size_t(2 * FA_BC + 2 * FA_BR) * FA_LD<D> + 2 * FA_BR * FA_LDP + 2 * FA_BR);
}

template <int D>
__global__ void __launch_bounds__(FA_THREADS)
attention_fused_backward_kernel(const float* Q, const float* K, const float* V, const float* dO,
                                const float* L, const float* Dvec, float* dQ, float* dK,
                                float* dV, int n, int d_k, float scale, bool causal, bool vec) {
    constexpr int ld = FA_LD<D>;
    DYNAMIC_SHARED(float, smem);
    float* Ks = smem;                 // (Bc, D + 4)    K_j
    float* Vs = Ks + FA_BC * ld;      // (Bc, D + 4)    V_j
    float* Qs = Vs + FA_BC * ld;      // (Br, D + 4)    Q_i
    float* dOs = Qs + FA_BR * ld;     // (Br, D + 4)    dO_i
    float* Ps = dOs + FA_BR * ld;     // (Br, Bc + 4)   P_ij
    float* dSs = Ps + FA_BR * FA_LDP; // (Br, Bc + 4)   dS_ij
    float* Ls = dSs + FA_BR * FA_LDP; // (Br)           L_i
    float* Ds = Ls + FA_BR;           // (Br)           D_i
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
void fused_forward_launch(const float* Q, const float* K, const float* V, float* O, float* L, int B,
                          int h, int n, int d_k, bool causal) {
    const size_t smem = fused_forward_smem<D>();
    CUDA_CHECK(cudaFuncSetAttribute(attention_fused_forward_kernel<D>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    launch_kernel(attention_fused_forward_kernel<D>, dim3(ceil_div(n, FA_BR), B * h),
                  dim3(FA_THREADS), smem, Q, K, V, O, L, n, d_k, 1.0f / std::sqrt(float(d_k)),
                  causal, fa_vectorisable(d_k, {Q, K, V, O}));
}

template <int D>
void fused_backward_launch(const float* Q, const float* K, const float* V, const float* dO,
                           const float* L, const float* Dvec, float* dQ, float* dK, float* dV,
                           int B, int h, int n, int d_k, bool causal) {
    const size_t smem = fused_backward_smem<D>();
    CUDA_CHECK(cudaFuncSetAttribute(attention_fused_backward_kernel<D>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    launch_kernel(attention_fused_backward_kernel<D>, dim3(ceil_div(n, FA_BC), B * h),
                  dim3(FA_THREADS), smem, Q, K, V, dO, L, Dvec, dQ, dK, dV, n, d_k,
                  1.0f / std::sqrt(float(d_k)), causal,
                  fa_vectorisable(d_k, {Q, K, V, dO, dQ, dK, dV}));
}

void check_head_dim(int d_k) {
    if (d_k < 1 || d_k > 128)
        throw std::invalid_argument("fused attention: d_k = " + std::to_string(d_k) +
                                    " is outside 1..128; use the naive path for wider heads");
}

}  // namespace

void attention_fused_forward_cuda(const float* Q, const float* K, const float* V, float* O,
                                  float* L, int B, int h, int n, int d_k, bool causal) {
    check_head_dim(d_k);
    if (B * h * n == 0) return;
    if (d_k <= 32) fused_forward_launch<32>(Q, K, V, O, L, B, h, n, d_k, causal);
    else if (d_k <= 64) fused_forward_launch<64>(Q, K, V, O, L, B, h, n, d_k, causal);
    else fused_forward_launch<128>(Q, K, V, O, L, B, h, n, d_k, causal);
}

void attention_fused_backward_cuda(const float* Q, const float* K, const float* V,
                                   const float* O, const float* L, const float* dO, float* dQ,
                                   float* dK, float* dV, int B, int h, int n, int d_k,
                                   bool causal) {
    check_head_dim(d_k);
    if (B * h * n == 0) return;
    gpu::Buffer<float> Dvec((size_t)B * h * n);  // (B, h, n) = rowsum(dO * O)
    row_dot_cuda(dO, O, Dvec.data(), B * h * n, d_k);
    CUDA_CHECK(cudaMemset(dQ, 0, sizeof(float) * (size_t)B * h * n * d_k));  // atomics add up
    if (d_k <= 32)
        fused_backward_launch<32>(Q, K, V, dO, L, Dvec.data(), dQ, dK, dV, B, h, n, d_k, causal);
    else if (d_k <= 64)
        fused_backward_launch<64>(Q, K, V, dO, L, Dvec.data(), dQ, dK, dV, B, h, n, d_k, causal);
    else
        fused_backward_launch<128>(Q, K, V, dO, L, Dvec.data(), dQ, dK, dV, B, h, n, d_k,
                                   causal);
}
