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

// What the fused kernels hold per thread (K, V and friends packed for sgemm, and the tiles),
// in floats; a call that splits its slices across threads holds one per thread.
long attention_fused_forward_workspace_floats(int n, int d_k);
long attention_fused_backward_workspace_floats(int n, int d_k);

// ------------------------------------------------------------------------------------------
// One multi-head self-attention layer, the article's MultiHeadAttention (no biases), with an
// explicit forward and backward so section 6 can time and weigh it:
//   x (B, n, d_model) -> Q K V = heads of x W_qkv^T (B, h, n, d_k) -> attention -> O
//   -> concat (B, n, d_model) -> y = concat W_o^T (B, n, d_model)
// Every buffer is a mem::Buffer, so mem::peak_bytes() sees all of it. forward() keeps what the
// backward needs (like autograd's saved tensors); backward() uses it, frees it, fills the
// weight gradients and returns dx.
#include "common/memory.h"

#include <cstddef>

struct AttentionLayer {
    int d_model, n_heads;
    bool fused, causal;
    mem::Buffer<float> W_qkv, W_o;    // (3 d_model, d_model), (d_model, d_model): nn.Linear rows
    mem::Buffer<float> dW_qkv, dW_o;  // gradients, same shapes

    AttentionLayer(int d_model, int n_heads, bool fused, bool causal = false);
    mem::Buffer<float> forward(const float* x, int B, int n);  // y (B, n, d_model)
    mem::Buffer<float> backward(const float* dy);              // dx (B, n, d_model)

    // Peak bytes of one benchmark step (x, dy and the weights present, y dropped after the
    // forward, dx returned), plus sgemm_workspace_bytes_max() as a margin for packing:
    // what a cell checks against the memory limit before it runs.
    static size_t predicted_peak_bytes(bool fused, int B, int n, int d_model, int n_heads);

private:
    const float* x_ = nullptr;  // saved input (B, n, d_model), owned by the caller
    int B_ = 0, n_ = 0;
    mem::Buffer<float> QKV_;     // (3, B, h, n, d_k)
    mem::Buffer<float> O_;       // (B, h, n, d_k), fused only (its backward reads O)
    mem::Buffer<float> concat_;  // (B, n, d_model)
    mem::Buffer<float> P_;       // naive: (B, h, n, n)
    mem::Buffer<float> L_;       // fused: (B, h, n)
};
