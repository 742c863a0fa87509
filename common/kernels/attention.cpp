// Scaled dot-product attention, two algorithms (see attention.h for the contract).
//
// Notation for one (batch, head) slice, as in the FlashAttention-2 paper:
//   Q, K, V, O: (n, d_k)   S = Q K^T / sqrt(d_k): (n, n)   P = softmax(S) row by row: (n, n)
//   forward:  O = P V
//   backward: dV = P^T dO,  dP = dO V^T,  dS = P * (dP - D) with D_i = sum_j P_ij dP_ij,
//             dQ = dS K / sqrt(d_k),  dK = dS^T Q / sqrt(d_k)
// The identity D_i = sum_j P_ij dP_ij = dO_i . O_i lets the fused backward get D from O and dO
// (O(n d_k) work) without ever forming a row of P.
//
// Both algorithms run the B*h slices in parallel with OpenMP; the products inside a slice go
// through sgemm, which then runs on the calling thread.
#include "common/kernels/attention.h"

#include "common/kernels/exp_fast.h"
#include "common/kernels/gemm.h"
#include "common/kernels/parallel.h"
#include "common/memory.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace {

constexpr float NEG_INF = -std::numeric_limits<float>::infinity();

// The FlashAttention tile sizes: Br query rows against Bc key rows. On a GPU they are sized to
// the shared memory of one block (64 x 64 or so); here to the L2 cache of one core (1-2 MB on
// current x86-64 cores): a 256 x 256 tile of S
// (256 KB) with the Q, K, V tiles beside it. Bigger tiles also mean fewer, longer tile
// products, so less of each one goes to starting and storing its register tiles.
constexpr int Br = 256;
constexpr int Bc = 256;
// The row stride of the S / P / dP tiles (Br, Bc): Bc + 16 floats, not Bc. 256 floats are 1 KB,
// so the rows of a tile fall into 4 of the L1 cache's 64 sets, and the tile products that walk
// down its columns (P^T dO and dS^T Q, a new row at every step of their k loop) miss L1 on
// nearly every load; one cache line more per row spreads them over all the sets.
constexpr int LDT = Bc + 16;

// Below this many multiply-adds a parallel region costs more than it saves.
constexpr double PARALLEL_MIN_WORK = 1 << 18;

// The naive forward's and backward's row blocks: a multiple of every micro-kernel's MR (12, 6
// or 4 rows). At n = 1024 a block's rows of S and P (of dP and dS) are 2 x 192 KB, beside K^T
// and V (V^T and K) packed, 2 x 256 KB: 896 KB, within one core's L2 (1-2 MB).
constexpr int NAIVE_ROWS = 48;

// Threads the (batch, head) slices are spread over, by all four kernels (naive and fused,
// forward and backward).
// Each thread's workspace is allocated before the parallel region, so what a call holds does
// not depend on how the threads happen to run.
int slice_threads(int B, int h, int n, int d_k) {
    return (double)B * h * n * n * d_k > PARALLEL_MIN_WORK ? omp_get_max_threads() : 1;
}

// max(m, s[0], ..., s[n-1]). Max is exact, so any order gives the same float: with AVX-512 four
// vectors side by side, since one chain of 16 dependent vmaxps per 256-float row would take
// most of the forward's softmax time. (-Wmaybe-uninitialized: GCC's false positive on its own
// intrinsics, as in gemm.cpp.)
#if defined(__AVX512F__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
inline float row_max(const float* s, int n, float m) {
#if defined(__AVX512F__)
    __m512 a0 = _mm512_set1_ps(m), a1 = a0, a2 = a0, a3 = a0;
    int j = 0;
    for (; j + 64 <= n; j += 64) {
        a0 = _mm512_max_ps(a0, _mm512_loadu_ps(s + j));
        a1 = _mm512_max_ps(a1, _mm512_loadu_ps(s + j + 16));
        a2 = _mm512_max_ps(a2, _mm512_loadu_ps(s + j + 32));
        a3 = _mm512_max_ps(a3, _mm512_loadu_ps(s + j + 48));
    }
    for (; j + 16 <= n; j += 16) a0 = _mm512_max_ps(a0, _mm512_loadu_ps(s + j));
    m = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(a0, a1), _mm512_max_ps(a2, a3)));
    for (; j < n; j++) m = s[j] > m ? s[j] : m;
    return m;
#else
#pragma omp simd reduction(max : m)
    for (int j = 0; j < n; j++) m = s[j] > m ? s[j] : m;  // std::max stays scalar
    return m;
