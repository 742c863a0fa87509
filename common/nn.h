// Building blocks of the Transformer on top of the autograd tensor (common/tensor.h).
#pragma once
#include <utility>

#include "common/tensor.h"

// The article's function, line for line:
//   scores = Q @ K^T / sqrt(d_k); scores[mask] = -inf; attn = softmax(scores); return attn @ V, attn
// mask (broadcast to the scores' shape) is non-zero where a key must not be seen.
std::pair<Tensor, Tensor> scaled_dot_product_attention(const Tensor& Q, const Tensor& K,
                                                       const Tensor& V,
                                                       const Tensor& mask = Tensor());
