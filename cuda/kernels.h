// Host entry points of the kernels in cuda/*.cu. Every pointer is a device pointer (under the
// emulator: host memory from cudaMalloc). Names mirror common/kernels/gemm.h,
// common/kernels/attention.h and common/kernels/lstm.h with a _cuda suffix, so the CPU and GPU
// files read side by side.
#pragma once
#include <cstddef>

inline int ceil_div(long a, long b) { return int((a + b - 1) / b); }

// ---- cuda/sgemm.cu ------------------------------------------------------------------------
// Batched, row-major: for each b < batch, C_b = alpha * op(A_b) op(B_b) + beta * C_b, where
// X_b = X + b * stride_X. Same transposes and leading dimensions as common/kernels/gemm.h's sgemm.
// The versions are the teaching steps of cuda/sgemm.cu. The last, warp_tiled, is the default:
// it takes any shape, transpose and alignment (float4 accesses only where they are aligned).
enum class SgemmVersion { naive = 1, tiled = 2, register_tiled = 3, warp_tiled = 4 };
// warp_tiled's tile shapes: the block's tile of C (rows x columns) and each thread's outputs.
// automatic (the default): for M <= 16 rows without trans_a (an LSTM step), kernels that
// spread the columns over warps instead of tiles, !trans_b also over slices of K; else 128x64
// when N <= 64 (attention's P V, dV, dQ and dK, where half of a 128-wide tile would multiply
// zeros), else 128x128; and where those tiles are fewer blocks than the GPU has SMs and K is
// deep (the weight gradients), split-K: slices of K in parallel, then their sum.
// gpu-bench times the other tiles beside it, since the best shape differs between GPUs; the
// explicit tiles never split K. few_rows_one_pass: the few-rows kernels without the split of
// K (for gpu-bench; where M > 16 or trans_a it is the 128x128 tile).
enum class SgemmTile {
    automatic, b128x128t8x8, b128x64t8x8, b128x128t8x16, b128x256t8x16, b256x128t16x8,
    few_rows_one_pass
};
// K = 0 sets C = beta C (C is not read when beta = 0) and reads neither A nor B.
void sgemm_cuda(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
                int lda, const float* B, int ldb, float beta, float* C, int ldc, int batch = 1,
                long stride_a = 0, long stride_b = 0, long stride_c = 0,
                SgemmVersion version = SgemmVersion::warp_tiled,
                SgemmTile tile = SgemmTile::automatic);
// How many slices of K sgemm_cuda computes in parallel for this call (1: no split), for the
// tests and gpu-bench. Depends on the device's SM count.
int sgemm_k_splits(bool trans_a, bool trans_b, int M, int N, int K, int batch = 1,
                   SgemmVersion version = SgemmVersion::warp_tiled,
                   SgemmTile tile = SgemmTile::automatic);

// ---- cuda/softmax.cu ----------------------------------------------------------------------
// Row softmax of S (rows, cols) into P; causal (square n x n blocks, cols = n): row r is query
// r % n and keys j > r % n get probability 0. In place (P == S) is allowed.
void softmax_forward_cuda(const float* S, float* P, int rows, int cols, bool causal);
// dS = P * (dP - rowsum(dP * P)); in place (dS == dP) is allowed.
void softmax_backward_cuda(const float* P, const float* dP, float* dS, int rows, int cols);

// ---- cuda/reduce.cu -----------------------------------------------------------------------
// out[r] = sum_c a[r, c] * b[r, c]           a, b: (rows, cols)   out: (rows)
void row_dot_cuda(const float* a, const float* b, float* out, int rows, int cols);
// out[c] = sum_r x[r, c]                     x: (rows, cols)      out: (cols)
void column_sum_cuda(const float* x, float* out, int rows, int cols);
// *out = sum_i x[i]                           x: (n)
void sum_cuda(const float* x, float* out, long n);
// *out = max_i |x[i]|                         x: (n)
void max_abs_cuda(const float* x, float* out, long n);

