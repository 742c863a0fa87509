// Softmax over the rows of a (rows, cols) matrix, forward and backward, one warp per row.
//
//   S, P, dP, dS: (rows, cols)     for attention rows = B*h*n and cols = n
//
// Versions: one. Each lane walks the row with stride 32; the row max and the row sum are
// combined across the warp's 32 lanes with __shfl_xor_sync (a butterfly: after 5 steps every
// lane holds the full result, no shared memory, no __syncthreads).
#include "cuda/kernels.h"
#include "cuda/launch.h"

#include <cmath>

constexpr int SOFTMAX_ROWS_PER_BLOCK = 8;  // 8 warps = 256 threads

__device__ __forceinline__ float warp_max(float v) {
    for (int offset = 16; offset > 0; offset /= 2)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}
__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

__global__ void softmax_forward_kernel(const float* S, float* P, int rows, int cols,
                                       bool causal) {
    const int lane = threadIdx.x % 32;
    const int r = blockIdx.x * SOFTMAX_ROWS_PER_BLOCK + threadIdx.x / 32;
    if (r >= rows) return;  // the whole warp leaves together
    const float* s = S + (long)r * cols;
    float* p = P + (long)r * cols;
    const int visible = causal ? r % cols + 1 : cols;  // keys j < visible are not masked

    float m = -INFINITY;
    for (int j = lane; j < visible; j += 32) m = fmaxf(m, s[j]);
    m = warp_max(m);
    float sum = 0.0f;
    for (int j = lane; j < visible; j += 32) sum += expf(s[j] - m);
    sum = warp_sum(sum);
    const float inv = 1.0f / sum;
    for (int j = lane; j < cols; j += 32) p[j] = j < visible ? expf(s[j] - m) * inv : 0.0f;
}

__global__ void softmax_backward_kernel(const float* P, const float* dP, float* dS, int rows,
                                        int cols) {
    const int lane = threadIdx.x % 32;
    const int r = blockIdx.x * SOFTMAX_ROWS_PER_BLOCK + threadIdx.x / 32;
    if (r >= rows) return;
    const float* p = P + (long)r * cols;
    const float* dp = dP + (long)r * cols;
    float* ds = dS + (long)r * cols;
    // dS_j = P_j (dP_j - sum_k dP_k P_k): the Jacobian of softmax applied to dP.
    float dot = 0.0f;
    for (int j = lane; j < cols; j += 32) dot += dp[j] * p[j];
    dot = warp_sum(dot);
    for (int j = lane; j < cols; j += 32) ds[j] = p[j] * (dp[j] - dot);
}

void softmax_forward_cuda(const float* S, float* P, int rows, int cols, bool causal) {
    if (rows <= 0 || cols <= 0) return;
    launch_kernel(softmax_forward_kernel, dim3(ceil_div(rows, SOFTMAX_ROWS_PER_BLOCK)),
                  dim3(32 * SOFTMAX_ROWS_PER_BLOCK), 0, S, P, rows, cols, causal);
}

void softmax_backward_cuda(const float* P, const float* dP, float* dS, int rows, int cols) {
    if (rows <= 0 || cols <= 0) return;
    launch_kernel(softmax_backward_kernel, dim3(ceil_div(rows, SOFTMAX_ROWS_PER_BLOCK)),
                  dim3(32 * SOFTMAX_ROWS_PER_BLOCK), 0, P, dP, dS, rows, cols);
}
