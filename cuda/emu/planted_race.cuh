// A test-only kernel with a planted bug: the shared-memory tiled matmul of cuda/sgemm.cu with
// the __syncthreads between "load the tiles" and "use the tiles" left out (when
// with_first_barrier is false). Threads then read tile entries their neighbours have not
// written yet. tests/test_cuda_emulator.cpp shows the emulator's schedule check catches it and
// `make emu-tsan` shows ThreadSanitizer reports it as a data race.
//
//   A: (M, K)   B: (K, N)   C: (M, N)   row-major, no transposes
#pragma once
#include "cuda/launch.h"

constexpr int PLANTED_TILE = 16;

__global__ void planted_tiled_matmul_kernel(const float* A, const float* B, float* C, int M,
                                            int N, int K, bool with_first_barrier) {
    SHARED(float, As, [PLANTED_TILE][PLANTED_TILE]);
    SHARED(float, Bs, [PLANTED_TILE][PLANTED_TILE]);
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int i = blockIdx.y * PLANTED_TILE + ty, j = blockIdx.x * PLANTED_TILE + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += PLANTED_TILE) {
        As[ty][tx] = (i < M && k0 + tx < K) ? A[(long)i * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && j < N) ? B[(long)(k0 + ty) * N + j] : 0.0f;
        if (with_first_barrier) __syncthreads();  // <- the planted bug removes this one
        for (int k = 0; k < PLANTED_TILE; k++) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (i < M && j < N) C[(long)i * N + j] = acc;
}

void planted_tiled_matmul(const float* A, const float* B, float* C, int M, int N, int K,
                          bool with_first_barrier) {
    launch_kernel(
        planted_tiled_matmul_kernel,
        dim3((N + PLANTED_TILE - 1) / PLANTED_TILE, (M + PLANTED_TILE - 1) / PLANTED_TILE),
        dim3(PLANTED_TILE, PLANTED_TILE), 0, A, B, C, M, N, K, with_first_barrier);
}
