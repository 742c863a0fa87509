// sgemm from scratch, in the shape of BLIS / GotoBLAS (the layout every fast CPU GEMM uses):
//
//   for jc in N step NC:                 columns of C that share one packed block of B (L3)
//     for pc in K step KC:               a slice of the shared dimension
//       pack B[pc:pc+KC, jc:jc+NC] into NR-wide micro-panels      Bp: (NC/NR, KC, NR)
//       for ic in M step MC:             rows whose packed A stays in one core's L2
//         pack A[ic:ic+MC, pc:pc+KC] into MR-tall micro-panels    Ap: (MC/MR, KC, MR)
//         for jr in NC step NR:          one B micro-panel (KC x NR: 16 or 32 KB) in L1
//           for ir in MC step MR:
//             micro-kernel: C[ir:ir+MR, jr:jr+NR] += Ap_panel @ Bp_panel  in registers
//
// The micro-kernel keeps an MR x NR tile of C in vector registers for the whole KC loop: each
// step loads NR/W vectors of B, broadcasts MR values of A and does MR*NR/W fused multiply-adds,
// so almost every instruction is an FMA. The ISA is chosen at compile time (-march=native):
//   AVX-512: 12 x 32 tile (24 zmm accumulators; 6 x 64 for a narrow C, row-major A in place)
//   AVX2+FMA: 6 x 16 tile (12 ymm accumulators)    aarch64 NEON: 6 x 16 tile (24 q accumulators)
//   otherwise a portable 4 x 8 tile written with GCC vector extensions (on x86-64 without FMA
//   each multiply-add rounds twice: SGEMM_FUSED).
// Every ISA runs the same templated kernel; only the handful of vector operations differ.
//
// Threads: OpenMP splits the rows (or, for short and wide products, the columns) of C between
// the threads; each packs what it needs itself, so they never wait for each other. A call made
// inside a parallel region runs on one thread.
// Two shapes skip a pack. A row-major A within one core's L2, or any A that feeds a narrow C,
// is read in place, with the loops turned round (sgemm_a_in_place): MR rows of A stay in L1
// while the B panels of an L2 block stream past. Small-M products with a row-major B read B in
// place (each element of B is used only M times). Callers that multiply by the same B many
// times (FlashAttention's K and V tiles, the LSTM's W_hh at every step) pack it once with
// sgemm_pack_b and call sgemm_packed_b.
#include "common/kernels/gemm.h"

#include "common/kernels/parallel.h"
#include "common/memory.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <utility>

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace {

#if defined(__AVX512F__)
struct Simd {
    using V = __m512;
    static constexpr int W = 16, MR = 12, NV = 2;  // tile 12 x 32
    static constexpr int MR_WIDE = 6, NV_WIDE = 4;  // tile 6 x 64 (sgemm_a_in_place)
    static V zero() { return _mm512_setzero_ps(); }
    static V load(const float* p) { return _mm512_loadu_ps(p); }
    static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
    static V bcast(float x) { return _mm512_set1_ps(x); }
    static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }  // a*b + c
    static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
};
#elif defined(__AVX2__) && defined(__FMA__)
struct Simd {
    using V = __m256;
    static constexpr int W = 8, MR = 6, NV = 2;  // tile 6 x 16
    static constexpr int MR_WIDE = MR, NV_WIDE = NV;
    static V zero() { return _mm256_setzero_ps(); }
    static V load(const float* p) { return _mm256_loadu_ps(p); }
    static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
    static V bcast(float x) { return _mm256_set1_ps(x); }
    static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
    static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
};
#elif defined(__aarch64__)
struct Simd {  // NEON, which every aarch64 CPU has: 32 registers of 4 floats
    using V = float32x4_t;
    static constexpr int W = 4, MR = 6, NV = 4;  // tile 6 x 16 (24 accumulators)
    static constexpr int MR_WIDE = MR, NV_WIDE = NV;
    static V zero() { return vdupq_n_f32(0.0f); }
    static V load(const float* p) { return vld1q_f32(p); }
    static void store(float* p, V v) { vst1q_f32(p, v); }
    static V bcast(float x) { return vdupq_n_f32(x); }
    static V fma(V a, V b, V c) { return vfmaq_f32(c, a, b); }  // c + a*b, one rounding
    static V mul(V a, V b) { return vmulq_f32(a, b); }
};
#else
struct Simd {  // portable: GCC's and clang's vector extensions, 4 floats (SSE2 on x86-64)
    typedef float V __attribute__((vector_size(16)));
    static constexpr int W = 4, MR = 4, NV = 2;  // tile 4 x 8
    static constexpr int MR_WIDE = MR, NV_WIDE = NV;
    static V zero() { return V{0, 0, 0, 0}; }
    static V load(const float* p) {
        V v;
        __builtin_memcpy(&v, p, sizeof v);
        return v;
    }
    static void store(float* p, V v) { __builtin_memcpy(p, &v, sizeof v); }
    static V bcast(float x) { return V{x, x, x, x}; }
    static V fma(V a, V b, V c) {  // rounded as sgemm_madd (gemm.h) rounds, lane by lane
        if constexpr (SGEMM_FUSED)
            return V{sgemm_madd(a[0], b[0], c[0]), sgemm_madd(a[1], b[1], c[1]),
                     sgemm_madd(a[2], b[2], c[2]), sgemm_madd(a[3], b[3], c[3])};
        return a * b + c;
    }
    static V mul(V a, V b) { return a * b; }
};
#endif

