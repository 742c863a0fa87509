// The attention probe (see attention_probe.h).
#include "chapters/7-translate/attention_probe.h"

#include <stdexcept>

#include "chapters/1-self-attention/attention.h"

namespace {

// A hook that keeps the layer's last output in `slot` and leaves the output as it is.
ForwardHooks::Hook keep_output(Tensor& slot) {
    return [&slot](const Tensor&, const Tensor& out) {
        slot = out.detach();
        return Tensor();
    };
}

}  // namespace

AttentionProbe::AttentionProbe(MultiHeadAttention& attn)
    : h(attn.h), d_head(attn.d_head), q_layer(&attn.qkv), kv_layer(nullptr) {
    q_layer->hooks.set(HOOK, keep_output(q_out));
}

AttentionProbe::AttentionProbe(CrossAttention& attn)
    : h(attn.h), d_head(attn.d_head), q_layer(&attn.q), kv_layer(&attn.kv) {
    q_layer->hooks.set(HOOK, keep_output(q_out));
    kv_layer->hooks.set(HOOK, keep_output(kv_out));
}

AttentionProbe::~AttentionProbe() {
    q_layer->hooks.remove(HOOK);
    if (kv_layer) kv_layer->hooks.remove(HOOK);
}

Tensor AttentionProbe::weights(const Tensor& mask) const {
    if (!q_out.defined() || (kv_layer && !kv_out.defined()))
        throw std::logic_error("AttentionProbe: the module has not run since the probe was set");
    NoGradGuard no_grad;
    Tensor Q, K, V;  // (B, h, N, d_head), (B, h, S, d_head) twice: split as the module splits
    const int64_t B = q_out.size(0), N = q_out.size(1);
    if (!kv_layer) {  // MultiHeadAttention: W_Q, W_K, W_V stacked
        Tensor qkv5 = permute(reshape(q_out, {B, N, 3, h, d_head}), {2, 0, 3, 1, 4});
        Q = select(qkv5, 0), K = select(qkv5, 1), V = select(qkv5, 2);
    } else {  // CrossAttention: W_Q alone, W_K and W_V stacked on the memory side
        const int64_t S = kv_out.size(1);
        Q = permute(reshape(q_out, {B, N, h, d_head}), {0, 2, 1, 3});
        Tensor kv5 = permute(reshape(kv_out, {B, S, 2, h, d_head}), {2, 0, 3, 1, 4});
        K = select(kv5, 0), V = select(kv5, 1);
    }
    return scaled_dot_product_attention(Q, K, V, mask).second;  // (B, h, N, S)
}
