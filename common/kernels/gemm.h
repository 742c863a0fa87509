// sgemm: C = alpha * op(A) @ op(B) + beta * C, float32, row-major.
// op(A) is (M, K): A itself (lda >= K) or, with trans_a, the transpose of a (K, M) array
// (lda >= M). op(B) is (K, N) likewise. C is (M, N) with ldc >= N. beta = 0 ignores C's contents.
// Every matmul in the project goes through here.
#pragma once

void sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
           const float* B, int ldb, float beta, float* C, int ldc);

// sgemm adds up the shared dimension in slices of sgemm_k_slice() k's (KC): each summed in
// registers from zero, then added to C. So a product split along K at multiples of it, the first
// part with beta and the rest with beta = 1, is bit for bit the whole product (the naive attention
// backward builds dV = P^T dO and dK = dS^T Q that way, a block of rows of P and dS at a time).
int sgemm_k_slice();

// The cache blocking: sgemm packs MC rows of A and NC columns of B per block, and where it reads
// A in place, NB columns of B per block; all chosen from this CPU's L2 and L3 sizes (read once,
// at the first call). They group the tiles and nothing else, so any choice gives the same bits.
// sgemm_set_blocking replaces the choice for the whole program (the tests, bench-gemm's sweep):
// mc a multiple of 12 up to 1008, nc and nb of 64 up to 8192.
struct SgemmBlocking {
    int mc, nc, nb;
    long l2_bytes, l3_bytes;  // as read, or the sizes assumed where the CPU does not say
};
SgemmBlocking sgemm_blocking();
SgemmBlocking sgemm_blocking_for(long l2_bytes, long l3_bytes);
void sgemm_set_blocking(int mc, int nc, int nb);

// Packing B once for many products. FlashAttention multiplies every tile of Q by the same tiles
// of K and V, so it packs K, V (and their transposes) once per head instead of once per tile;
// the LSTM multiplies by the same W_hh at every one of its n steps.
// A packed op(B) (K, N) is ceil(N / NR) column panels of K rows of NR floats (zero-padded
// past column N), panel p at Bp + p * K * NR. Rows k0.. and columns j0.. (j0 a multiple of
// sgemm_panel_width()) of it are again a packed operand: Bp + (j0 / NR) * K * NR + k0 * NR,
// with the same panel stride K * NR.
int sgemm_panel_width();                         // NR
long sgemm_packed_b_floats(int K, int N);        // floats sgemm_pack_b writes
void sgemm_pack_b(bool trans_b, int K, int N, const float* B, int ldb, float* Bp);
// C = alpha * op(A) @ Bp + beta * C, with Bp packed as above (panel p at Bp + p * panel_stride)
// and op(A) read where it lies. Runs on the calling thread: for use inside parallel loops.
void sgemm_packed_b(bool trans_a, int M, int N, int K, float alpha, const float* A, int lda,
                    const float* Bp, long panel_stride, float beta, float* C, int ldc);

// Whether sgemm's micro-kernels round each multiply-add once (a fused multiply-add: x86-64 with
// FMA, every aarch64) or twice (x86-64 without FMA, e.g. `make ARCH_FLAGS=`). Fixed at compile
// time by the instructions the build targets.
constexpr bool SGEMM_FUSED =
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA) || defined(__FP_FAST_FMAF)
    true;
#else
    false;
#endif

// a * b + c rounded as sgemm's micro-kernels round it: once where SGEMM_FUSED, else twice.
// Where SGEMM_FUSED, the portable micro-kernel (gemm.cpp's Simd::fma) computes its lanes with
// it, so they round as the vector FMA kernels' do.
inline float sgemm_madd(float a, float b, float c) {
    if constexpr (SGEMM_FUSED) return __builtin_fmaf(a, b, c);
    return a * b + c;
}

// C (M, N) = op(A) @ op(B), or C += it with accumulate, for tiny products (M, N, K all at most
// SGEMM_SMALL_MAX): the attention's per-head Q K^T and P V, thousands of them a training step,
// where sgemm's packing costs more than the arithmetic. Runs on the calling thread, needs no
// workspace, and rounds exactly as sgemm does (alpha = 1, beta = 0 or 1): bit for bit the same C.
constexpr int SGEMM_SMALL_MAX = 64;
void sgemm_small(bool trans_a, bool trans_b, int M, int N, int K, const float* A, int lda,
                 const float* B, int ldb, bool accumulate, float* C, int ldc);

// The textbook triple loop with the same contract, which the tests compare sgemm with, is
// reference::sgemm in chapters/6-cost/reference.h.

// An upper bound on the packing workspace sgemm calls can hold at once (packed blocks of A and
// B, and the per-thread buffer small calls reuse): memory predictions add it as a margin.
#include <cstddef>
size_t sgemm_workspace_bytes_max();
