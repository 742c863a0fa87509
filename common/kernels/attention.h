// Scaled dot-product attention on raw buffers, forward and backward, two algorithms with one
// signature each (section 6 of the article; cuda/ mirrors these names one to one).
//
//   naive: materialises S = Q K^T / sqrt(d_k) and P = softmax(S) for all B*h*n*n pairs;
//          backward goes through the stored P.                       extra memory O(B*h*n*n)
//   fused: FlashAttention-2: tiles of Br query rows against tiles of Bc key rows with the
//          online softmax (running max m, running sum l); saves only O and each row's
//          logsumexp L; backward recomputes P tile by tile.           extra memory O(B*h*n)
//
// Q, K, V, O, dO, dQ, dK, dV: (B, h, n, d_k) float32, contiguous unless a HeadsLayout says
// where their rows lie. causal: query i sees keys j <= i only.
#pragma once
#include <cstddef>

// Where the heads lie: row i of head hh of batch b starts batch * b + head * hh + row * i floats
// from the tensor's start, and its d_k floats are contiguous.
struct HeadsLayout {
    long batch, head, row;
};
// (B, h, n, d_k), contiguous.
inline HeadsLayout heads_contiguous(int h, int n, int d_k) {
    return {(long)h * n * d_k, (long)n * d_k, d_k};
}
// (B, n, ...) rows of ld floats with head hh at columns hh * d_k ..: section 3's concat (B, n,
// d_model) is heads_in_rows(n, d_k, d_model); q, k and v inside its qkv (B, n, 3, h, d_k), the
// reshape(B, N, 3, h, d_head).permute(2, 0, 3, 1, 4) that torch makes a view and not a copy,
// are heads_in_rows(n, d_k, 3 * d_model) from qkv, qkv + d_model and qkv + 2 * d_model.
inline HeadsLayout heads_in_rows(int n, int d_k, long ld) { return {n * ld, d_k, ld}; }

// Each function comes twice: on contiguous tensors, and with qkv, the layout of Q, K, V (and of
// dQ, dK, dV), and o, the layout of O (and of dO).
// P: (B, h, n, n) probabilities, written by the forward and read by the backward; contiguous.
void attention_naive_forward(const float* Q, const float* K, const float* V, float* O, float* P,
                             int B, int h, int n, int d_k, bool causal);
void attention_naive_forward(const float* Q, const float* K, const float* V, float* O, float* P,
                             int B, int h, int n, int d_k, bool causal, const HeadsLayout& qkv,
                             const HeadsLayout& o);
void attention_naive_backward(const float* Q, const float* K, const float* V, const float* P,
                              const float* dO, float* dQ, float* dK, float* dV, int B, int h,
                              int n, int d_k, bool causal);
void attention_naive_backward(const float* Q, const float* K, const float* V, const float* P,
                              const float* dO, float* dQ, float* dK, float* dV, int B, int h,
                              int n, int d_k, bool causal, const HeadsLayout& qkv,
                              const HeadsLayout& o);

// L: (B, h, n) logsumexp of each row of S, written by the forward and read by the backward;
// contiguous.
void attention_fused_forward(const float* Q, const float* K, const float* V, float* O, float* L,
                             int B, int h, int n, int d_k, bool causal);
void attention_fused_forward(const float* Q, const float* K, const float* V, float* O, float* L,
                             int B, int h, int n, int d_k, bool causal, const HeadsLayout& qkv,
                             const HeadsLayout& o);
void attention_fused_backward(const float* Q, const float* K, const float* V, const float* O,
                              const float* L, const float* dO, float* dQ, float* dK, float* dV,
                              int B, int h, int n, int d_k, bool causal);
void attention_fused_backward(const float* Q, const float* K, const float* V, const float* O,
                              const float* L, const float* dO, float* dQ, float* dK, float* dV,
                              int B, int h, int n, int d_k, bool causal, const HeadsLayout& qkv,
                              const HeadsLayout& o);

// What the naive forward holds per thread (K^T and V packed for sgemm), and the backward (V^T and
// K), in floats.
long attention_naive_forward_workspace_floats(int n, int d_k);
long attention_naive_backward_workspace_floats(int n, int d_k);
// All a call over B*h slices holds at once: that times the threads it runs on.
size_t attention_naive_forward_workspace_bytes(int B, int h, int n, int d_k);
size_t attention_naive_backward_workspace_bytes(int B, int h, int n, int d_k);

// What the fused kernels hold per thread (K, V and friends packed for sgemm, and the tiles),
// in floats; a call that splits its slices across threads holds one per thread.
long attention_fused_forward_workspace_floats(int n, int d_k);
long attention_fused_backward_workspace_floats(int n, int d_k);
// All a call over B*h slices holds at once: the workspace times the threads it runs on.
size_t attention_fused_forward_workspace_bytes(int B, int h, int n, int d_k);
size_t attention_fused_backward_workspace_bytes(int B, int h, int n, int d_k);