constexpr int MR = Simd::MR;            // rows of the register tile
constexpr int NR = Simd::W * Simd::NV;  // columns of the register tile
// FlashAttention (common/kernels/attention.cpp) steps through packed K and V in tiles of 256
// columns, which must start on a panel boundary.
static_assert(256 % NR == 0, "NR must divide attention's Bc = 256");
// The tile for a narrow C with a row-major A read in place (sgemm_a_in_place, N <= 4 NR): with
// AVX-512, 6 x 64 rather than 12 x 32, the same 24 accumulators. Each A value broadcast feeds 4
// FMAs instead of 2, and C's whole width (P V in attention: N = d_k = 64) is one panel. Wider C
// keeps 12 x 32 (its B micro-panel, 32 KB, fits L1 where sgemm_packed keeps it there; 64 KB would
// not), and so does a transposed A (its kernels are for that tile only). Elsewhere the one tile.
constexpr int MR_WIDE = Simd::MR_WIDE;
constexpr int NR_WIDE = Simd::W * Simd::NV_WIDE;
// KC, the shared dimension per block (a Bp micro-panel is KC*NR*4 bytes, for L1), is the same on
// every CPU: each KC slice is summed in registers and then added to C, so KC fixes the order of
// every output's sums, and with it every printed value and figure, bit for bit.
constexpr int KC = 256;
// MC (rows of A per block) and NC (columns of B per block) only group the tiles; they follow the
// caches of the CPU that runs (sgemm_blocking(), below), within these bounds.
constexpr int MC_MAX = 1008;            // a multiple of every MR (12, 6, 4)
constexpr int NC_MAX = 8192;            // a multiple of every NR
// The share of one core's L2 that the packed A block takes (144 rows on a 1 MB L2): most of L2
// is left to the B micro-panels passing through and the C tiles (sgemm_blocking).
constexpr double L2_SHARE = 9.0 / 64;
constexpr int DIRECT_B_MAX_M = 16;      // up to this many rows, a row-major B is read in place

inline int ceil_div(int a, int b) { return (a + b - 1) / b; }

// alpha and beta arrive by reference: passed by value, GCC keeps both in vector registers
// through the k loop, which leaves too few for the 12 accumulators + 2 B vectors + 1 A
// broadcast, and it then re-reads B from memory on every FMA (the loop turns load-bound).
struct Scale {
    float alpha, beta;
};

// Where the micro-kernel finds A:
//   packed: one packed micro-panel (kc, MR), element (i, k) at a[k * MR + i]
//   rows:   an m x kc block of a row-major A read in place, (i, k) at a[i * lda + k]
//   cols:   the same of a transposed A, (i, k) at a[k * lda + i]
// The mode is a template argument, not two strides known only at run time (a[i * a_rs + k *
// a_ks]): with those GCC keeps a register for each of the 12 row offsets, runs out of general
// registers and moves offsets between them and vector registers on every k step, which slows
// attention's tile products (they all read A in place). A row-major A is read through four
// row pointers, row i at row[i / 3] + (i % 3) * lda (addressing modes scale lda by 4 and 8), a
// transposed one through one pointer and offsets 0..m-1, and both keep pace with packed A.
// Only addresses differ between the modes: the products are the same bit for bit.
enum class AMode { packed, rows, cols };

// C[0:m, 0:n] = alpha * (a @ b) + beta * C, with a as Mode says (lda unused when packed); b is
// kc rows of NR floats, b_stride apart (NR when packed, ldb when read in place).
// With PrefetchNext, C_next is the C tile the caller's next call writes (or nullptr): its lines
// are asked for while this call's FMAs run (below); without, C_next is not used.
// m <= MR is a template argument so a short edge tile does no wasted work.
// NV vectors across (NR = NV * W columns): Simd::NV, or Simd::NV_WIDE with A in place.
template <int m, AMode Mode, bool PrefetchNext, int NV = Simd::NV>
void micro_kernel(int kc, const float* a, long lda, const float* b, long b_stride, float* C,
                  long ldc, const float* C_next, int n, const Scale& scale) {
    using V = Simd::V;
    constexpr int W = Simd::W, NR = NV * W;
    static_assert(Mode != AMode::packed || NV == Simd::NV, "packed panels are MR x (NV W)");
    V acc[m][NV];  // the C tile, held in registers
    // rows: row i of the block at row[i / 3] + (i % 3) * lda; each pointer steps along k
    const float* row[4] = {a, a, a, a};
    if constexpr (Mode == AMode::rows) {
        if constexpr (m > 3) row[1] = a + 3 * lda;
        if constexpr (m > 6) row[2] = a + 6 * lda;
        if constexpr (m > 9) row[3] = a + 9 * lda;
    }
#pragma GCC unroll 16
    for (int i = 0; i < m; i++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) acc[i][v] = Simd::zero();

    // Without PrefetchNext (C a tile in L1 or L2, as in attention's tile products): the C tile
    // is written at the end, so its cache lines are asked for now, while the FMAs run.
    // With it (sgemm_packed, whose C may be far bigger than L2: a 2048 x 2048 product is 16 MB,
    // read and written once per KC slice, its lines coming from L3): the next call's C tile
    // (MR rows, both ends of each: 2 MR lines where a row is 128 bytes), one line every
    // pf_every k steps: asked for all at once at the start of the call that writes them, they
    // would keep the FMAs waiting. Attention's tile products, whose C is already close, go
    // without it.
    if constexpr (!PrefetchNext) {
        for (int i = 0; i < m; i++) {
            __builtin_prefetch(C + i * ldc, 1);
            __builtin_prefetch(C + i * ldc + NR - 1, 1);
        }
    }
    const int pf_lines = PrefetchNext && C_next ? 2 * MR : 0;
    const int pf_every = std::max(1, kc / std::max(1, pf_lines));
    int pf = 0, pf_k = 0;  // lines asked for so far, and the k of the next one
    // Two k steps a turn of the loop: the pointer steps and the loop's test are paid half as often.
#pragma GCC unroll 2
    for (int k = 0; k < kc; k++) {
        if constexpr (PrefetchNext) {
            if (pf < pf_lines && k == pf_k) {
                __builtin_prefetch(C_next + (pf >> 1) * ldc + (pf & 1) * (NR - 1), 1);
                pf++, pf_k += pf_every;
            }
        }
        V bv[NV];  // one row of the B panel
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) bv[v] = Simd::load(b + v * W);
#pragma GCC unroll 16
        for (int i = 0; i < m; i++) {
            const float x = Mode == AMode::packed ? a[(long)k * MR + i]
                            : Mode == AMode::rows ? row[i / 3][(i % 3) * lda]
                                                  : a[i];
            const V ai = Simd::bcast(x);
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) acc[i][v] = Simd::fma(ai, bv[v], acc[i][v]);
        }
        b += b_stride;
        if constexpr (Mode == AMode::rows) {
#pragma GCC unroll 4
            for (int q = 0; q < 4; q++) row[q]++;
        } else if constexpr (Mode == AMode::cols) {
            a += lda;
        }
    }

    const float alpha = scale.alpha, beta = scale.beta;
    const V valpha = Simd::bcast(alpha), vbeta = Simd::bcast(beta);
    if (n == NR && alpha == 1.0f && beta == 0.0f) {  // C = A B: the tile as it is
#pragma GCC unroll 16
        for (int i = 0; i < m; i++)
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) Simd::store(C + i * ldc + v * W, acc[i][v]);
    } else if (n == NR) {
#pragma GCC unroll 16
        for (int i = 0; i < m; i++)
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) {
                float* c = C + i * ldc + v * W;
                V r = Simd::mul(valpha, acc[i][v]);
                if (beta != 0.0f) r = Simd::fma(vbeta, Simd::load(c), r);  // beta = 0: C unread
                Simd::store(c, r);
            }
    } else {  // right edge: only n < NR columns of C exist
        alignas(64) float tile[m][NR];
        // Unrolled like every other loop over acc: indexed by a variable anywhere, acc would
        // live in memory, zeroed on the stack before the k loop and stored there after.
#pragma GCC unroll 16
        for (int i = 0; i < m; i++)
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) Simd::store(&tile[i][v * W], acc[i][v]);
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                float& c = C[i * ldc + j];
                c = alpha * tile[i][j] + (beta == 0.0f ? 0.0f : beta * c);
            }
    }
}