#endif
}
#if defined(__AVX512F__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

// p[j] = exp_fast(s[j] - m) for j < n (p may be s); returns their sum, added up as GCC adds up
// `#pragma omp simd reduction(+ : sum)` over that loop (16 lane sums over the whole vectors,
// the last n % 16 added one by one into lane 0, then the lanes one by one from 0), so p and the
// sum are bit for bit what that loop gives. With AVX-512 the exps go through
// exp_fast16_unclamped, exp_fast16 bit for bit since m >= s[j], so s[j] - m <= 0.
inline float exp_shifted_sum(const float* s, float* p, int n, float m) {
#if defined(__AVX512F__)
    const int n16 = n / 16 * 16;
    const __m512 vm = _mm512_set1_ps(m);
    __m512 lanes = _mm512_setzero_ps();
    for (int j = 0; j < n16; j += 16) {
        const __m512 e = exp_fast16_unclamped(_mm512_sub_ps(_mm512_loadu_ps(s + j), vm));
        _mm512_storeu_ps(p + j, e);
        lanes = _mm512_add_ps(lanes, e);
    }
    alignas(64) float lane[16];
    _mm512_store_ps(lane, lanes);
    for (int j = n16; j < n; j++) {  // the last n % 16 go into lane 0
        p[j] = exp_fast(s[j] - m);
        lane[0] += p[j];
    }
    float sum = 0.0f;
    for (int v = 0; v < 16; v++) sum += lane[v];
    return sum;
#else
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int j = 0; j < n; j++) {
        p[j] = exp_fast(s[j] - m);
        sum += p[j];
    }
    return sum;
#endif
}

// p[j] = exp_fast(p[j] - m) for j < n, where m >= p[j] (the backward's m is the row's
// logsumexp), with AVX-512 16 at a time through exp_fast16_unclamped.
inline void exp_shifted(float* p, int n, float m) {
    int j = 0;
#if defined(__AVX512F__)
    const __m512 vm = _mm512_set1_ps(m);
    for (; j + 16 <= n; j += 16)
        _mm512_storeu_ps(p + j,
                         exp_fast16_unclamped(_mm512_sub_ps(_mm512_loadu_ps(p + j), vm)));
#endif
#pragma omp simd
    for (int k = j; k < n; k++) p[k] = exp_fast(p[k] - m);
}

// The operands that are rows of a (n, d_k) slice X, rows ld apart (V in P V, K in dS K, Q and
// dO in the backward's transposed products), are multiplied from a copy packed by sgemm_pack_b
// (n d_k floats rounded up to whole panels, rows_b_floats()), once per slice. Read where they
// lie, the rows of a head inside the layer's qkv are 3 d_model floats apart (6 KB at d_model =
// 512, 96 cache lines), so the rows a product walks down share two of L1's 64 sets; the packed
// copy is contiguous. (With contiguous (B, h, n, d_k) slices the copy neither helps nor hurts.)
long rows_b_floats(int n, int d_k) { return sgemm_packed_b_floats(n, d_k); }
void pack_rows_b(int n, int d_k, const float* X, long ld, float* Xp) {
    sgemm_pack_b(false, n, d_k, X, (int)ld, Xp);
}

// C = alpha * op(A) @ X[k0 : k0 + K, :] + beta * C, for X (n, d_k) packed into Xp.
void times_rows(bool trans_a, int M, int K, float alpha, const float* A, int lda, const float* Xp,
                int n, int d_k, int k0, float beta, float* C, int ldc) {
    sgemm_packed_b(trans_a, M, d_k, K, alpha, A, lda, Xp + (long)k0 * sgemm_panel_width(),
                   (long)n * sgemm_panel_width(), beta, C, ldc);
}

// K^T packed, times 1/sqrt(d_k) where that is a power of two (d_k = 64: 1/8), which makes
// Q (K^T / 8) bit for bit (Q K^T) / 8 and lets S = Q K^T / sqrt(d_k) skip the multiply by alpha
// on its way out of the registers.
// Returns the alpha that is left for S: 1, or the scale itself.
float pack_kt_scaled(int n, int d_k, const float* K, long ld, float scale, float* Kt) {
    sgemm_pack_b(true, d_k, n, K, (int)ld, Kt);  // op(B) = K^T: (d_k, n)
    int e;
    if (std::frexp(scale, &e) != 0.5f) return scale;  // not a power of two: keep alpha
    const long floats = sgemm_packed_b_floats(d_k, n);
#pragma omp simd
    for (long i = 0; i < floats; i++) Kt[i] *= scale;
    return 1.0f;
}

