// Fused attention, FlashAttention-2 style: the (n, n) score matrix never exists in memory.
// Mirrors attention_fused_forward/backward in common/attention.h (same names, same buffers).
//
//   Q, K, V, O, dO, dQ, dK, dV: (B, h, n, d_k)     L: (B, h, n) row logsumexp of S
//   scratch: Dvec (B, h, n) = rowsum(dO * O)        d_k <= 128 (templated on D = 32, 64, 128)
//
// Paper names: Br query rows per tile, Bc key rows per tile, Tr = ceil(n / Br) query tiles,
// Tc = ceil(n / Bc) key tiles, m the running row max, l the running row sum of exp(s - m).
//
// Versions:
//   forward   one block per (query tile, b*h): Br = 64 rows, 4 threads per row (a "quad" of
//             neighbouring lanes). Walks the Tc key tiles (causal: only up to the diagonal),
//             keeps m, l and its quarter of the O row in registers, rescales them when the max
//             grows (online softmax), writes O = acc / l and L = m + log l.
//   backward  one block per (key tile, b*h): Bc = 32 keys, 4 threads per key. Keeps dK_j and
//             dV_j in registers while walking the query tiles; recomputes P = exp(S - L) from
//             the saved L instead of reading a stored P; dQ_i gets its share with atomicAdd.
#include "cuda/kernels.h"
#include "cuda/launch.h"

#include <cmath>
#include <stdexcept>
#include <string>

constexpr int FA_FWD_BR = 64, FA_FWD_BC = 32, FA_FWD_THREADS = FA_FWD_BR * 4;
constexpr int FA_BWD_BR = 32, FA_BWD_BC = 32, FA_BWD_THREADS = FA_BWD_BC * 4;

