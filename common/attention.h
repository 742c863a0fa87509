// Scaled dot-product attention on raw buffers, forward and backward, two algorithms with one
// signature each (section 6 of the article; cuda/ mirrors these names one to one).
//
//   naive: materialises S = Q K^T / sqrt(d_k) and P = softmax(S) for all B*h*n*n pairs;
//          backward goes through the stored P.                       extra memory O(B*h*n*n)
//   fused: FlashAttention-2: tiles of Br query rows against tiles of Bc key rows with the
//          online softmax (running max m, running sum l); saves only O and each row's
//          logsumexp L; backward recomputes P tile by tile.           extra memory O(B*h*n)
//
// All tensors are contiguous float32. Q, K, V, O, dO, dQ, dK, dV: (B, h, n, d_k).
// causal: query i sees keys j <= i only.
#pragma once
#include <cstddef>

// P: (B, h, n, n) probabilities, written by the forward and read by the backward.
void attention_naive_forward(const float* Q, const float* K, const float* V, float* O, float* P,
                             int B, int h, int n, int d_k, bool causal);
void attention_naive_backward(const float* Q, const float* K, const float* V, const float* P,
                              const float* dO, float* dQ, float* dK, float* dV, int B, int h,
                              int n, int d_k, bool causal);

// L: (B, h, n) logsumexp of each row of S, written by the forward and read by the backward.
void attention_fused_forward(const float* Q, const float* K, const float* V, float* O, float* L,
                             int B, int h, int n, int d_k, bool causal);
void attention_fused_backward(const float* Q, const float* K, const float* V, const float* O,
                              const float* L, const float* dO, float* dQ, float* dK, float* dV,
                              int B, int h, int n, int d_k, bool causal);

// What the naive forward holds per thread (K^T and V packed for sgemm), in floats.
long attention_naive_forward_workspace_floats(int n, int d_k);
// All a call over B*h slices holds at once: that times the threads it runs on.
size_t attention_naive_forward_workspace_bytes(int B, int h, int n, int d_k);

// What the fused kernels hold per thread (K, V and friends packed for sgemm, and the tiles),
// in floats; a call that splits its slices across threads holds one per thread.
long attention_fused_forward_workspace_floats(int n, int d_k);
long attention_fused_backward_workspace_floats(int n, int d_k);
// All a call over B*h slices holds at once: the workspace times the threads it runs on.
size_t attention_fused_forward_workspace_bytes(int B, int h, int n, int d_k);
size_t attention_fused_backward_workspace_bytes(int B, int h, int n, int d_k);
