// Moving heads between the token axis and their own axis.
//
//   x:   (B, n, h, d_k)  = (B, n, d_model), the layout the projections produce
//   y:   (B, h, n, d_k)  each head's (n, d_k) block contiguous, the layout attention reads
//   qkv: (B, n, 3, h, d_k) = x @ W_qkv^T;   Q, K, V: (B, h, n, d_k)
//
// Versions: one thread per element, indexed by the destination so the writes coalesce (the
// reads stride by h*d_k or d_k; at d_k = 64 that is still 256-byte runs).
#include "cuda/kernels.h"
#include "cuda/launch.h"

constexpr int PERMUTE_THREADS = 256;

// y[b][head][t][e] = x[b][t][head][e]  (or the reverse when to_heads is false)
__global__ void permute_heads_kernel(const float* src, float* dst, int B, int n, int h, int d_k,
                                     bool to_heads) {
    long idx = blockIdx.x * (long)blockDim.x + threadIdx.x;  // index in dst
    long total = (long)B * n * h * d_k;
    if (idx >= total) return;
    int e = int(idx % d_k);
    long rest = idx / d_k;
    long heads_index, tokens_index;
    if (to_heads) {  // dst (B, h, n, d_k)
        int t = int(rest % n), head = int(rest / n % h), b = int(rest / ((long)n * h));
        heads_index = idx;
        tokens_index = (((long)b * n + t) * h + head) * d_k + e;
        dst[heads_index] = src[tokens_index];
    } else {  // dst (B, n, h, d_k)
        int head = int(rest % h), t = int(rest / h % n), b = int(rest / ((long)n * h));
        tokens_index = idx;
        heads_index = (((long)b * h + head) * n + t) * d_k + e;
        dst[tokens_index] = src[heads_index];
    }
}

// Q/K/V[b][head][t][e] <-> qkv[b][t][which][head][e]
__global__ void permute_qkv_kernel(float* qkv, float* Q, float* K, float* V, int B, int n, int h,
                                   int d_k, bool split) {
    long idx = blockIdx.x * (long)blockDim.x + threadIdx.x;  // index in (B, h, n, d_k)
    long total = (long)B * h * n * d_k;
    if (idx >= total) return;
    int e = int(idx % d_k);
    long rest = idx / d_k;
    int t = int(rest % n), head = int(rest / n % h), b = int(rest / ((long)n * h));
    long base = ((long)b * n + t) * 3 * h * d_k + (long)head * d_k + e;
    long stride = (long)h * d_k;  // from q to k to v inside one token's row
    if (split) {
        Q[idx] = qkv[base];
        K[idx] = qkv[base + stride];
        V[idx] = qkv[base + 2 * stride];
    } else {
        qkv[base] = Q[idx];
        qkv[base + stride] = K[idx];
        qkv[base + 2 * stride] = V[idx];
    }
}

namespace {

dim3 permute_grid(long total) { return dim3(ceil_div(total, PERMUTE_THREADS)); }

}  // namespace

void split_heads_cuda(const float* x, float* y, int B, int n, int h, int d_k) {
    long total = (long)B * n * h * d_k;
    if (total > 0)
        launch_kernel(permute_heads_kernel, permute_grid(total), dim3(PERMUTE_THREADS), 0, x, y,
                      B, n, h, d_k, true);
}
void merge_heads_cuda(const float* y, float* x, int B, int n, int h, int d_k) {
    long total = (long)B * n * h * d_k;
    if (total > 0)
        launch_kernel(permute_heads_kernel, permute_grid(total), dim3(PERMUTE_THREADS), 0, y, x,
                      B, n, h, d_k, false);
}
void split_qkv_cuda(const float* qkv, float* Q, float* K, float* V, int B, int n, int h,
                    int d_k) {
    long total = (long)B * n * h * d_k;
    if (total > 0)
        launch_kernel(permute_qkv_kernel, permute_grid(total), dim3(PERMUTE_THREADS), 0,
                      const_cast<float*>(qkv), Q, K, V, B, n, h, d_k, true);
}
void merge_qkv_cuda(const float* dQ, const float* dK, const float* dV, float* dqkv, int B, int n,
                    int h, int d_k) {
    long total = (long)B * n * h * d_k;
    if (total > 0)
        launch_kernel(permute_qkv_kernel, permute_grid(total), dim3(PERMUTE_THREADS), 0, dqkv,
                      const_cast<float*>(dQ), const_cast<float*>(dK), const_cast<float*>(dV), B,
                      n, h, d_k, false);
}