using Kernel = void (*)(int, const float*, long, const float*, long, float*, long, const float*,
                        int, const Scale&);

template <AMode Mode, bool PrefetchNext, int NV = Simd::NV, int... I>
constexpr auto make_kernels(std::integer_sequence<int, I...>) {
    return std::array<Kernel, sizeof...(I)>{&micro_kernel<I + 1, Mode, PrefetchNext, NV>...};
}
// KERNELS[m - 1] handles a tile of m rows of packed A; KERNELS_NEXT the same, asking for the
// next call's C tile as it goes; KERNELS_A_ROWS and KERNELS_A_COLS of A in place, row-major
// and transposed.
constexpr auto ROW_COUNTS = std::make_integer_sequence<int, MR>{};
constexpr auto KERNELS = make_kernels<AMode::packed, false>(ROW_COUNTS);
constexpr auto KERNELS_NEXT = make_kernels<AMode::packed, true>(ROW_COUNTS);
constexpr auto KERNELS_A_ROWS = make_kernels<AMode::rows, false>(ROW_COUNTS);
constexpr auto KERNELS_A_COLS = make_kernels<AMode::cols, false>(ROW_COUNTS);
// KERNELS_WIDE[m - 1]: m rows of a row-major A in place, the wide tile (MR_WIDE x NR_WIDE).
constexpr auto KERNELS_WIDE = make_kernels<AMode::rows, false, Simd::NV_WIDE>(
    std::make_integer_sequence<int, MR_WIDE>{});

// The kernel for m rows of op(A) read in place (AMode::rows or AMode::cols), with a tile Tile_MR
// tall and Tile_NR wide: the wide tile for a row-major A only.
template <int Tile_MR = MR, int Tile_NR = NR>
Kernel direct_a_kernel(bool trans_a, int m) {
    if (trans_a) return KERNELS_A_COLS[m - 1];
    if constexpr (Tile_NR == NR_WIDE && Tile_MR == MR_WIDE) return KERNELS_WIDE[m - 1];
    else return KERNELS_A_ROWS[m - 1];
}

// Packing a row-major operand into a panel is a transpose: dst[k * dst_ld + r] = src[r * ld + k]
// for r < rows, k < kc, with lanes rows..lanes of each dst row zeroed (the panel's padding).
// Element by element that is one scalar load and one strided store per float, a large share of
// an A @ B^T's time. With AVX-512 it is done 16 rows x 8 columns at a time in registers. Each
// register is loaded with 8 columns of two rows, one per 256-bit half: x[q] holds rows q and
// q + 4 (q < 4) or rows q + 4 and q + 8 (q >= 4), so that a 4 x 4 transpose inside every
// 128-bit lane of each group of four registers (two rounds of in-lane shuffles) leaves u[j] with
// rows 0-3 and 4-7 (u[4 + j]: 8-11 and 12-15) of columns j and 4 + j, and one shuffle across
// lanes per column puts its 16 rows in order. Whole rows of a 16 x 16 block loaded and
// transposed in registers would take two rounds of shuffles across lanes. The loads are plain
// wherever a row has all 8 columns: a masked load whose line is not yet in L1 costs far more.
// Only copies: the packed panel, and so every product, is bit for bit what the scalar loops
// write.
// Returns false where there is no AVX-512 (the caller then runs its scalar loop).
// rows <= lanes <= 16.
#if defined(__AVX512F__) && !defined(__clang__)
// GCC's insert and unpack intrinsics start from _mm512_undefined_ps(), which its
// -Wmaybe-uninitialized reports once inlined (a known false positive; clang has neither).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
bool transpose_pack(const float* src, long ld, int rows, int kc, float* dst, int dst_ld,
                    int lanes) {
#if defined(__AVX512F__)
    const __mmask16 lane_mask = (__mmask16)((1u << lanes) - 1);
    for (int k0 = 0; k0 < kc; k0 += 8) {
        const int cols = std::min(8, kc - k0);
        const __mmask8 col_mask = (__mmask8)((1u << cols) - 1);  // never reads past a row's end
        auto load = [&](int r) {  // row r, columns k0..k0+8 (zeros from row `rows` on)
            if (r >= rows) return _mm256_setzero_ps();
            const float* p = src + r * ld + k0;
            return cols == 8 ? _mm256_loadu_ps(p) : _mm256_maskz_loadu_ps(col_mask, p);
        };
        __m512 x[8];  // x[q]: rows q, q + 4 (q < 4) or q + 4, q + 8 (q >= 4), in its two halves
#pragma GCC unroll 8
        for (int q = 0; q < 8; q++) {
            const int r = q < 4 ? q : q + 4;
            x[q] = _mm512_insertf32x8(_mm512_castps256_ps512(load(r)), load(r + 4), 1);
        }
        // lane L of u[4g + j]: rows 8g + 4 (L / 2) .. +4 at column k0 + 4 (L % 2) + j
        __m512 u[8];
#pragma GCC unroll 2
        for (int g = 0; g < 2; g++) {
            // lane by lane: t0 interleaves the first two rows' columns 0 and 1, t1 their 2 and
            // 3; t2 and t3 the same for the other two rows
            const __m512 t0 = _mm512_unpacklo_ps(x[4 * g], x[4 * g + 1]);
            const __m512 t1 = _mm512_unpackhi_ps(x[4 * g], x[4 * g + 1]);
            const __m512 t2 = _mm512_unpacklo_ps(x[4 * g + 2], x[4 * g + 3]);
            const __m512 t3 = _mm512_unpackhi_ps(x[4 * g + 2], x[4 * g + 3]);
            u[4 * g + 0] = _mm512_shuffle_ps(t0, t2, 0x44);
            u[4 * g + 1] = _mm512_shuffle_ps(t0, t2, 0xEE);
            u[4 * g + 2] = _mm512_shuffle_ps(t1, t3, 0x44);
            u[4 * g + 3] = _mm512_shuffle_ps(t1, t3, 0xEE);
        }
        // column k0 + j: lanes 0 and 2 of u[j], then of u[4 + j]; column k0 + 4 + j: lanes 1, 3
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            if (j < cols)
                _mm512_mask_storeu_ps(dst + (long)(k0 + j) * dst_ld, lane_mask,
                                      _mm512_shuffle_f32x4(u[j], u[4 + j], 0x88));
            if (4 + j < cols)
                _mm512_mask_storeu_ps(dst + (long)(k0 + 4 + j) * dst_ld, lane_mask,
                                      _mm512_shuffle_f32x4(u[j], u[4 + j], 0xDD));
        }
    }
    return true;
