// exp_fast: exp(x) for float32 that vectorises, shared by the softmax of common/kernels/attention
// and the gates of common/kernels/lstm; exp_fast16 is the same function on 16 lanes of AVX-512.
#pragma once

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
// exp_fast on 16 floats at once, written out step by step as GCC vectorises exp_fast
// (t and both halves of r are fused multiply-adds, then the Horner steps, then
// fma(p * r, r, r) + 1): lane for lane bit for bit exp_fast for every x. The last step,
// p * 2^n, is one vscalefps (exact for these n, as exp_fast's multiply by the float 2^n it
// builds from n's bits is), zeroed where x < -87. GCC's own vector code also computes the
// clamped inputs' results and blends them in, and the softmax's exps are a large part of the
// fused forward.
// GCC's intrinsics start from _mm512_undefined_*(), which -Wmaybe-uninitialized reports
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
// included, where r and p turn NaN) the mask still gives 0. Two fewer instructions a vector in
// the softmax's loop; above 88 it would not saturate as exp_fast does.
inline __m512 exp_fast16_unclamped(__m512 x) { return exp_fast16_steps(x, x); }
#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif
