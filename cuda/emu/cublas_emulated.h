// The few cuBLAS calls gpu-bench makes, for running gpu-bench on the CPU emulator (its tests):
// a plain triple loop with cuBLAS's column-major convention. It checks gpu-bench's own code
// (the shapes, strides and transposes it passes), never the speed: on a GPU the real
// <cublas_v2.h> is used.
#pragma once
#if defined(__CUDACC__)
#error "cuda/emu/cublas_emulated.h is for the emulator build; nvcc uses <cublas_v2.h>"
#endif

using cublasHandle_t = void*;
enum cublasStatus_t { CUBLAS_STATUS_SUCCESS = 0 };
enum cublasOperation_t { CUBLAS_OP_N, CUBLAS_OP_T };
enum cublasMath_t { CUBLAS_DEFAULT_MATH, CUBLAS_PEDANTIC_MATH };

inline cublasStatus_t cublasCreate(cublasHandle_t* h) {
    *h = nullptr;
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasDestroy(cublasHandle_t) { return CUBLAS_STATUS_SUCCESS; }
inline cublasStatus_t cublasSetMathMode(cublasHandle_t, cublasMath_t) {
    return CUBLAS_STATUS_SUCCESS;
}

// Column-major: C (m, n) = alpha op(A) op(B) + beta C, X[i + j ld] is row i, column j.
inline cublasStatus_t cublasSgemm(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb,
                                  int m, int n, int k, const float* alpha, const float* A,
                                  int lda, const float* B, int ldb, const float* beta, float* C,
                                  int ldc) {
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double acc = 0;
            for (int p = 0; p < k; p++) {
                const float a = ta == CUBLAS_OP_N ? A[i + (long)p * lda] : A[p + (long)i * lda];
                const float b = tb == CUBLAS_OP_N ? B[p + (long)j * ldb] : B[j + (long)p * ldb];
                acc += double(a) * b;
            }
            float& c = C[i + (long)j * ldc];
            c = float(*alpha * acc + (*beta == 0.0f ? 0.0 : double(*beta) * c));
        }
    return CUBLAS_STATUS_SUCCESS;
}