__device__ __forceinline__ float quad_max(float v) {
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
    return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
__device__ __forceinline__ float quad_sum(float v) {
    v += __shfl_xor_sync(0xffffffffu, v, 1);
    return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

// Copy rows [row0, row0 + rows) of a (n, d_k) matrix into a (rows, ld) shared tile, zero-padded
// past n and past d_k (so dot products can run over the full template width D).
template <int D>
__device__ __forceinline__ void load_tile(float* tile, int ld, int rows, const float* X,
                                          int row0, int n, int d_k) {
    for (int e = threadIdx.x; e < rows * D; e += blockDim.x) {
        int r = e / D, d = e % D;
        tile[r * ld + d] = (row0 + r < n && d < d_k) ? X[(long)(row0 + r) * d_k + d] : 0.0f;
    }
}

template <int D>
size_t fused_forward_smem() {
    return sizeof(float) *
           (FA_FWD_BR * (D + 1) + FA_FWD_BC * (D + 1) + FA_FWD_BC * D + FA_FWD_BR * FA_FWD_BC);
}

template <int D>
__global__ void __launch_bounds__(FA_FWD_THREADS)
attention_fused_forward_kernel(const float* Q, const float* K, const float* V, float* O,
                               float* L, int n, int d_k, float scale, bool causal) {
    DYNAMIC_SHARED(float, smem);
    float* Qs = smem;                      // (Br, D + 1)
    float* Ks = Qs + FA_FWD_BR * (D + 1);  // (Bc, D + 1)
    float* Vs = Ks + FA_FWD_BC * (D + 1);  // (Bc, D)
    float* Ps = Vs + FA_FWD_BC * D;        // (Br, Bc)
    const int r = threadIdx.x / 4, q4 = threadIdx.x % 4;
    const long head = (long)blockIdx.y * n * d_k;
    Q += head, K += head, V += head, O += head;
    L += (long)blockIdx.y * n;
    const int row0 = blockIdx.x * FA_FWD_BR, row = row0 + r;

    load_tile<D>(Qs, D + 1, FA_FWD_BR, Q, row0, n, d_k);
    float m = -INFINITY, l = 0.0f;
    float o[D / 4] = {};  // O[row][q4 + 4t], unnormalised
    const int kv_end = causal ? min(n, row0 + FA_FWD_BR) : n;
    for (int col0 = 0; col0 < kv_end; col0 += FA_FWD_BC) {
        __syncthreads();  // the previous K, V, P tiles are no longer read (and Q is loaded)
        load_tile<D>(Ks, D + 1, FA_FWD_BC, K, col0, n, d_k);
        load_tile<D>(Vs, D, FA_FWD_BC, V, col0, n, d_k);
        __syncthreads();  // K_j and V_j are complete

        // S_ij for this row and keys q4, q4 + 4, ...: each quad covers the Bc keys.
        float s[FA_FWD_BC / 4];
        float m_tile = -INFINITY;
        for (int t = 0; t < FA_FWD_BC / 4; t++) {
            int c = q4 + 4 * t, key = col0 + c;
            float acc = 0.0f;
            for (int d = 0; d < D; d++) acc += Qs[r * (D + 1) + d] * Ks[c * (D + 1) + d];
            bool visible = key < n && !(causal && key > row);
            s[t] = visible ? acc * scale : -INFINITY;
            m_tile = fmaxf(m_tile, s[t]);
        }
        // Online softmax: the new max, and how much the old sum and O shrink relative to it.
        const float m_new = fmaxf(m, quad_max(m_tile));
        const bool empty = m_new == -INFINITY;  // every key so far masked (rows past n)
        const float alpha = empty ? 1.0f : expf(m - m_new);
        float l_tile = 0.0f;
        for (int t = 0; t < FA_FWD_BC / 4; t++) {
            float p = empty ? 0.0f : expf(s[t] - m_new);
            Ps[r * FA_FWD_BC + q4 + 4 * t] = p;
            l_tile += p;
        }
        l = alpha * l + quad_sum(l_tile);
        m = m_new;
        __syncwarp();  // the quad's P row is visible to the other three lanes
        // O_i = alpha * O_i + P_ij V_j for this thread's quarter of the columns.
        for (int t = 0; t < D / 4; t++) {
            int d = q4 + 4 * t;
            float acc = 0.0f;
            for (int c = 0; c < FA_FWD_BC; c++) acc += Ps[r * FA_FWD_BC + c] * Vs[c * D + d];
            o[t] = alpha * o[t] + acc;
        }
    }
    if (row < n) {
        for (int t = 0; t < D / 4; t++) {
            int d = q4 + 4 * t;
            if (d < d_k) O[(long)row * d_k + d] = o[t] / l;
        }
        if (q4 == 0) L[row] = m + logf(l);  // logsumexp of S's row: all the backward needs
    }
}

template <int D>
size_t fused_backward_smem() {
    return sizeof(float) * (2 * FA_BWD_BC * (D + 1) + 2 * FA_BWD_BR * (D + 1) + 2 * FA_BWD_BR +
                            2 * FA_BWD_BC * (FA_BWD_BR + 1));
}

template <int D>
__global__ void __launch_bounds__(FA_BWD_THREADS)
attention_fused_backward_kernel(const float* Q, const float* K, const float* V, const float* dO,
                                const float* L, const float* Dvec, float* dQ, float* dK,
                                float* dV, int n, int d_k, float scale, bool causal) {
    DYNAMIC_SHARED(float, smem);
    float* Ks = smem;                        // (Bc, D + 1)
    float* Vs = Ks + FA_BWD_BC * (D + 1);    // (Bc, D + 1)
    float* Qs = Vs + FA_BWD_BC * (D + 1);    // (Br, D + 1)
    float* dOs = Qs + FA_BWD_BR * (D + 1);   // (Br, D + 1)
    float* Ls = dOs + FA_BWD_BR * (D + 1);   // (Br)
    float* Ds = Ls + FA_BWD_BR;              // (Br)
    float* Ps = Ds + FA_BWD_BR;              // (Bc, Br + 1)   P_ij transposed: key-major
    float* dSs = Ps + FA_BWD_BC * (FA_BWD_BR + 1);  // (Bc, Br + 1)
    const int c = threadIdx.x / 4, q4 = threadIdx.x % 4;
    const long head = (long)blockIdx.y * n * d_k;
    Q += head, K += head, V += head, dO += head, dQ += head, dK += head, dV += head;
    L += (long)blockIdx.y * n;
    Dvec += (long)blockIdx.y * n;
    const int col0 = blockIdx.x * FA_BWD_BC, key = col0 + c;

    load_tile<D>(Ks, D + 1, FA_BWD_BC, K, col0, n, d_k);
    load_tile<D>(Vs, D + 1, FA_BWD_BC, V, col0, n, d_k);
    float dk[D / 4] = {}, dv[D / 4] = {};  // dK_j, dV_j rows of this key, columns q4 + 4t
    // Causal: query rows before this key tile never see its keys.
    const int row_start = causal ? col0 / FA_BWD_BR * FA_BWD_BR : 0;
    for (int row0 = row_start; row0 < n; row0 += FA_BWD_BR) {
        __syncthreads();  // the previous Q_i, dO_i, P, dS are no longer read (K_j, V_j loaded)
        load_tile<D>(Qs, D + 1, FA_BWD_BR, Q, row0, n, d_k);
        load_tile<D>(dOs, D + 1, FA_BWD_BR, dO, row0, n, d_k);
        for (int rr = threadIdx.x; rr < FA_BWD_BR; rr += blockDim.x) {
            Ls[rr] = row0 + rr < n ? L[row0 + rr] : 0.0f;
            Ds[rr] = row0 + rr < n ? Dvec[row0 + rr] : 0.0f;
        }
        __syncthreads();  // Q_i, dO_i, L_i, D_i are complete

        // Recompute P_ij = exp(S_ij - L_i) and form dS_ij = P_ij (dP_ij - D_i).
        for (int t = 0; t < FA_BWD_BR / 4; t++) {
            int rr = q4 + 4 * t, row = row0 + rr;
            float s = 0.0f, dp = 0.0f;
            for (int d = 0; d < D; d++) {
                s += Qs[rr * (D + 1) + d] * Ks[c * (D + 1) + d];
                dp += dOs[rr * (D + 1) + d] * Vs[c * (D + 1) + d];
            }
            bool visible = row < n && key < n && !(causal && key > row);
            float p = visible ? expf(s * scale - Ls[rr]) : 0.0f;
            Ps[c * (FA_BWD_BR + 1) + rr] = p;
            dSs[c * (FA_BWD_BR + 1) + rr] = p * (dp - Ds[rr]);
        }
        __syncthreads();  // dQ below reads every key's column of dS

        // dV_j += P_ij^T dO_i,  dK_j += scale * dS_ij^T Q_i  (this key's row).
        for (int t = 0; t < D / 4; t++) {
            int d = q4 + 4 * t;
            float acc_v = 0.0f, acc_k = 0.0f;
            for (int rr = 0; rr < FA_BWD_BR; rr++) {
                acc_v += Ps[c * (FA_BWD_BR + 1) + rr] * dOs[rr * (D + 1) + d];
                acc_k += dSs[c * (FA_BWD_BR + 1) + rr] * Qs[rr * (D + 1) + d];
            }
            dv[t] += acc_v;
            dk[t] += scale * acc_k;
        }
        // dQ_i += scale * dS_ij K_j: threads re-map to 4 per query row; other key tiles add to
        // the same rows concurrently, hence the atomics.
        {
            const int rr = threadIdx.x / 4, row = row0 + rr;
            if (row < n)
                for (int t = 0; t < D / 4; t++) {
                    int d = q4 + 4 * t;
                    if (d >= d_k) break;
                    float acc = 0.0f;
                    for (int cc = 0; cc < FA_BWD_BC; cc++)
                        acc += dSs[cc * (FA_BWD_BR + 1) + rr] * Ks[cc * (D + 1) + d];
                    atomicAdd(&dQ[(long)row * d_k + d], scale * acc);
                }
        }
    }
    if (key < n)
        for (int t = 0; t < D / 4; t++) {
            int d = q4 + 4 * t;
            if (d < d_k) {
                dK[(long)key * d_k + d] = dk[t];
                dV[(long)key * d_k + d] = dv[t];
            }
        }
}

template <int D>
static void fused_forward_launch(const float* Q, const float* K, const float* V, float* O,
                                 float* L, int B, int h, int n, int d_k, bool causal) {
    const size_t smem = fused_forward_smem<D>();
    CUDA_CHECK(cudaFuncSetAttribute(attention_fused_forward_kernel<D>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    launch_kernel(attention_fused_forward_kernel<D>, dim3(ceil_div(n, FA_FWD_BR), B * h),
                  dim3(FA_FWD_THREADS), smem, Q, K, V, O, L, n, d_k,
                  1.0f / std::sqrt(float(d_k)), causal);
}

template <int D>
static void fused_backward_launch(const float* Q, const float* K, const float* V,
                                  const float* dO, const float* L, const float* Dvec, float* dQ,
                                  float* dK, float* dV, int B, int h, int n, int d_k,
                                  bool causal) {
    const size_t smem = fused_backward_smem<D>();
    CUDA_CHECK(cudaFuncSetAttribute(attention_fused_backward_kernel<D>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    launch_kernel(attention_fused_backward_kernel<D>, dim3(ceil_div(n, FA_BWD_BC), B * h),
                  dim3(FA_BWD_THREADS), smem, Q, K, V, dO, L, Dvec, dQ, dK, dV, n, d_k,
                  1.0f / std::sqrt(float(d_k)), causal);
}

static void check_head_dim(int d_k) {
    if (d_k < 1 || d_k > 128)
        throw std::invalid_argument("fused attention: d_k = " + std::to_string(d_k) +
                                    " is outside 1..128; use the naive path for wider heads");
}

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
