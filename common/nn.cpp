#include "common/nn.h"

#include <cmath>
#include <limits>

std::pair<Tensor, Tensor> scaled_dot_product_attention(const Tensor& Q, const Tensor& K,
                                                       const Tensor& V, const Tensor& mask) {
    const float d_k = float(Q.size(-1));
    Tensor scores = matmul(Q, transpose(K, -2, -1)) / std::pow(d_k, 0.5f);  // (..., n, n)
    if (mask.defined())
        scores = masked_fill(scores, mask, -std::numeric_limits<float>::infinity());
    Tensor attn = softmax(scores, -1);  // each row sums to 1
    return {matmul(attn, V), attn};     // (..., n, d_v)
}