// Where slice bh = b * h + hh starts in a tensor of layout L.
long slice_offset(const HeadsLayout& L, int bh, int h) {
    return (bh / h) * L.batch + (bh % h) * L.head;
}

}  // namespace

// Per thread: K^T and V packed for sgemm_packed_b (2 n d_k, rounded up to whole panels).
long attention_naive_forward_workspace_floats(int n, int d_k) {
    return sgemm_packed_b_floats(d_k, n) + rows_b_floats(n, d_k);
}

size_t attention_naive_forward_workspace_bytes(int B, int h, int n, int d_k) {
    return (size_t)slice_threads(B, h, n, d_k) * attention_naive_forward_workspace_floats(n, d_k) *
           sizeof(float);
}

// Per thread: V^T and K packed for sgemm_packed_b.
long attention_naive_backward_workspace_floats(int n, int d_k) {
    return sgemm_packed_b_floats(d_k, n) + rows_b_floats(n, d_k);
}

size_t attention_naive_backward_workspace_bytes(int B, int h, int n, int d_k) {
    return (size_t)slice_threads(B, h, n, d_k) *
           attention_naive_backward_workspace_floats(n, d_k) * sizeof(float);
}

// ---- naive --------------------------------------------------------------------------------
// Everything for all B*h*n*n pairs in memory, the way autograd would run the article's
// scaled_dot_product_attention: S and P in the forward, dP and dS in the backward.

void attention_naive_forward(const float* Q, const float* K, const float* V, float* O, float* P,
                             int B, int h, int n, int d_k, bool causal) {
    const HeadsLayout L = heads_contiguous(h, n, d_k);
    attention_naive_forward(Q, K, V, O, P, B, h, n, d_k, causal, L, L);
}

void attention_naive_forward(const float* Q, const float* K, const float* V, float* O, float* P,
                             int B, int h, int n, int d_k, bool causal, const HeadsLayout& qkv,
                             const HeadsLayout& o) {
    const float scale = 1.0f / std::sqrt((float)d_k);
    const long nn = (long)n * n, ld = qkv.row, ldo = o.row;
    mem::Buffer<float> S((size_t)B * h * nn, mem::uninit);  // (B, h, n, n) scores, freed on return
    const int nt = slice_threads(B, h, n, d_k);
    const int NR = sgemm_panel_width();
    const long kt_floats = sgemm_packed_b_floats(d_k, n);  // K^T packed: (d_k, n)
    const long per_thread = attention_naive_forward_workspace_floats(n, d_k);
    mem::Buffer<float> workspace((size_t)nt * per_thread, mem::uninit);

#pragma omp parallel num_threads(nt)
    {
        float* const Kt = workspace.data() + omp_get_thread_num() * per_thread;  // K^T packed
        float* const Vp = Kt + kt_floats;  // V packed

#pragma omp for schedule(dynamic)
        for (int bh = 0; bh < B * h; bh++) {
            const long in = slice_offset(qkv, bh, h);
            const float* Q_ = Q + in;                       // (n, d_k), rows ld apart
            const float* V_ = V + in;                       // (n, d_k), rows ld apart
            float* S_ = S.data() + bh * nn;                 // (n, n)
            float* P_ = P + bh * nn;                        // (n, n)
            float* O_ = O + slice_offset(o, bh, h);         // (n, d_k), rows ldo apart
            const float alpha = pack_kt_scaled(n, d_k, K + in, ld, scale, Kt);  // (d_k, n)
            pack_rows_b(n, d_k, V_, ld, Vp);                  // op(B) = V: (n, d_k)

            // NAIVE_ROWS query rows at a time: their rows of S are still in L2 when the softmax
            // reads them, and their rows of P when P V does. Every element is computed as one
            // whole-matrix sgemm computes it (each row of S and O is its own sum), so S, P and
            // O are bit for bit what S = Q K^T, softmax, O = P V over all n rows give.
            for (int r0 = 0; r0 < n; r0 += NAIVE_ROWS) {
                const int rows = std::min(NAIVE_ROWS, n - r0);
                float* S_r = S_ + (long)r0 * n;  // (rows, n)
                float* P_r = P_ + (long)r0 * n;  // (rows, n)

                // S = Q K^T / sqrt(d_k)
                sgemm_packed_b(false, rows, n, d_k, alpha, Q_ + r0 * ld, (int)ld, Kt,
                               (long)d_k * NR, 0.0f, S_r, n);
                if (causal)  // masked_fill(mask, -inf): query i sees keys j <= i
                    for (int i = r0; i < r0 + rows; i++)
                        std::fill(S_ + (long)i * n + i + 1, S_ + (long)(i + 1) * n, NEG_INF);

                // P = softmax(S) along each row, subtracting the row max so exp never overflows.
                for (int i = 0; i < rows; i++) {
                    const float* s = S_r + (long)i * n;
                    float* p = P_r + (long)i * n;
                    const float m = row_max(s, n, NEG_INF);
                    const float l = exp_shifted_sum(s, p, n, m);
                    const float inv_l = 1.0f / l;
#pragma omp simd
                    for (int j = 0; j < n; j++) p[j] *= inv_l;
                }

                // O = P V
                times_rows(false, rows, n, 1.0f, P_r, n, Vp, n, d_k, 0, 0.0f,
                           O_ + r0 * ldo, (int)ldo);
            }
        }
    }
}