#else
    (void)src, (void)ld, (void)rows, (void)kc, (void)dst, (void)dst_ld, (void)lanes;
    return false;
#endif
}
#if defined(__AVX512F__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

// A transposed B's micro-panel: PW columns of op(B) are PW rows of B, in groups of 16.
template <int PW>
bool transpose_pack_b(const float* src, long ld, int n, int kc, float* dst) {
#if defined(__AVX512F__)
    static_assert(PW % 16 == 0, "the transposing pack takes a panel in groups of 16");
    for (int g = 0; g < PW; g += 16)
        transpose_pack(src + (long)g * ld, ld, std::clamp(n - g, 0, 16), kc, dst + g, PW, 16);
    return true;
#else
    (void)src, (void)ld, (void)n, (void)kc, (void)dst;
    return false;
#endif
}

// One MR-tall micro-panel of a row-major op(A) = A (M, K): rows i0..i0+m, shared index
// p0..p0+kc -> dst (kc, MR), zero-padded below m rows. (A transposed A: pack_a_block_trans.)
void pack_a_panel(const float* A, int lda, int i0, int m, int p0, int kc, float* dst) {
    if (transpose_pack(A + (long)i0 * lda + p0, lda, m, kc, dst, MR, MR)) {
        // done 8 k at a time in registers (transpose_pack)
    } else {  // walk each source row once
        for (int r = 0; r < MR; r++) {
            if (r < m) {
                const float* src = A + (long)(i0 + r) * lda + p0;
                for (int k = 0; k < kc; k++) dst[k * MR + r] = src[k];
            } else {
                for (int k = 0; k < kc; k++) dst[k * MR + r] = 0.0f;
            }
        }
    }
}

// The row panels of a block of a transposed op(A) (A is (K, M), so op(A)'s row i is A's column
// i): rows i0..i0+rows, shared index p0..p0+kc -> panel q (kc, MR) at dst + q * kc * MR,
// zero-padded below the last row. A panel row is a contiguous stretch of a row of A. Packed
// panel by panel, every k step would read a new row of A, lda apart; where lda is a multiple of
// 1024 floats (P^T dO in the naive backward) those rows all fall in one L1 set, and each of a
// block's 12 panels would read them again after they had left L1. Packed KG rows at a time
// across all the panels, their lines stay in L1 at every lda.
void pack_a_block_trans(const float* A, int lda, int i0, int rows, int p0, int kc, float* dst) {
    static_assert(MR <= 16, "a row of a panel is one masked vector");
    constexpr int KG = 8;
    const int panels = ceil_div(rows, MR);
    for (int k0 = 0; k0 < kc; k0 += KG) {
        const int k1 = std::min(kc, k0 + KG);
        for (int q = 0; q < panels; q++) {
            const int m = std::min(MR, rows - q * MR);
            float* const panel = dst + (long)q * kc * MR;
            for (int k = k0; k < k1; k++) {
                const float* src = A + (long)(p0 + k) * lda + i0 + q * MR;
                float* d = panel + (long)k * MR;
#if defined(__AVX512F__)
                if (MR == 12 && m == 12) {  // unmasked: 8 + 4 floats (cheaper than masked)
                    _mm256_storeu_ps(d, _mm256_loadu_ps(src));
                    _mm_storeu_ps(d + 8, _mm_loadu_ps(src + 8));
                } else {  // m floats in, MR out (zeros past m)
                    _mm512_mask_storeu_ps(d, (__mmask16)((1u << MR) - 1),
                                          _mm512_maskz_loadu_ps((__mmask16)((1u << m) - 1), src));
                }
#else
                for (int r = 0; r < MR; r++) d[r] = r < m ? src[r] : 0.0f;
#endif
            }
        }
    }
}

// The row panels of op(A)'s rows i0..i0+rows, shared index p0..p0+kc -> panel q at
// dst + q * kc * MR.
void pack_a_block(const float* A, int lda, bool trans_a, int i0, int rows, int p0, int kc,
                  float* dst) {
    if (trans_a) return pack_a_block_trans(A, lda, i0, rows, p0, kc, dst);
    for (int q = 0; q * MR < rows; q++)
        pack_a_panel(A, lda, i0 + q * MR, std::min(MR, rows - q * MR), p0, kc,
                     dst + (long)q * kc * MR);
}

// One micro-panel of op(B), PW wide (NR, or NR_WIDE): shared index p0..p0+kc, columns
// j0..j0+n -> dst (kc, PW), zero-padded right of n columns.
template <int PW = NR>
void pack_b_panel(const float* B, int ldb, bool trans_b, int p0, int kc, int j0, int n,
                  float* dst) {
    constexpr int NR = PW;  // the panel's width, in this function
    if (!trans_b && n == NR) {  // a full panel: each row is NR/W whole vectors
        for (int k = 0; k < kc; k++) {
            const float* src = B + (long)(p0 + k) * ldb + j0;
#pragma GCC unroll 4
            for (int v = 0; v < NR / Simd::W; v++)
                Simd::store(dst + k * NR + v * Simd::W, Simd::load(src + v * Simd::W));
        }
    } else if (!trans_b) {  // B is (K, N): a row of the panel is contiguous
        for (int k = 0; k < kc; k++) {
            const float* src = B + (long)(p0 + k) * ldb + j0;
            for (int c = 0; c < n; c++) dst[k * NR + c] = src[c];
            for (int c = n; c < NR; c++) dst[k * NR + c] = 0.0f;
        }
    } else if (transpose_pack_b<NR>(B + (long)j0 * ldb + p0, ldb, n, kc, dst)) {
        // B is (N, K): done 8 k at a time in registers (transpose_pack)
    } else {  // B is (N, K)
        for (int c = 0; c < NR; c++) {
            if (c < n) {
                const float* src = B + (long)(j0 + c) * ldb + p0;
                for (int k = 0; k < kc; k++) dst[k * NR + c] = src[k];
            } else {
                for (int k = 0; k < kc; k++) dst[k * NR + c] = 0.0f;
            }
        }
    }
}

