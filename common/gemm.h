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

// a * b + c rounded as sgemm's micro-kernels round it. Code that must equal sgemm bit for bit
// (ops.cpp's direct loop for tiny products) uses this rather than std::fma, which on a CPU
// without FMA would be exact where sgemm is not (and a slow library call).
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

// The textbook triple loop with the same contract: the reference the tests compare against.
void sgemm_reference(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
                     int lda, const float* B, int ldb, float beta, float* C, int ldc);

// exp(x) for float32 written so that loops marked `#pragma omp simd` vectorise it (with the
// Makefile's -fno-trapping-math, which lets its selects become blends; std::exp is a
// library call and keeps the softmax and LSTM gate loops scalar). Range reduction
// x = n ln2 + r with |r| <= ln2/2, then a degree-6 polynomial for e^r (Cephes' expf
// coefficients), then 2^n through the exponent bits. About 1-2 ulp; exp(-inf) = 0 exactly
// (masked scores), inputs above 88 saturate at 2^127 * e^r instead of returning inf.
inline float exp_fast(float x) {
    const float xc = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
    const float t = xc * 1.44269504088896341f + 12582912.0f;  // round(x / ln2) via 1.5 * 2^23
    const float nf = t - 12582912.0f;
    const float r = (xc - nf * 0.693359375f) - nf * -2.12194440e-4f;  // ln2 split in two parts
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    const int bits = ((int)nf + 127) << 23;  // 2^n as a float
    float two_n;
    __builtin_memcpy(&two_n, &bits, sizeof two_n);
    return x < -87.0f ? 0.0f : p * two_n;
}

#if defined(__AVX512F__)
#include <immintrin.h>
// exp_fast on 16 floats at once, written out step by step as GCC 12 vectorises exp_fast
// (t and both halves of r are fused multiply-adds, then the Horner steps, then
// fma(p * r, r, r) + 1): lane for lane bit for bit exp_fast for every x. The last step,
// p * 2^n, is one vscalefps (exact for these n, as exp_fast's multiply by the float 2^n it
// builds from n's bits is), zeroed where x < -87: 16 instructions where GCC's own vector code
// spends about 30 on computing the clamped inputs' results beside it and blending them in
// (and 19 with 2^n built from its bits; the softmax's exps were a sixth of the fused forward).
// GCC 12's intrinsics start from _mm512_undefined_*(), which -Wmaybe-uninitialized reports
// once inlined (a known false positive; gemm.cpp's transposes do the same).
#if !defined(__clang__)  // clang has no -Wmaybe-uninitialized (nor the false positive)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// The steps of exp_fast16 and exp_fast16_unclamped below: e^xc from xc, zeroed where x < -87.
inline __m512 exp_fast16_steps(__m512 xc, __m512 x) {
    const __m512 t = _mm512_fmadd_ps(xc, _mm512_set1_ps(1.44269504088896341f),
                                     _mm512_set1_ps(12582912.0f));
    const __m512 nf = _mm512_sub_ps(t, _mm512_set1_ps(12582912.0f));
    __m512 r = _mm512_fnmadd_ps(nf, _mm512_set1_ps(0.693359375f), xc);
    r = _mm512_fmadd_ps(nf, _mm512_set1_ps(2.12194440e-4f), r);
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(1.9875691500e-4f), r,
                               _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r), _mm512_set1_ps(1.0f));
    const __mmask16 kept = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.0f), _CMP_NLT_US);
    return _mm512_maskz_scalef_ps(kept, p, nf);  // x < -87: 0
}

inline __m512 exp_fast16(__m512 x) {
    const __m512 xc = _mm512_min_ps(_mm512_set1_ps(88.0f),  // max/min keep a NaN x as NaN
                                    _mm512_max_ps(_mm512_set1_ps(-87.0f), x));
    return exp_fast16_steps(xc, x);
}

// exp_fast16 without the two clamps, for x <= 88: the softmax's x = s - max(s) <= 0. There it
// is exp_fast16 bit for bit: between -87 and 88 the clamps change nothing, and below -87 (-inf
// included, where r and p turn NaN) the mask still gives 0. 12% faster through the softmax's
// loop; above 88 it would not saturate as exp_fast does.
inline __m512 exp_fast16_unclamped(__m512 x) { return exp_fast16_steps(x, x); }
#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

// An upper bound on the packing workspace sgemm calls can hold at once (packed blocks of A and
// B, and the per-thread buffer small calls reuse): memory predictions add it as a margin.
#include <cstddef>
size_t sgemm_workspace_bytes_max();
