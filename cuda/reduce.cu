// Reductions: a dot product per row (FlashAttention's D = rowsum(dO * O)), sums down the
// columns (the LSTM bias gradient), and whole-array sum / max |x| (test and bench checks).
//
//   row_dot:     a, b: (rows, cols) -> out: (rows)       one warp per row, __shfl_down_sync
//   column_sum:  x: (rows, cols)    -> out: (cols)       one thread per column, coalesced rows
//   sum/max_abs: x: (n)             -> out: (1)          grid-stride loop, warp shuffle, shared
//                                                        memory across warps, one atomic per block
#include "cuda/kernels.h"
#include "cuda/launch.h"

#include <algorithm>
#include <cmath>

constexpr int REDUCE_THREADS = 256;

__device__ __forceinline__ float warp_reduce_sum(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;  // lane 0 holds the sum
}

__global__ void row_dot_kernel(const float* a, const float* b, float* out, int rows, int cols) {
    const int lane = threadIdx.x % 32;
    const int r = blockIdx.x * (REDUCE_THREADS / 32) + threadIdx.x / 32;
    if (r >= rows) return;
    float acc = 0.0f;
    for (int c = lane; c < cols; c += 32) acc += a[(long)r * cols + c] * b[(long)r * cols + c];
    acc = warp_reduce_sum(acc);
    if (lane == 0) out[r] = acc;
}

__global__ void column_sum_kernel(const float* x, float* out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float acc = 0.0f;
    for (int r = 0; r < rows; r++) acc += x[(long)r * cols + c];
    out[c] = acc;
}

// Block-wide reduction: warps reduce with shuffles, warp results meet in shared memory.
template <bool MAX_ABS>
__global__ void reduce_kernel(const float* x, float* out, long n) {
    SHARED(float, warp_result, [REDUCE_THREADS / 32]);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    float acc = 0.0f;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n;
         i += (long)gridDim.x * blockDim.x)
        acc = MAX_ABS ? fmaxf(acc, fabsf(x[i])) : acc + x[i];
    for (int offset = 16; offset > 0; offset /= 2) {
        float other = __shfl_down_sync(0xffffffffu, acc, offset);
        acc = MAX_ABS ? fmaxf(acc, other) : acc + other;
    }
    if (lane == 0) warp_result[warp] = acc;
    __syncthreads();  // every warp's partial is in shared memory
    if (warp == 0) {
        acc = lane < REDUCE_THREADS / 32 ? warp_result[lane] : 0.0f;
        for (int offset = 16; offset > 0; offset /= 2) {
            float other = __shfl_down_sync(0xffffffffu, acc, offset);
            acc = MAX_ABS ? fmaxf(acc, other) : acc + other;
        }
        if (lane == 0) {
            if (MAX_ABS)  // |x| >= 0, so the float's bits order like ints
                atomicMax(reinterpret_cast<int*>(out), __float_as_int(acc));
            else
                atomicAdd(out, acc);
        }
    }
}

void row_dot_cuda(const float* a, const float* b, float* out, int rows, int cols) {
    if (rows <= 0) return;
    launch_kernel(row_dot_kernel, dim3(ceil_div(rows, REDUCE_THREADS / 32)),
                  dim3(REDUCE_THREADS), 0, a, b, out, rows, cols);
}

void column_sum_cuda(const float* x, float* out, int rows, int cols) {
    if (cols <= 0) return;
    launch_kernel(column_sum_kernel, dim3(ceil_div(cols, REDUCE_THREADS)), dim3(REDUCE_THREADS),
                  0, x, out, rows, cols);
}

namespace {

int reduce_blocks(long n) { return int(std::min<long>(1024, std::max(1L, (n + 1023) / 1024))); }

}  // namespace

void sum_cuda(const float* x, float* out, long n) {
    CUDA_CHECK(cudaMemset(out, 0, sizeof(float)));
    if (n <= 0) return;
    launch_kernel(reduce_kernel<false>, dim3(reduce_blocks(n)), dim3(REDUCE_THREADS), 0, x, out,
                  n);
}

void max_abs_cuda(const float* x, float* out, long n) {
    CUDA_CHECK(cudaMemset(out, 0, sizeof(float)));
    if (n <= 0) return;
    launch_kernel(reduce_kernel<true>, dim3(reduce_blocks(n)), dim3(REDUCE_THREADS), 0, x, out,
                  n);
}