// C := beta * C (the whole product is zero when K = 0 or alpha = 0).
void scale_c(int M, int N, float beta, float* C, int ldc) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float& c = C[(long)i * ldc + j];
            c = beta == 0.0f ? 0.0f : beta * c;
        }
}

// The threads split C into nt_r row groups times nt_c column groups (nt_r * nt_c = nt).
struct Split {
    int nt_r, nt_c;
};
Split split_threads(int nt, int row_panels, int col_panels) {
    if (nt == 1) return {1, 1};
    if (row_panels >= 4 * nt) return {nt, 1};
    if (col_panels >= 4 * nt) return {1, nt};
    return row_panels >= col_panels ? Split{nt, 1} : Split{1, nt};
}

// [begin, end) of part t when `total` items are split into `parts` near-equal ranges.
inline std::pair<int, int> range_of(int t, int parts, int total) {
    return {(int)((long)total * t / parts), (int)((long)total * (t + 1) / parts)};
}

// Packing workspace. Small single-threaded calls (attention tiles, thousands of them) reuse a
// per-thread buffer instead of allocating; it is tracked like every other buffer.
constexpr size_t SMALL_WORKSPACE = 64 * 1024;  // floats
float* small_workspace() {
    thread_local mem::Buffer<float> ws(SMALL_WORKSPACE);
    return ws.data();
}

// Room for nt threads of per_thread floats each: the calling thread's small buffer where one
// thread's fits in it, else a new buffer that `held` keeps for the call.
float* thread_workspace(int nt, size_t per_thread, mem::Buffer<float>& held) {
    if (nt == 1 && per_thread <= SMALL_WORKSPACE) return small_workspace();
    held = mem::Buffer<float>((size_t)nt * per_thread, mem::uninit);
    return held.data();
}

// ---- the cache blocking, from the CPU that runs ---------------------------------------------
// The bytes of one core's cache at `level` (2 or 3): sysconf, which glibc answers from CPUID on
// x86-64, Intel and AMD alike; else Linux's description of cpu0's caches; 0 where neither says.
long cache_bytes(int level) {
#if defined(_SC_LEVEL2_CACHE_SIZE) && defined(_SC_LEVEL3_CACHE_SIZE)
    const long v = sysconf(level == 2 ? _SC_LEVEL2_CACHE_SIZE : _SC_LEVEL3_CACHE_SIZE);
    if (v > 0) return v;
#endif
    for (int index = 0; index < 8; index++) {
        const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
        auto read = [&](const char* name) {
            char word[64] = "";
            if (FILE* f = std::fopen((dir + "/" + name).c_str(), "r")) {
                if (std::fscanf(f, "%63s", word) != 1) word[0] = 0;
                std::fclose(f);
            }
            return std::string(word);
        };
        if (read("level") != std::to_string(level) || read("type") == "Instruction") continue;
        const std::string size = read("size");  // "1024K", "32M"
        const long n = std::atol(size.c_str());
        return size.empty() ? 0 : size.back() == 'M' ? n << 20 : size.back() == 'K' ? n << 10 : n;
    }
    return 0;
}

SgemmBlocking& blocking() {
    static SgemmBlocking b = sgemm_blocking_for(cache_bytes(2), cache_bytes(3));
    return b;
}

// The general path: pack both operands. Each thread packs the B panels and A blocks it uses
// into its own workspace, so the threads never wait for each other (no barriers: on a busy
// machine a barrier waits for whichever thread the OS has parked), at the price of packing B
// once per thread.
void sgemm_packed(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
                  int lda, const float* B, int ldb, float beta, float* C, int ldc, int nt) {
    const SgemmBlocking& bl = blocking();
    const int MC = bl.mc, NC = bl.nc;
    const int kc_max = std::min(K, KC);
    const int nc_max = std::min(N, NC);
    const int row_panels = ceil_div(M, MR);
    const size_t a_floats = (size_t)std::min(MC, row_panels * MR) * kc_max;  // (MC/MR, KC, MR)
    const size_t b_floats = (size_t)kc_max * ceil_div(nc_max, NR) * NR;      // (NC/NR, KC, NR)
    const size_t per_thread = a_floats + b_floats;
    mem::Buffer<float> held;
    float* const ws = thread_workspace(nt, per_thread, held);
    parallel::run(nt, [&](int t, int nthreads) {
        float* const Bp = ws + (size_t)t * per_thread;  // my packed B panels
        float* const Ap = Bp + b_floats;                 // my packed A block
        for (int jc = 0; jc < N; jc += NC) {
            const int nc = std::min(NC, N - jc);
            const int col_panels = ceil_div(nc, NR);
            const Split s = split_threads(nthreads, row_panels, col_panels);
            const auto [r0, r1] = range_of(t / s.nt_c, s.nt_r, row_panels);  // my row panels
            const auto [c0, c1] = range_of(t % s.nt_c, s.nt_c, col_panels);  // my col panels
            if (r0 == r1 || c0 == c1) continue;
            for (int pc = 0; pc < K; pc += KC) {
                const int kc = std::min(KC, K - pc);
                const Scale scale{alpha, pc == 0 ? beta : 1.0f};  // later slices accumulate
                for (int jr = c0; jr < c1; jr++)
                    pack_b_panel(B, ldb, trans_b, pc, kc, jc + jr * NR,
                                 std::min(NR, nc - jr * NR), Bp + (long)(jr - c0) * kc * NR);

                for (int ib = r0; ib < r1; ib += MC / MR) {  // an L2 block of row panels
                    const int ie = std::min(r1, ib + MC / MR);
                    pack_a_block(A, lda, trans_a, ib * MR, std::min(ie * MR, M) - ib * MR, pc, kc,
                                 Ap);
                    for (int jr = c0; jr < c1; jr++) {
                        const int j = jc + jr * NR;
                        const int n = std::min(NR, N - j);
                        const float* b = Bp + (long)(jr - c0) * kc * NR;
                        for (int ir = ib; ir < ie; ir++) {
                            const int i = ir * MR;
                            const int m = std::min(MR, M - i);
                            // next: the tile below, or the top of the next panel's column
                            const float* C_next = ir + 1 < ie  ? C + (long)(i + MR) * ldc + j
                                                  : jr + 1 < c1 ? C + (long)ib * MR * ldc + j + NR
                                                                : nullptr;
                            KERNELS_NEXT[m - 1](kc, Ap + (long)(ir - ib) * kc * MR, 0, b, NR,
                                                C + (long)i * ldc + j, ldc, C_next, n, scale);
                        }
                    }
                }
            }
        }
    });
}

