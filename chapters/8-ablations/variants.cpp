// Chapter 8's variants as forward hooks (see variants.h).
#include "chapters/8-ablations/variants.h"

#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>

#include "common/optim.h"

namespace ablations {

namespace {

// The hooks' names on the Linears they sit on.
constexpr const char* UNSCALED = "ablations.unscaled";
constexpr const char* HEAD_MASK = "ablations.head_mask";
constexpr const char* SUBLAYER = "ablations.sublayer";
constexpr const char* RESIDUAL = "ablations.no_residual";

// A hook that multiplies the first `q_cols` of `cols` output columns by sqrt(d_head) and the
// rest by 1 (exactly themselves, forward and backward).
ForwardHooks::Hook undo_division(int64_t cols, int64_t q_cols, int d_head) {
    std::vector<float> f(size_t(cols), 1.0f);
    for (int64_t j = 0; j < q_cols; j++)
        f[size_t(j)] = std::sqrt(float(d_head));
    const Tensor factor = Tensor::from(f, {cols});  // (cols)
    return [factor](const Tensor&, const Tensor& out) { return out * factor; };
}

// The same output for every sentence: its mean over the batch (dim 0), with o's graph kept.
Tensor batch_mean(const Tensor& o) { return o * 0.0f + mean(o, 0, true); }

// The hook of `layer` while scaling is off, none while it is on.
void set_unscaled(Linear& layer, bool on, int64_t q_cols, int d_head) {
    if (on)
        layer.hooks.remove(UNSCALED);
    else
        layer.hooks.set(UNSCALED, undo_division(layer.weight.size(0), q_cols, d_head));
}

// W_O's pre-hook: each head's d_head columns of the concat times its entry of keep.
void set_mask(Linear& proj, const std::vector<float>& keep, int h, int d_head) {
    if (int(keep.size()) != h)
        throw std::invalid_argument("set_head_mask: " + std::to_string(keep.size()) +
                                    " entries for " + std::to_string(h) + " heads");
    std::vector<float> f;
    for (float k : keep)
        f.insert(f.end(), size_t(d_head), k);
    const Tensor factor = Tensor::from(f, {int64_t(f.size())});  // (h * d_head)
    proj.hooks.set_pre(HEAD_MASK, [factor](const Tensor& concat) { return concat * factor; });
}

// The residual around the sublayer from `first` (reads the block's x) to `last` (gives the
// sublayer's output) removed, or restored.
void set_residual(Linear& first, Linear& last, bool on) {
    first.hooks.remove(RESIDUAL);
    last.hooks.remove(RESIDUAL);
    if (on) return;
    auto x = std::make_shared<Tensor>();  // the sublayer's input of the latest forward
    first.hooks.set_pre(RESIDUAL, [x](const Tensor& in) {
        *x = in;
        return Tensor();  // unchanged
    });
    last.hooks.set(RESIDUAL, [x](const Tensor&, const Tensor& out) { return out - *x; });
}

}  // namespace

// The variants the table names (see variants.h), then the switches they set.
void unscaled(EncoderDecoder& m, translate::TrainConfig&) { set_score_scaling(m, false); }

void no_residuals(EncoderDecoder& m, translate::TrainConfig&) { set_residuals(m, false); }

double peak_lr(const translate::TrainConfig& tc, int d_model) {
    return optim::noam_lr(tc.warmup, d_model, tc.warmup, tc.lr);
}

void no_warmup(EncoderDecoder& m, translate::TrainConfig& tc) {
    const double peak = peak_lr(tc, m.d_model);
    tc.schedule = [peak, d = m.d_model, warmup = tc.warmup, lr = tc.lr](int step) {
        return step <= warmup ? peak : optim::noam_lr(step, d, warmup, lr);
    };
}

void set_score_scaling(MultiHeadAttention& a, bool on) {
    set_unscaled(a.qkv, on, a.qkv.weight.size(0) / 3, a.d_head);  // Q: the first third
}

void set_score_scaling(CrossAttention& a, bool on) {
    set_unscaled(a.q, on, a.q.weight.size(0), a.d_head);  // Q: all of it
}

void set_score_scaling(EncoderDecoder& m, bool on) {
    for (auto& b : m.encoder)
        set_score_scaling(b->attn, on);
    for (auto& b : m.decoder) {
        set_score_scaling(b->self_attn, on);
        set_score_scaling(b->cross_attn, on);
    }
}

void set_head_mask(MultiHeadAttention& a, const std::vector<float>& keep) {
    set_mask(a.proj, keep, a.h, a.d_head);
}

void set_head_mask(CrossAttention& a, const std::vector<float>& keep) {
    set_mask(a.proj, keep, a.h, a.d_head);
}

int head_count(const EncoderDecoder& m) { return 3 * int(m.encoder.size()) * m.n_heads; }

void set_head_mask(EncoderDecoder& m, const std::vector<float>& keep) {
    const int L = int(m.encoder.size()), h = m.n_heads;
    if (int(keep.size()) != 3 * L * h)
        throw std::invalid_argument("set_head_mask: " + std::to_string(keep.size()) +
                                    " entries for " + std::to_string(3 * L * h) + " heads");
    auto part = [&](int kind, int layer) {  // one attention's h entries
        auto from = keep.begin() + (kind * L + layer) * h;
        return std::vector<float>(from, from + h);
    };
    for (int l = 0; l < L; l++) {
        set_head_mask(m.encoder[size_t(l)]->attn, part(0, l));
        set_head_mask(m.decoder[size_t(l)]->self_attn, part(1, l));
        set_head_mask(m.decoder[size_t(l)]->cross_attn, part(2, l));
    }
}

void set_residuals(EncoderDecoder& m, bool on) {
    if (m.placement != LnPlacement::PostLN) {
        if (on) return;  // the listing's residuals: nothing to restore
        throw std::invalid_argument(
            "set_residuals: Pre-LN's sublayers read LayerNorm(x), not x; only Post-LN's "
            "residual connections are removed");
    }
    for (auto& b : m.encoder) {
        set_residual(b->attn.qkv, b->attn.proj, on);
        set_residual(b->ff.fc1, b->ff.fc2, on);
    }
    for (auto& b : m.decoder) {
        set_residual(b->self_attn.qkv, b->self_attn.proj, on);
        set_residual(b->cross_attn.q, b->cross_attn.proj, on);
        set_residual(b->ff.fc1, b->ff.fc2, on);
    }
}

void set_sublayer(EncoderDecoder& m, FirstStep what) {
    for (auto& b : m.decoder) {
        b->self_attn.proj.hooks.remove(SUBLAYER);
        b->cross_attn.proj.hooks.remove(SUBLAYER);
        b->cross_attn.q.hooks.remove(SUBLAYER);
        auto mean_out = [](const Tensor&, const Tensor& out) { return batch_mean(out); };
        if (what == FirstStep::self_mean) b->self_attn.proj.hooks.set(SUBLAYER, mean_out);
        if (what == FirstStep::cross_mean) b->cross_attn.proj.hooks.set(SUBLAYER, mean_out);
        // Q = 0 (the projection has no bias) makes every score 0: equal weights.
        if (what == FirstStep::cross_uniform)
            b->cross_attn.q.hooks.set_pre(SUBLAYER, [](const Tensor& x) { return x * 0.0f; });
    }
}

}  // namespace ablations
