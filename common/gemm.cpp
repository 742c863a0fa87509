// Placeholder: the plain loops until the packed, register-blocked kernel lands.
#include "common/gemm.h"

void sgemm_reference(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
                     int lda, const float* B, int ldb, float beta, float* C, int ldc) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double acc = 0;
            for (int k = 0; k < K; k++) {
                float a = trans_a ? A[(long)k * lda + i] : A[(long)i * lda + k];
                float b = trans_b ? B[(long)j * ldb + k] : B[(long)k * ldb + j];
                acc += double(a) * double(b);
            }
            float& c = C[(long)i * ldc + j];
            c = float(alpha * acc + (beta == 0.0f ? 0.0 : double(beta) * c));
        }
}

void sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
           const float* B, int ldb, float beta, float* C, int ldc) {
    #pragma omp parallel for if ((long)M * N * K > 100000)
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float acc = 0;
            for (int k = 0; k < K; k++) {
                float a = trans_a ? A[(long)k * lda + i] : A[(long)i * lda + k];
                float b = trans_b ? B[(long)j * ldb + k] : B[(long)k * ldb + j];
                acc += a * b;
            }
            float& c = C[(long)i * ldc + j];
            c = alpha * acc + (beta == 0.0f ? 0.0f : beta * c);
        }
}