// A row-major op(A) that fits in one core's L2 (256 x 256 up to 512 x 512), or any op(A) that
// feeds a narrow C (N <= 4 NR, each element of A used only a few times), is read where it lies,
// and the loops turn round, rows outer:
//
//   for jb in N step NB:                 a block of B that stays in L2 (half of it)
//     for pc in K step KC:
//       pack B[pc:pc+KC, jb:jb+NB]        (or read it in place: a row-major B, see b_in_place)
//       for ir in M step MR:             MR rows of A (MR x KC floats, 12 KB) stay in L1 ...
//         for jr in NB step NR:          ... while the B micro-panels stream past from L2
//           micro-kernel
//
// Packing A would be a pass over memory the product itself does not need, and with rows outer
// each row slice is read from L2 once per block of B. A transposed A (AMode::cols) costs more in
// place: each k step of the kernel reads a new line, lda apart (P^T dO at n = 1024: 4 KB, one L1
// set for all of them), so a tile's lines come from L2 again for every panel of B. Where C is
// wide, the pack is shared by many panels and A is packed; where it is narrow, the pack (a read,
// a write and a read back for each element, used only N times) costs more than the misses,
// which the out-of-order core overlaps with the tile's FMAs. The same kernels, the same KC
// slices in the same order: the bits are sgemm_packed's.
// MR and NR here are the tile's: MR x NR, or MR_WIDE x NR_WIDE for a narrow C and a row-major A.
// The threads split the columns (a small row-major A is read whole by each, from its own L2), or,
// where C is too narrow for that or A is transposed, the rows: a thread then reads only its own
// stretch of each line of a transposed A, where split by columns both would read every line.
template <int Tile_MR, int Tile_NR, bool trans_a>
void sgemm_a_in_place(bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                      const float* B, int ldb, float beta, float* C, int ldc, int nt,
                      bool small_a) {
    static_assert(!trans_a || (Tile_MR == MR && Tile_NR == NR),
                  "a transposed A has kernels for the MR x NR tile only");
    const SgemmBlocking& bl = blocking();
    const int NB = bl.nb;
    constexpr int MR = Tile_MR, NR = Tile_NR;  // the tile, in this function
    const int row_panels = ceil_div(M, MR), col_panels = ceil_div(N, NR);
    const int kc_max = std::min(K, KC);
    // A row-major B is read in place too where that costs less than packing it: a small one
    // (within a quarter of L2), or one whose rows lie at most 2 KB apart. A pass that packs B
    // is paid back only over many row tiles, and here A, and so M, is small; but rows 4 KB or
    // more apart are each a page of their own, and a micro-panel read in place then runs slower
    // than the packed one. Only B's ragged last panel is packed, since a kernel reads NR floats
    // of every row.
    const bool b_in_place =
        !trans_b && (long(K) * N * long(sizeof(float)) <= bl.l2_bytes / 4 || ldb <= 512);
    const size_t b_floats = (size_t)kc_max * std::min(ceil_div(NB, NR), col_panels) * NR;
    mem::Buffer<float> held;
    float* const ws = thread_workspace(nt, b_floats, held);
    parallel::run(nt, [&](int t, int nthreads) {
        float* const Bp = ws + (size_t)t * b_floats;  // my packed B block (NB/NR, KC, NR)
        const Split s = !trans_a && small_a && col_panels >= nthreads
                            ? Split{1, nthreads}
                            : split_threads(nthreads, row_panels, col_panels);
        const auto [r0, r1] = range_of(t / s.nt_c, s.nt_r, row_panels);  // my row panels
        const auto [c0, c1] = range_of(t % s.nt_c, s.nt_c, col_panels);  // my col panels
        for (int jb = c0; jb < c1 && r0 < r1; jb += NB / NR) {  // an L2 block of col panels
            const int je = std::min(c1, jb + NB / NR);
            for (int pc = 0; pc < K; pc += KC) {
                const int kc = std::min(KC, K - pc);
                const Scale scale{alpha, pc == 0 ? beta : 1.0f};  // later slices accumulate
                for (int jr = jb; jr < je; jr++) {
                    const int n = std::min(NR, N - jr * NR);
                    if (!b_in_place || n < NR)
                        pack_b_panel<NR>(B, ldb, trans_b, pc, kc, jr * NR, n,
                                         Bp + (long)(jr - jb) * kc * NR);
                }
                for (int ir = r0; ir < r1; ir++) {
                    const int i = ir * MR;
                    const int m = std::min(MR, M - i);
                    const Kernel kernel = direct_a_kernel<MR, NR>(trans_a, m);
                    const float* a = trans_a ? A + (long)pc * lda + i : A + (long)i * lda + pc;
                    for (int jr = jb; jr < je; jr++) {
                        const int j = jr * NR;
                        const int n = std::min(NR, N - j);
                        const bool in_place = b_in_place && n == NR;
                        const float* b = in_place ? B + (long)pc * ldb + j
                                                  : Bp + (long)(jr - jb) * kc * NR;
                        kernel(kc, a, lda, b, in_place ? ldb : NR, C + (long)i * ldc + j, ldc,
                               nullptr, n, scale);
                    }
                }
            }
        }
    });
}

