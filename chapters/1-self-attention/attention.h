// Section 1's listing: scaled dot-product attention, and the causal mask of the article's widget.
//
//   Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V
//
// Later sections reuse both as the article does: section 3's MultiHeadAttention calls
// scaled_dot_product_attention once for all heads, section 4 shuffles its input, and section
// 5's decoder hides the future with causal_mask ("1절 위젯의 causal 마스크 토글을 다시
// 켜 보면").
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

#include "common/tensor.h"

// def scaled_dot_product_attention(Q, K, V, mask=None):
//     d_k = Q.shape[-1]
//     scores = Q @ K.transpose(-2, -1) / (d_k ** 0.5)
//     if mask is not None:
//         scores = scores.masked_fill(mask, float('-inf'))
//     attn = torch.softmax(scores, dim=-1)
//     return attn @ V, attn
//
// Q, K: (..., n, d_k), V: (..., n, d_v); mask (broadcast to the scores' shape) is non-zero where
// a key must not be seen. Returns the output (..., n, d_v) and the weights (..., n, n).
inline std::pair<Tensor, Tensor> scaled_dot_product_attention(const Tensor& Q, const Tensor& K,
                                                              const Tensor& V,
                                                              const Tensor& mask = Tensor()) {
    const float d_k = float(Q.size(-1));
    Tensor scores = matmul(Q, transpose(K, -2, -1)) / std::pow(d_k, 0.5f);  // (..., n, n)
    if (mask.defined())
        scores = masked_fill(scores, mask, -std::numeric_limits<float>::infinity());
    Tensor attn = softmax(scores, -1);  // each row sums to 1
    return {matmul(attn, V), attn};     // (..., n, d_v), (..., n, n)
}

// The widget's causal toggle, torch.triu(torch.ones(n, n), 1): 1 above the diagonal, where key
// j > query i. masked_fill turns those scores into -inf, and softmax gives them weight exactly 0,
// so token i only mixes tokens 1..i. (n, n)
inline Tensor causal_mask(int64_t n) {
    Tensor m = Tensor::zeros({n, n});
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = i + 1; j < n; j++) m.data()[i * n + j] = 1.0f;
    return m;
}