void attention_naive_backward(const float* Q, const float* K, const float* V, const float* P,
                              const float* dO, float* dQ, float* dK, float* dV, int B, int h,
                              int n, int d_k, bool causal) {
    const HeadsLayout L = heads_contiguous(h, n, d_k);
    attention_naive_backward(Q, K, V, P, dO, dQ, dK, dV, B, h, n, d_k, causal, L, L);
}

void attention_naive_backward(const float* Q, const float* K, const float* V, const float* P,
                              const float* dO, float* dQ, float* dK, float* dV, int B, int h,
                              int n, int d_k, bool causal, const HeadsLayout& qkv,
                              const HeadsLayout& o) {
    (void)causal;  // P is exactly 0 above the diagonal, so dS is too: no mask needed
    const float scale = 1.0f / std::sqrt((float)d_k);
    const long nn = (long)n * n;
    const int ld = (int)qkv.row, ldo = (int)o.row;
    mem::Buffer<float> dP((size_t)B * h * nn, mem::uninit);  // (B, h, n, n)
    mem::Buffer<float> dS((size_t)B * h * nn, mem::uninit);  // (B, h, n, n)
    const int nt = slice_threads(B, h, n, d_k);
    const int NR = sgemm_panel_width();
    const int KS = sgemm_k_slice();
    const long vt_floats = sgemm_packed_b_floats(d_k, n);  // V^T packed: (d_k, n)
    const long per_thread = attention_naive_backward_workspace_floats(n, d_k);
    mem::Buffer<float> workspace((size_t)nt * per_thread, mem::uninit);

#pragma omp parallel num_threads(nt)
    {
        float* const Vt = workspace.data() + omp_get_thread_num() * per_thread;  // V^T packed
        float* const Kp = Vt + vt_floats;  // K packed

#pragma omp for schedule(dynamic)
        for (int bh = 0; bh < B * h; bh++) {
            const long in = slice_offset(qkv, bh, h);  // Q, K, V, dQ, dK, dV: rows ld apart
            const float* Q_ = Q + in;                        // (n, d_k)
            const float* K_ = K + in;                        // (n, d_k)
            const float* P_ = P + bh * nn;                   // (n, n)
            const float* dO_ = dO + slice_offset(o, bh, h);  // (n, d_k), rows ldo apart
            float* dP_ = dP.data() + bh * nn;                // (n, n)
            float* dS_ = dS.data() + bh * nn;                // (n, n)
            sgemm_pack_b(true, d_k, n, V + in, ld, Vt);      // op(B) = V^T: (d_k, n)
            pack_rows_b(n, d_k, K_, ld, Kp);                 // op(B) = K: (n, d_k)

            // A block of KS rows of P and dS at a time (sgemm's k slice), in NAIVE_ROWS-row
            // pieces as in the forward: a piece's rows of dP are still in L2 when the softmax
            // backward reads them, and its rows of dS when dS K does; then the block's rows of P
            // and dS are the next KS k's of dV = P^T dO and dK = dS^T Q. Each element is summed
            // as the whole-matrix products sum it (sgemm_k_slice), so dP, dS, dQ, dK and dV are
            // bit for bit what the four products over all n rows give.
            for (int k0 = 0; k0 < n; k0 += KS) {
                const int ks = std::min(KS, n - k0);
                for (int r0 = k0; r0 < k0 + ks; r0 += NAIVE_ROWS) {
                    const int rows = std::min(NAIVE_ROWS, k0 + ks - r0);
                    const float* P_r = P_ + (long)r0 * n;  // (rows, n)
                    float* dP_r = dP_ + (long)r0 * n;      // (rows, n)
                    float* dS_r = dS_ + (long)r0 * n;      // (rows, n)

                    // dP = dO V^T
                    sgemm_packed_b(false, rows, n, d_k, 1.0f, dO_ + (long)r0 * ldo, ldo, Vt,
                                   (long)d_k * NR, 0.0f, dP_r, n);
                    // softmax backward: dS = P * (dP - D), D_i = sum_j P_ij dP_ij
                    for (int i = 0; i < rows; i++) {
                        const float* p = P_r + (long)i * n;
                        const float* dp = dP_r + (long)i * n;
                        float* ds = dS_r + (long)i * n;
                        float D = 0.0f;
#pragma omp simd reduction(+ : D)
                        for (int j = 0; j < n; j++) D += p[j] * dp[j];
#pragma omp simd
                        for (int j = 0; j < n; j++) ds[j] = p[j] * (dp[j] - D);
                    }
                    // dQ = dS K / sqrt(d_k)
                    times_rows(false, rows, n, scale, dS_r, n, Kp, n, d_k, 0, 0.0f,
                               dQ + in + (long)r0 * ld, ld);
                }
                // dV = P^T dO,  dK = dS^T Q / sqrt(d_k): the block's KS k's
                const float beta = k0 == 0 ? 0.0f : 1.0f;
                sgemm(true, false, n, d_k, ks, 1.0f, P_ + (long)k0 * n, n, dO_ + (long)k0 * ldo,
                      ldo, beta, dV + in, ld);
                sgemm(true, false, n, d_k, ks, scale, dS_ + (long)k0 * n, n, Q_ + (long)k0 * ld,
                      ld, beta, dK + in, ld);
            }
        }
    }
}

