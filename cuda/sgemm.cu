// sgemm on the GPU in three teaching steps. Batched and row-major, with the transposes the
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
#include "cuda/kernels.h"
#include "cuda/launch.h"

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
    }
}
