// The attention weights softmax(Q K^T / sqrt(d_k)) a module computed in its last forward: the
// listings compute them and do not keep them, so the probe reads them from outside. It sets a
// forward hook (common/nn.h) on the Linears that make Q and K, keeps their last outputs, and
// runs section 1's scaled_dot_product_attention on the same Q and K again: the same function on
// the same floats, so the same weights, bit for bit. This chapter's figure reads the
// encoder-decoder attention through it; chapter 8 reads self-attention through it.
#pragma once
#include <string>

#include "chapters/5-blocks/decoder.h"
#include "common/tensor.h"

class AttentionProbe {
public:
    // Hooks the module's qkv (MultiHeadAttention) or q and kv (CrossAttention). A hook set on
    // them before the probe (one that changes Q or K) runs first: the probe sees what the
    // attention sees.
    explicit AttentionProbe(MultiHeadAttention& attn);
    explicit AttentionProbe(CrossAttention& attn);
    ~AttentionProbe();  // takes its hooks off again
    AttentionProbe(const AttentionProbe&) = delete;
    AttentionProbe& operator=(const AttentionProbe&) = delete;

    // The weights of the module's last forward since the probe was set, (B, h, N, S) for N
    // queries and S keys; `mask` is the mask that forward was given (undefined: none).
    // std::logic_error if the module has not run since.
    Tensor weights(const Tensor& mask = Tensor()) const;

private:
    static constexpr const char* HOOK = "attention_probe";
    int h, d_head;
    Linear* q_layer;   // qkv or q
    Linear* kv_layer;  // kv, or nullptr: K comes from qkv too
    Tensor q_out;   // qkv's last output (B, N, 3 d_model), or q's (B, N, d_model)
    Tensor kv_out;  // kv's last output (B, S, 2 d_model)
};
