// sgemm: C = alpha * op(A) @ op(B) + beta * C, float32, row-major.
// op(A) is (M, K): A itself (lda >= K) or, with trans_a, the transpose of a (K, M) array
// (lda >= M). op(B) is (K, N) likewise. C is (M, N) with ldc >= N. beta = 0 ignores C's contents.
// Every matmul in the project goes through here.
#pragma once

void sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
           const float* B, int ldb, float beta, float* C, int ldc);

// The textbook triple loop with the same contract: the reference the tests compare against.
void sgemm_reference(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
                     int lda, const float* B, int ldb, float beta, float* C, int ldc);
