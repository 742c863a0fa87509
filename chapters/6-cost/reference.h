// Section 6's algorithms in plain loops: read these first, then the tuned kernels in
// common/kernels/ that the table times. Each function has the tuned kernel's name and buffer
// conventions, so a test calls both on the same buffers (tests/test_chapter6_reference.cpp).
//
//   sgemm                      C = alpha op(A) op(B) + beta C, the triple loop
//   attention_naive_*          S = Q K^T / sqrt(d_k), P = softmax(S), O = P V, and back
//   attention_fused_*          FlashAttention-2: Br x Bc tiles, the online softmax (m, l), the
//                              saved logsumexp L, P recomputed in the backward
//   lstm_step_*                one step of torch's nn.LSTM cell, gate order i, f, g, o
//   lstm_forward, _backward    its n steps, forwards and then back through time
//
// Buffers are float32, as the tuned kernels' are. Every sum is added up in double and rounded
// once where it is stored, so the tier's own rounding (about 1e-7 relative) is far below the
// tests' tolerances: what they measure is the tuned kernels' float32 order and exp_fast.
#pragma once

namespace reference {

// C (M, N) = alpha * op(A) @ op(B) + beta * C, row-major. op(A) (M, K) is A (lda >= K) or, with
// trans_a, the transpose of a (K, M) array (lda >= M); op(B) (K, N) likewise; ldc >= N.
// beta = 0 ignores C's contents (even NaN), as sgemm does.
void sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
           const float* B, int ldb, float beta, float* C, int ldc);

// Q, K, V, O, dO, dQ, dK, dV: (B, h, n, d_k) contiguous. causal: query i sees keys j <= i.
// P: (B, h, n, n) probabilities, written by the forward and read by the backward.
void attention_naive_forward(const float* Q, const float* K, const float* V, float* O, float* P,
                             int B, int h, int n, int d_k, bool causal);
void attention_naive_backward(const float* Q, const float* K, const float* V, const float* P,
                              const float* dO, float* dQ, float* dK, float* dV, int B, int h, int n,
                              int d_k, bool causal);

// L: (B, h, n) logsumexp of each row of S, written by the forward and read by the backward.
// Br query rows by Bc key rows a tile; the tuned kernels use 256 x 256, the defaults here are
// small so that short sequences already cross several tiles, the last one ragged.
void attention_fused_forward(const float* Q, const float* K, const float* V, float* O, float* L,
                             int B, int h, int n, int d_k, bool causal, int Br = 8, int Bc = 16);
void attention_fused_backward(const float* Q, const float* K, const float* V, const float* O,
                              const float* L, const float* dO, float* dQ, float* dK, float* dV,
                              int B, int h, int n, int d_k, bool causal, int Br = 8, int Bc = 16);

// One LSTM step at time t, in the buffers of common/kernels/lstm.h (offset to step t):
//   x_t (B, d)   W_ih, W_hh (4d, d)   b (4d) = b_ih + b_hh
//   h_prev, c_prev (B, d): h[t], c[t]      h_t, c_t (B, d): h[t + 1], c[t + 1]
//   gates_t (B, 4d): the activated gates i, f, g, o
void lstm_step_forward(const float* x_t, const float* h_prev, const float* c_prev,
                       const float* W_ih, const float* W_hh, const float* b, int B, int d,
                       float* h_t, float* c_t, float* gates_t);
// Backward through that step. dh (B, d): all of the gradient reaching h_t (from the output at
// t and from step t + 1); dc (B, d): the gradient reaching c_t from step t + 1.
// Writes dx_t, dh_prev, dc_prev (B, d); adds into dW_ih, dW_hh (4d, d) and db (4d), which sum
// over the steps.
void lstm_step_backward(const float* x_t, const float* h_prev, const float* c_prev,
                        const float* c_t, const float* gates_t, const float* W_ih,
                        const float* W_hh, const float* dh, const float* dc, int B, int d,
                        float* dx_t, float* dh_prev, float* dc_prev, float* dW_ih, float* dW_hh,
                        float* db);

// The n steps in common/kernels/lstm.h's buffers and contract: x (n, B, d); h, c (n + 1, B, d)
// with h[0] = c[0] = 0; gates (n, B, 4d); dh_out (n, B, d); dx (n, B, d), dW_ih, dW_hh, db
// overwritten.
void lstm_forward(const float* x, const float* W_ih, const float* W_hh, const float* b, int n,
                  int B, int d, float* h, float* c, float* gates);
void lstm_backward(const float* x, const float* W_ih, const float* W_hh, const float* h,
                   const float* c, const float* gates, const float* dh_out, int n, int B, int d,
                   float* dx, float* dW_ih, float* dW_hh, float* db);

}  // namespace reference