// Few rows and B row-major: pack only A (tiny, all of it, up front) and read B where it lies.
// The threads split the columns; there is no barrier, which matters for the LSTM, whose n
// steps each make one such call.
void sgemm_direct_b(bool trans_a, int M, int N, int K, float alpha, const float* A, int lda,
                    const float* B, int ldb, float beta, float* C, int ldc, int nt) {
    const int row_panels = ceil_div(M, MR);
    const int col_panels = ceil_div(N, NR);
    const int kc_max = std::min(K, KC);
    // Ap: for each KC slice, row_panels micro-panels (kc, MR)
    mem::Buffer<float> Ap((size_t)row_panels * MR * K, mem::uninit);
    for (int pc = 0; pc < K; pc += KC) {
        const int kc = std::min(KC, K - pc);
        pack_a_block(A, lda, trans_a, 0, M, pc, kc, Ap.data() + (long)row_panels * MR * pc);
    }
    nt = std::min(nt, col_panels);
    // A packed copy of the ragged edge, one per thread.
    mem::Buffer<float> edge((size_t)nt * kc_max * NR, mem::uninit);

    parallel::run(nt, [&](int t, int nthreads) {
        const auto [c0, c1] = range_of(t, nthreads, col_panels);
        float* my_edge = edge.data() + (long)t * kc_max * NR;
        for (int pc = 0; pc < K; pc += KC) {
            const int kc = std::min(KC, K - pc);
            const Scale scale{alpha, pc == 0 ? beta : 1.0f};
            const float* Ap_k = Ap.data() + (long)row_panels * MR * pc;
            for (int jr = c0; jr < c1; jr++) {
                const int j = jr * NR;
                const int n = std::min(NR, N - j);
                const float* b = B + (long)pc * ldb + j;
                long b_stride = ldb;
                if (n < NR) {  // the last columns would read past the row: pack them
                    pack_b_panel(B, ldb, false, pc, kc, j, n, my_edge);
                    b = my_edge;
                    b_stride = NR;
                }
                for (int ir = 0; ir < row_panels; ir++) {
                    const int i = ir * MR;
                    const int m = std::min(MR, M - i);
                    KERNELS[m - 1](kc, Ap_k + (long)ir * kc * MR, 0, b, b_stride,
                                   C + (long)i * ldc + j, ldc, nullptr, n, scale);
                }
            }
        }
    });
}

}  // namespace

void sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
           const float* B, int ldb, float beta, float* C, int ldc) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0 || alpha == 0.0f) {
        scale_c(M, N, beta, C, ldc);
        return;
    }
    // Threads pay off only above a few hundred thousand multiply-adds; inside an existing
    // parallel region (e.g. attention over B*h) the caller already owns the cores.
    const double flops = 2.0 * M * N * K;
    const int nt = (omp_in_parallel() || flops < 4e6) ? 1 : omp_get_max_threads();
    const bool small_a = long(M) * K * long(sizeof(float)) <= blocking().l2_bytes;
    if (!trans_b && M <= DIRECT_B_MAX_M)
        sgemm_direct_b(trans_a, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, nt);
    else if (trans_a && N <= 4 * NR)
        sgemm_a_in_place<MR, NR, true>(trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, nt,
                                       small_a);
    else if (!trans_a && N <= 4 * NR)
        sgemm_a_in_place<MR_WIDE, NR_WIDE, false>(trans_b, M, N, K, alpha, A, lda, B, ldb, beta,
                                                  C, ldc, nt, small_a);
    else if (!trans_a && small_a)
        sgemm_a_in_place<MR, NR, false>(trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, nt,
                                        small_a);
    else
        sgemm_packed(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, nt);
}

int sgemm_panel_width() { return NR; }

SgemmBlocking sgemm_blocking_for(long l2_bytes, long l3_bytes) {
    if (l2_bytes <= 0) l2_bytes = 1L << 20;  // what the CPU does not say: 1 MB and 32 MB
    if (l3_bytes <= 0) l3_bytes = 32L << 20;
    SgemmBlocking b;
    b.l2_bytes = l2_bytes, b.l3_bytes = l3_bytes;
    // Ap, MC x KC floats, takes L2_SHARE of L2; the rest holds the B micro-panels passing
    // through (KC x NR each) and the C tiles.
    const long mc = long(L2_SHARE * double(l2_bytes)) / (KC * long(sizeof(float)));
    b.mc = int(std::clamp(mc / 12 * 12, 48L, long(MC_MAX)));
    // Bp, KC x NC floats, takes an eighth of L3 (shared by the cores, and by every thread's Bp).
    const long nc = l3_bytes / 8 / (KC * long(sizeof(float)));
    b.nc = int(std::clamp(nc / 64 * 64, 512L, long(NC_MAX)));
    // With A read in place, Bp (KC x NB floats) takes half of L2: 512 columns on a 1 MB L2.
    const long nb = l2_bytes / 2 / (KC * long(sizeof(float)));
    b.nb = int(std::clamp(nb / 64 * 64, 64L, long(NC_MAX)));
    return b;
}

SgemmBlocking sgemm_blocking() { return blocking(); }

void sgemm_set_blocking(int mc, int nc, int nb) {
    auto columns = [](int c) { return c % 64 == 0 && c >= 64 && c <= NC_MAX; };
    if (mc % 12 != 0 || mc < 12 || mc > MC_MAX || !columns(nc) || !columns(nb))
        throw std::invalid_argument("sgemm_set_blocking: mc must be a multiple of 12 up to " +
                                    std::to_string(MC_MAX) + ", nc and nb multiples of 64 up to " +
                                    std::to_string(NC_MAX));
    blocking().mc = mc, blocking().nc = nc, blocking().nb = nb;
}

int sgemm_k_slice() { return KC; }

long sgemm_packed_b_floats(int K, int N) { return (long)ceil_div(N, NR) * NR * K; }

void sgemm_pack_b(bool trans_b, int K, int N, const float* B, int ldb, float* Bp) {
    for (int jr = 0; jr < ceil_div(N, NR); jr++)
        pack_b_panel(B, ldb, trans_b, 0, K, jr * NR, std::min(NR, N - jr * NR),
                     Bp + (long)jr * K * NR);
}