// ---- cuda/permute.cu ----------------------------------------------------------------------
// (B, n, h, d_k) <-> (B, h, n, d_k): splitting d_model into heads and merging them back.
void split_heads_cuda(const float* x, float* y, int B, int n, int h, int d_k);
void merge_heads_cuda(const float* y, float* x, int B, int n, int h, int d_k);
// qkv: (B, n, 3, h, d_k) from x @ W_qkv^T  ->  Q, K, V: (B, h, n, d_k) each (the article's
// qkv.reshape(B, N, 3, h, d_head).permute(2, 0, 3, 1, 4)), and the inverse for the gradients.
void split_qkv_cuda(const float* qkv, float* Q, float* K, float* V, int B, int n, int h,
                    int d_k);
void merge_qkv_cuda(const float* dQ, const float* dK, const float* dV, float* dqkv, int B, int n,
                    int h, int d_k);

// ---- cuda/attention_naive.cu ----------------------------------------------------------------
// Q, K, V, O, dO, dQ, dK, dV: (B, h, n, d_k)    P: (B, h, n, n)
void attention_naive_forward_cuda(const float* Q, const float* K, const float* V, float* O,
                                  float* P, int B, int h, int n, int d_k, bool causal);
void attention_naive_backward_cuda(const float* Q, const float* K, const float* V,
                                   const float* P, const float* dO, float* dQ, float* dK,
                                   float* dV, int B, int h, int n, int d_k, bool causal);

// ---- cuda/attention_flash.cu ----------------------------------------------------------------
// FlashAttention: O and L (B, h, n), the rows' logsumexp, without the (n, n) matrix; the
// backward recomputes P from L. d_k <= 128. The versions are the teaching steps of
// cuda/attention_flash.cu: simple, one thread per row with whole rows in registers; and
// register_tiled (the default), FlashAttention-2's tiling with every tile product split into
// per-thread fragments, the way the register-tiled sgemm splits C.
enum class FlashVersion { simple = 1, register_tiled = 2 };
void attention_fused_forward_cuda(const float* Q, const float* K, const float* V, float* O,
                                  float* L, int B, int h, int n, int d_k, bool causal,
                                  FlashVersion version = FlashVersion::register_tiled);
void attention_fused_backward_cuda(const float* Q, const float* K, const float* V, const float* O,
                                   const float* L, const float* dO, float* dQ, float* dK, float* dV,
                                   int B, int h, int n, int d_k, bool causal,
                                   FlashVersion version = FlashVersion::register_tiled);

// ---- cuda/lstm.cu -----------------------------------------------------------------------------
// Same buffers as common/kernels/lstm.h: x (n, B, d), W_ih W_hh (4d, d), b (4d), h c (n + 1, B, d),
// gates (n, B, 4d), dh_out (n, B, d), dx (n, B, d), dW_ih dW_hh (4d, d), db (4d).
// fused = false runs the gate nonlinearities and cell update as separate per-op kernels
// (the comparison chapter 6 and gpu-check make); the results are the same.
void lstm_forward_cuda(const float* x, const float* W_ih, const float* W_hh, const float* b,
                       int n, int B, int d, float* h, float* c, float* gates, bool fused = true);
void lstm_backward_cuda(const float* x, const float* W_ih, const float* W_hh, const float* h,
                        const float* c, const float* gates, const float* dh_out, int n, int B,
                        int d, float* dx, float* dW_ih, float* dW_hh, float* db);
// One step's gates alone, what lstm_forward_cuda runs after each step's GEMM (gpu-bench times
// it, fused against unfused, without the GEMMs): G (B, 4d) pre-activations without the bias,
// c_prev (B, d) -> gates (B, 4d), h_t, c_t (B, d). tmp: (B, d) scratch, unfused only.
void lstm_gates_forward_cuda(const float* G, const float* b, const float* c_prev, float* gates,
                             float* h_t, float* c_t, int B, int d, bool fused, float* tmp);