// ---- fused (FlashAttention-2) -------------------------------------------------------------
// Q is cut into Tr = ceil(n / Br) row tiles, K and V into Tc = ceil(n / Bc) tiles. For each Q
// tile the K/V tiles stream past while the online softmax keeps, per query row, the running max
// m and the running sum l of exp(S - m); the output is rescaled whenever m grows. Only O and
// L = m + log(l) leave the kernel.
//
// One thread owns a whole (batch, head) slice. Every Q tile meets the same K and V tiles, so
// the thread packs K^T and V into sgemm's panel layout once per slice, what a GPU kernel gets by
// keeping its tiles in shared memory, and the tile products run without packing.

// Per thread: K^T and V packed (2 n d_k), an S tile (Br, LDT) and an O tile (Br, d_k).
long attention_fused_forward_workspace_floats(int n, int d_k) {
    return sgemm_packed_b_floats(d_k, n) + rows_b_floats(n, d_k) + (long)Br * LDT +
           (long)Br * d_k;
}

size_t attention_fused_forward_workspace_bytes(int B, int h, int n, int d_k) {
    return (size_t)slice_threads(B, h, n, d_k) * attention_fused_forward_workspace_floats(n, d_k) *
           sizeof(float);
}

void attention_fused_forward(const float* Q, const float* K, const float* V, float* O, float* L,
                             int B, int h, int n, int d_k, bool causal) {
    const HeadsLayout C = heads_contiguous(h, n, d_k);
    attention_fused_forward(Q, K, V, O, L, B, h, n, d_k, causal, C, C);
}

