// Not part of section 3's listing: the two switches chapter 8's ablations turn on one attention
// over h heads. MultiHeadAttention (multi_head_attention.h, the listing) and section 5's
// CrossAttention (chapters/5-blocks/decoder.h) attend through HeadSwitches::attend, which with
// the switches as they start is section 1's scaled_dot_product_attention and nothing else.
#pragma once
#include <cmath>
#include <utility>

#include "chapters/1-self-attention/attention.h"
#include "common/tensor.h"

// scale_scores = false leaves out the 1/sqrt(d_k) of section 2; head_mask (h), when set,
// multiplies each head's output by its entry before the concat (0 removes the head: Michel et
// al. 2019's head mask).
struct HeadSwitches {
    bool scale_scores = true;
    Tensor head_mask;          // (h) or undefined
    mutable Tensor last_attn;  // (B, h, N, S) of the last call, for figures and experiments

    // Section 1's attention for every head at once, q (B, h, N, d_head), k and v (B, h, S,
    // d_head): returns the heads' outputs (B, h, N, d_head) and the weights (B, h, N, S).
    std::pair<Tensor, Tensor> attend(Tensor q, const Tensor& k, const Tensor& v,
                                     const Tensor& mask) const {
        if (!scale_scores) q = q * std::sqrt(float(q.size(-1)));  // the division, undone
        auto [o, a] = scaled_dot_product_attention(q, k, v, mask);
        if (head_mask.defined()) o = o * reshape(head_mask, {1, q.size(1), 1, 1});
        last_attn = a.detach();
        return {o, a};
    }
};
