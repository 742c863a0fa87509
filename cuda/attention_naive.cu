// Naive scaled dot-product attention on the GPU: materialise S and P for every (query, key)
// pair, exactly the article's scaled_dot_product_attention. Mirrors common/kernels/attention.h.
//
//   Q, K, V, O, dO, dQ, dK, dV: (B, h, n, d_k)     P: (B, h, n, n)    dS scratch: (B, h, n, n)
//
// Versions: one, built from the batched sgemm (one batch element per (b, head)) and the row
// softmax. Its extra memory is O(B h n^2): the reason chapter 6's naive column explodes.
//   forward:  S = Q K^T / sqrt(d_k)  ->  P = softmax(S) (causal: keys j > i get 0)  ->  O = P V
//   backward: dV = P^T dO,  dP = dO V^T,  dS = P * (dP - rowsum(dP * P)),
//             dQ = dS K / sqrt(d_k),  dK = dS^T Q / sqrt(d_k)
#include "cuda/kernels.h"
#include "cuda/launch.h"

#include <cmath>

void attention_naive_forward_cuda(const float* Q, const float* K, const float* V, float* O,
                                  float* P, int B, int h, int n, int d_k, bool causal) {
    const int bh = B * h;
    const long qkv_stride = (long)n * d_k, p_stride = (long)n * n;
    const float scale = 1.0f / std::sqrt(float(d_k));
    // S = Q K^T * scale, written straight into P (n, n) per head.
    sgemm_cuda(false, true, n, n, d_k, scale, Q, d_k, K, d_k, 0.0f, P, n, bh, qkv_stride,
               qkv_stride, p_stride);
    softmax_forward_cuda(P, P, bh * n, n, causal);
    // O = P V
    sgemm_cuda(false, false, n, d_k, n, 1.0f, P, n, V, d_k, 0.0f, O, d_k, bh, p_stride,
               qkv_stride, qkv_stride);
}

void attention_naive_backward_cuda(const float* Q, const float* K, const float* V,
                                   const float* P, const float* dO, float* dQ, float* dK,
                                   float* dV, int B, int h, int n, int d_k, bool causal) {
    (void)causal;  // masked entries have P = 0, so dS = 0 there without looking at the mask
    const int bh = B * h;
    const long qkv_stride = (long)n * d_k, p_stride = (long)n * n;
    const float scale = 1.0f / std::sqrt(float(d_k));
    gpu::Buffer<float> dS((size_t)bh * n * n);  // (B, h, n, n): dP, then dS in place
    // dV = P^T dO
    sgemm_cuda(true, false, n, d_k, n, 1.0f, P, n, dO, d_k, 0.0f, dV, d_k, bh, p_stride,
               qkv_stride, qkv_stride);
    // dP = dO V^T
    sgemm_cuda(false, true, n, n, d_k, 1.0f, dO, d_k, V, d_k, 0.0f, dS.data(), n, bh, qkv_stride,
               qkv_stride, p_stride);
    softmax_backward_cuda(P, dS.data(), dS.data(), bh * n, n);
    // dQ = dS K * scale;  dK = dS^T Q * scale
    sgemm_cuda(false, false, n, d_k, n, scale, dS.data(), n, K, d_k, 0.0f, dQ, d_k, bh, p_stride,
               qkv_stride, qkv_stride);
    sgemm_cuda(true, false, n, d_k, n, scale, dS.data(), n, Q, d_k, 0.0f, dK, d_k, bh, p_stride,
               qkv_stride, qkv_stride);
}