void attention_fused_forward(const float* Q, const float* K, const float* V, float* O, float* L,
                             int B, int h, int n, int d_k, bool causal, const HeadsLayout& qkv,
                             const HeadsLayout& o) {
    const float scale = 1.0f / std::sqrt((float)d_k);
    const long ld = qkv.row, ldo = o.row;
    const int Tr = (n + Br - 1) / Br, Tc = (n + Bc - 1) / Bc;
    const int NR = sgemm_panel_width();
    const int nt = slice_threads(B, h, n, d_k);
    const long per_thread = attention_fused_forward_workspace_floats(n, d_k);
    mem::Buffer<float> workspace((size_t)nt * per_thread, mem::uninit);

#pragma omp parallel num_threads(nt)
    {
        float* const Kt = workspace.data() + omp_get_thread_num() * per_thread;  // K^T packed
        float* const Vp = Kt + sgemm_packed_b_floats(d_k, n);      // V packed
        float* const S_tile = Vp + rows_b_floats(n, d_k);          // (Br, Bc) scores, then P
        float* const O_tile = S_tile + (long)Br * LDT;             // (Br, d_k) unnormalised O
        float m[Br], l[Br];                                        // running row max and sum

#pragma omp for schedule(dynamic)
        for (int bh = 0; bh < B * h; bh++) {
            const long in = slice_offset(qkv, bh, h);
            const float* V_ = V + in;                            // (n, d_k), rows ld apart
            float* O_ = O + slice_offset(o, bh, h);              // (n, d_k), rows ldo apart
            const float alpha = pack_kt_scaled(n, d_k, K + in, ld, scale, Kt);  // (d_k, n)
            pack_rows_b(n, d_k, V_, ld, Vp);                     // op(B) = V: (n, d_k)
            for (int i = 0; i < Tr; i++) {
                const int r0 = i * Br, rows = std::min(Br, n - r0);  // query rows r0..r0+rows
                const float* Q_i = Q + in + r0 * ld;                  // (rows, d_k)
                std::fill(m, m + rows, NEG_INF);
                std::fill(l, l + rows, 0.0f);
                std::fill(O_tile, O_tile + (long)rows * d_k, 0.0f);

                // causal: key tiles entirely to the right of the last query row are skipped.
                const int Tc_i = causal ? std::min(Tc, (r0 + rows - 1) / Bc + 1) : Tc;
                for (int j = 0; j < Tc_i; j++) {
                    const int c0 = j * Bc, cols = std::min(Bc, n - c0);
                    float* S = S_tile;  // (rows, cols), ld LDT

                    // S = Q_i K_j^T / sqrt(d_k); K_j^T is columns c0.. of the packed K^T
                    sgemm_packed_b(false, rows, cols, d_k, alpha, Q_i, (int)ld,
                                   Kt + (long)(c0 / NR) * d_k * NR, (long)d_k * NR, 0.0f, S, LDT);

                    // Online softmax: new max, rescale the old sum and output, add this tile.
                    for (int r = 0; r < rows; r++) {
                        float* s = S + (long)r * LDT;
                        const int visible = causal ? std::min(cols, r0 + r - c0 + 1) : cols;
                        const float m_new = row_max(s, std::max(visible, 0), m[r]);
                        const float row_sum = exp_shifted_sum(s, s, std::max(visible, 0), m_new);
                        for (int c = std::max(visible, 0); c < cols; c++) s[c] = 0.0f;
                        // m_new is finite: every query row sees at least key 0 in tile 0.
                        const float correction = exp_fast(m[r] - m_new);  // exp(-inf) = 0 at first
                        l[r] = correction * l[r] + row_sum;
                        m[r] = m_new;
                        if (correction != 1.0f) {
                            float* o = O_tile + (long)r * d_k;
#pragma omp simd
                            for (int c = 0; c < d_k; c++) o[c] *= correction;
                        }
                    }
                    // O_tile += P V_j; V_j is rows c0.. of V
                    times_rows(false, rows, cols, 1.0f, S, LDT, Vp, n, d_k, c0, 1.0f,
                               O_tile, d_k);
                }

                // O = O_tile / l,  L = m + log(l)
                for (int r = 0; r < rows; r++) {
                    const float inv_l = 1.0f / l[r];
                    const float* o = O_tile + (long)r * d_k;
                    float* out = O_ + (r0 + r) * ldo;
#pragma omp simd  // GCC cannot tell that out and o do not overlap, and would keep it scalar
                    for (int c = 0; c < d_k; c++) out[c] = o[c] * inv_l;
                    L[(long)bh * n + r0 + r] = m[r] + std::log(l[r]);
                }
            }
        }
    }
}

// Per thread: K^T and V^T packed (2 n d_k), K, Q and dO packed (3 n d_k), a P tile and a dP
// tile (2 Br LDT), and dQ, dK_j, dV_j summed up contiguous ((n + 2 Bc) d_k).
long attention_fused_backward_workspace_floats(int n, int d_k) {
    return 2 * sgemm_packed_b_floats(d_k, n) + 3 * rows_b_floats(n, d_k) + 2L * Br * LDT +
           (long)(n + 2 * Bc) * d_k;
}

size_t attention_fused_backward_workspace_bytes(int B, int h, int n, int d_k) {
    return (size_t)slice_threads(B, h, n, d_k) * attention_fused_backward_workspace_floats(n, d_k) *
           sizeof(float);
}

