// Section 3's MultiHeadAttention given to section 5's CrossAttention: the stacked W_Q, W_K, W_V
// split into q and kv, W_O copied, so that cross-attention with memory = x computes the same
// attention (tests of chapters 5 and 8).
#pragma once
#include <algorithm>

#include "chapters/5-blocks/decoder.h"

namespace testutil {

inline void copy_weights(const MultiHeadAttention& mha, CrossAttention& ca) {
    const int64_t d = mha.proj.weight.size(0);
    const float* W = mha.qkv.weight.data();  // (3d, d): W_Q rows, then W_K and W_V
    std::copy_n(W, d * d, ca.q.weight.data());
    std::copy_n(W + d * d, 2 * d * d, ca.kv.weight.data());
    std::copy_n(mha.proj.weight.data(), d * d, ca.proj.weight.data());
}

}  // namespace testutil