// op(A) is read where it lies, rows outer: their slice of A stays in L1 while the panels pass.
void sgemm_packed_b(bool trans_a, int M, int N, int K, float alpha, const float* A, int lda,
                    const float* Bp, long panel_stride, float beta, float* C, int ldc) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0 || alpha == 0.0f) {
        scale_c(M, N, beta, C, ldc);
        return;
    }
    for (int pc = 0; pc < K; pc += KC) {
        const int kc = std::min(KC, K - pc);
        const Scale scale{alpha, pc == 0 ? beta : 1.0f};  // later slices accumulate
        for (int i = 0; i < M; i += MR) {
            const int m = std::min(MR, M - i);
            const float* a = trans_a ? A + (long)pc * lda + i : A + (long)i * lda + pc;
            const Kernel kernel = direct_a_kernel(trans_a, m);
            for (int j = 0; j < N; j += NR)
                kernel(kc, a, lda, Bp + (j / NR) * panel_stride + (long)pc * NR, NR,
                       C + (long)i * ldc + j, ldc, nullptr, std::min(NR, N - j), scale);
        }
    }
}

size_t sgemm_workspace_bytes_max() {
    const size_t nt = (size_t)omp_get_max_threads();
    // Worst case: every thread inside a parallel region runs a large single-threaded call, at
    // the blocking in force.
    const SgemmBlocking& bl = blocking();
    return nt * ((size_t)KC * (std::max(bl.nc, bl.nb) + bl.mc) + SMALL_WORKSPACE) * sizeof(float);
}

// ---- tiny products ---------------------------------------------------------------------------
// The attention's per-head products (n x d_k by d_k x n, n <= 10 in chapter 7) are too small for
// packing to pay: sgemm_small keeps one SMALL_MR x SMALL_N tile of C in registers over the whole
// k loop, reads op(A) where it lies and op(B) from a zero-padded copy (or in place, when its rows
// are whole vectors), and stores the tile once. Its arithmetic is the micro-kernel's.
namespace {

constexpr int SMALL_NV = 16 / Simd::W < 1 ? 1 : 16 / Simd::W;  // vectors across a tile
constexpr int SMALL_N = SMALL_NV * Simd::W;                       // columns of a tile (16)
constexpr int SMALL_MR = 4;  // rows: 4 (AVX-512) or 8 (AVX2) independent chains of FMAs

// C[0:m, 0:n] = (or +=) a @ b for one tile: a is m x K read at a[i * a_rs + k * a_ks], b is K
// rows of SMALL_N floats, b_stride apart.
template <int m>
void small_tile(int K, const float* a, long a_rs, long a_ks, const float* b, long b_stride,
                float* C, long ldc, int n, bool accumulate) {
    using V = Simd::V;
    constexpr int W = Simd::W;
    V acc[m][SMALL_NV];  // the C tile, held in registers (the unrolled loops keep it there)
#pragma GCC unroll 8
    for (int i = 0; i < m; i++)
#pragma GCC unroll 4
        for (int v = 0; v < SMALL_NV; v++) acc[i][v] = Simd::zero();
    for (int k = 0; k < K; k++) {
        V bv[SMALL_NV];
#pragma GCC unroll 4
        for (int v = 0; v < SMALL_NV; v++) bv[v] = Simd::load(b + (long)k * b_stride + v * W);
#pragma GCC unroll 8
        for (int i = 0; i < m; i++) {
            const V ai = Simd::bcast(a[i * a_rs + k * a_ks]);
#pragma GCC unroll 4
            for (int v = 0; v < SMALL_NV; v++) acc[i][v] = Simd::fma(ai, bv[v], acc[i][v]);
        }
    }
    const V one = Simd::bcast(1.0f);
    if (n == SMALL_N) {
#pragma GCC unroll 8
        for (int i = 0; i < m; i++)
#pragma GCC unroll 4
            for (int v = 0; v < SMALL_NV; v++) {
                float* c = C + i * ldc + v * W;
                // C + acc, rounded once, as the micro-kernel's beta = 1 (1 * C + acc)
                Simd::store(c, accumulate ? Simd::fma(one, Simd::load(c), acc[i][v]) : acc[i][v]);
            }
        return;
    }
    alignas(64) float tile[m][SMALL_N];  // right edge: only n < SMALL_N columns of C exist
#pragma GCC unroll 8
    for (int i = 0; i < m; i++)
#pragma GCC unroll 4
        for (int v = 0; v < SMALL_NV; v++) Simd::store(&tile[i][v * W], acc[i][v]);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float& c = C[i * ldc + j];
            c = accumulate ? c + tile[i][j] : tile[i][j];
        }
}

using SmallTile = void (*)(int, const float*, long, long, const float*, long, float*, long, int,
                           bool);
static_assert(SMALL_MR == 4, "SMALL_TILES lists one tile function per row count");
constexpr SmallTile SMALL_TILES[SMALL_MR] = {&small_tile<1>, &small_tile<2>, &small_tile<3>,
                                             &small_tile<4>};  // [m - 1]: m rows

}  // namespace

void sgemm_small(bool trans_a, bool trans_b, int M, int N, int K, const float* A, int lda,
                 const float* B, int ldb, bool accumulate, float* C, int ldc) {
    if (M <= 0 || N <= 0) return;
    // op(B) (K, Np): B itself when its rows are whole tiles, else a zero-padded copy
    const int Np = ceil_div(N, SMALL_N) * SMALL_N;
    alignas(64) float Bp[SGEMM_SMALL_MAX * (SGEMM_SMALL_MAX + SMALL_N)];
    const float* b = B;
    long b_stride = ldb;
    if (trans_b || Np != N) {
        std::fill(Bp, Bp + (long)K * Np, 0.0f);  // the padding (one fill, not one per row)
        for (int k = 0; k < K; k++) {
            float* row = Bp + (long)k * Np;
            if (trans_b)  // B is (N, K): column k of it
                for (int j = 0; j < N; j++) row[j] = B[(long)j * ldb + k];
            else
                for (int j = 0; j < N; j++) row[j] = B[(long)k * ldb + j];
        }
        b = Bp;
        b_stride = Np;
    }
    const long a_rs = trans_a ? 1 : lda, a_ks = trans_a ? lda : 1;  // op(A)[i, k] at i*a_rs+k*a_ks
    for (int i = 0; i < M; i += SMALL_MR) {
        const int m = std::min(SMALL_MR, M - i);
        for (int j = 0; j < N; j += SMALL_N) {
            const float* a = A + (long)i * a_rs;
            float* c = C + (long)i * ldc + j;
            const int n = std::min(SMALL_N, N - j);
            SMALL_TILES[m - 1](K, a, a_rs, a_ks, b + j, b_stride, c, ldc, n, accumulate);
        }
    }
}