void attention_fused_backward(const float* Q, const float* K, const float* V, const float* O,
                              const float* L, const float* dO, float* dQ, float* dK, float* dV,
                              int B, int h, int n, int d_k, bool causal) {
    const HeadsLayout C = heads_contiguous(h, n, d_k);
    attention_fused_backward(Q, K, V, O, L, dO, dQ, dK, dV, B, h, n, d_k, causal, C, C);
}

void attention_fused_backward(const float* Q, const float* K, const float* V, const float* O,
                              const float* L, const float* dO, float* dQ, float* dK, float* dV,
                              int B, int h, int n, int d_k, bool causal, const HeadsLayout& qkv,
                              const HeadsLayout& o) {
    const float scale = 1.0f / std::sqrt((float)d_k);
    const long ld = qkv.row, ldo = o.row;
    const int Tr = (n + Br - 1) / Br, Tc = (n + Bc - 1) / Bc;
    const int NR = sgemm_panel_width();
    const int nt = slice_threads(B, h, n, d_k);
    mem::Buffer<float> D((size_t)B * h * n, mem::uninit);  // (B, h, n): D_i = dO_i . O_i

    // D first: one dot product per query row, DR rows side by side. Each row's sum is still
    // one chain of adds from c = 0 up (so D is what the plain loop gives, bit for bit), but DR
    // chains run at once, where one at a time every add would wait for the one before it.
    constexpr int DR = 8;
#pragma omp parallel for schedule(static) num_threads(nt)
    for (long row0 = 0; row0 < (long)B * h * n; row0 += DR) {
        const int rows = (int)std::min<long>(DR, (long)B * h * n - row0);
        const float* o_i[DR];  // row0 + r of O and dO
        const float* g[DR];
        float acc[DR];
        for (int r = 0; r < DR; r++) {
            const long row = row0 + std::min(r, rows - 1);  // past the end: the last row again
            const long at = slice_offset(o, (int)(row / n), h) + (row % n) * ldo;
            o_i[r] = O + at, g[r] = dO + at, acc[r] = 0.0f;
        }
        for (int c = 0; c < d_k; c++)
#pragma GCC unroll 8
            for (int r = 0; r < DR; r++) acc[r] += o_i[r][c] * g[r][c];
        for (int r = 0; r < rows; r++) D[row0 + r] = acc[r];
    }

    const long per_thread = attention_fused_backward_workspace_floats(n, d_k);
    mem::Buffer<float> workspace((size_t)nt * per_thread, mem::uninit);

    // One thread owns a whole (batch, head) slice, so dQ, dK and dV need no atomics: the outer
    // loop walks the K/V tiles (each thread accumulates dK_j and dV_j for its tile), the inner
    // loop walks the Q tiles and adds into dQ_i.
#pragma omp parallel num_threads(nt)
    {
        const long nt_floats = sgemm_packed_b_floats(d_k, n);  // one packed (d_k, n) operand
        const long tn_floats = rows_b_floats(n, d_k);          // one packed (n, d_k)
        float* const Kt = workspace.data() + omp_get_thread_num() * per_thread;  // K^T
        float* const Vt = Kt + nt_floats;                                      // V^T
        float* const Kp = Vt + nt_floats;   // K packed (tn_floats)
        float* const Qp = Kp + tn_floats;   // Q packed
        float* const dOp = Qp + tn_floats;  // dO packed
        float* const P_tile = dOp + tn_floats;     // (Br, Bc) recomputed probabilities
        float* const dP_tile = P_tile + Br * LDT;  // (Br, Bc) dP, then dS
        // The sums are kept contiguous and written out once: in section 6's layer dQ, dK and
        // dV are heads inside dqkv, rows 6 KB apart, where every tile product adding into them
        // would walk rows that share a few L1 sets.
        float* const dQ_sum = dP_tile + Br * LDT;       // (n, d_k)
        float* const dK_j = dQ_sum + (long)n * d_k;     // (Bc, d_k)
        float* const dV_j = dK_j + (long)Bc * d_k;      // (Bc, d_k)

#pragma omp for schedule(dynamic)
        for (int bh = 0; bh < B * h; bh++) {
            const long in = slice_offset(qkv, bh, h);  // Q, K, V, dQ, dK, dV: rows ld apart
            const float* Q_ = Q + in;                          // (n, d_k)
            const float* K_ = K + in;                          // (n, d_k)
            const float* V_ = V + in;                          // (n, d_k)
            const float* dO_ = dO + slice_offset(o, bh, h);    // (n, d_k), rows ldo apart
            float* dQ_ = dQ + in;                              // (n, d_k)
            float* dK_ = dK + in;                              // (n, d_k)
            float* dV_ = dV + in;                              // (n, d_k)
            const float* L_ = L + (long)bh * n;
            const float* D_ = D.data() + (long)bh * n;
            std::fill_n(dQ_sum, (long)n * d_k, 0.0f);
            // The B operands of the five tile products, packed once for the slice.
            const float alpha = pack_kt_scaled(n, d_k, K_, ld, scale, Kt);
            sgemm_pack_b(true, d_k, n, V_, (int)ld, Vt);
            pack_rows_b(n, d_k, K_, ld, Kp);
            pack_rows_b(n, d_k, Q_, ld, Qp);
            pack_rows_b(n, d_k, dO_, ldo, dOp);
            const long dr = (long)d_k * NR;  // panel stride of Kt, Vt

            for (int j = 0; j < Tc; j++) {
                const int c0 = j * Bc, cols = std::min(Bc, n - c0);
                const float* Kt_j = Kt + (long)(c0 / NR) * dr;  // K_j^T: (d_k, cols)
                const float* Vt_j = Vt + (long)(c0 / NR) * dr;  // V_j^T: (d_k, cols)
                std::fill_n(dK_j, (long)cols * d_k, 0.0f);      // (cols, d_k)
                std::fill_n(dV_j, (long)cols * d_k, 0.0f);      // (cols, d_k)
                // causal: query tiles entirely above this key tile see none of it.
                const int i_first = causal ? c0 / Br : 0;
                for (int i = i_first; i < Tr; i++) {
                    const int r0 = i * Br, rows = std::min(Br, n - r0);
                    const float* Q_i = Q_ + r0 * ld;     // (rows, d_k)
                    const float* dO_i = dO_ + r0 * ldo;  // (rows, d_k)
                    float* dQ_i = dQ_sum + (long)r0 * d_k;  // (rows, d_k)
                    float* P = P_tile;                          // (rows, cols), ld LDT
                    float* dS = dP_tile;                        // (rows, cols), ld LDT

                    // P = exp(Q_i K_j^T / sqrt(d_k) - L_i): the forward's probabilities,
                    // recomputed; dP = dO_i V_j^T; then row by row P, and dS = P * (dP - D_i) in
                    // place of dP while that row of P is still in L1
                    sgemm_packed_b(false, rows, cols, d_k, alpha, Q_i, (int)ld, Kt_j, dr, 0.0f, P,
                                   LDT);
                    sgemm_packed_b(false, rows, cols, d_k, 1.0f, dO_i, (int)ldo, Vt_j, dr, 0.0f,
                                   dS, LDT);
                    for (int r = 0; r < rows; r++) {
                        float* p = P + (long)r * LDT;
                        float* ds = dS + (long)r * LDT;
                        const int visible = causal ? std::clamp(r0 + r - c0 + 1, 0, cols) : cols;
                        const float Li = L_[r0 + r], Di = D_[r0 + r];
                        exp_shifted(p, visible, Li);
                        for (int c = visible; c < cols; c++) p[c] = 0.0f;
#pragma omp simd
                        for (int c = 0; c < cols; c++) ds[c] = p[c] * (ds[c] - Di);
                    }
                    // dV_j += P^T dO_i
                    times_rows(true, cols, rows, 1.0f, P, LDT, dOp, n, d_k, r0, 1.0f,
                               dV_j, d_k);
                    // dQ_i += dS K_j / sqrt(d_k),  dK_j += dS^T Q_i / sqrt(d_k)
                    times_rows(false, rows, cols, scale, dS, LDT, Kp, n, d_k, c0, 1.0f,
                               dQ_i, d_k);
                    times_rows(true, cols, rows, scale, dS, LDT, Qp, n, d_k, r0, 1.0f,
                               dK_j, d_k);
                }
                for (int r = 0; r < cols; r++) {  // dK_j and dV_j are whole: out they go
                    std::copy_n(dK_j + (long)r * d_k, d_k, dK_ + (c0 + r) * ld);
                    std::copy_n(dV_j + (long)r * d_k, d_k, dV_ + (c0 + r) * ld);
                }
            }
            for (int r = 0; r < n; r++) std::copy_n(dQ_sum + (long)r * d_k, d_k, dQ_ + r * ld);
        }
    }
}
