// Chapter 8's variants: what a run changes in chapter 7's model or its training. The model's
// are built around the listings of sections 3 and 5 without changing a line of them: each is a
// forward hook (common/nn.h) on one of a module's Linears, which adds an operation to what the
// Linear takes or gives. With none set, every module computes what its listing computes; set,
// the operation is the one the variant names, on the same floats (so an unscaled run, say,
// trains exactly as one written into the listing). The attention weights are read through
// chapter 7's probe, chapters/7-translate/attention_probe.h. The variants that need no hook
// (one head, learned positions, none, Post-LN) are chapter 7's ModelConfig, in the table's row.
#pragma once
#include <vector>

#include "chapters/5-blocks/decoder.h"
#include "chapters/7-translate/train.h"

namespace ablations {

// A run's variant (table.h: RunSpec::variant), applied to its model once it is built and to its
// training before it starts.
using Variant = void (*)(EncoderDecoder& m, translate::TrainConfig& tc);
void unscaled(EncoderDecoder& m, translate::TrainConfig& tc);      // §2: set_score_scaling off
void no_residuals(EncoderDecoder& m, translate::TrainConfig& tc);  // §5: set_residuals off
// §5: no warm-up: the schedule's peak, peak_lr, from step 1, then the same decay after it.
void no_warmup(EncoderDecoder& m, translate::TrainConfig& tc);
double peak_lr(const translate::TrainConfig& tc, int d_model);  // noam_lr at the warm-up's end

// Every attention of the model computes softmax(Q K^T / sqrt(d_k)) (on) or softmax(Q K^T): off,
// a hook multiplies the Q part of the Q projection's output by sqrt(d_k), which the listing's
// division then undoes (the same products as q * sqrt(d_k); K and V are multiplied by 1, which
// leaves them and their gradients exactly as they were).
void set_score_scaling(MultiHeadAttention& a, bool on);
void set_score_scaling(CrossAttention& a, bool on);
void set_score_scaling(EncoderDecoder& m, bool on);

// Head masks (Michel et al. 2019), one entry per head: 1 keeps it, 0 removes it; a hook before
// W_O multiplies head i's d_head columns of the concat by entry i (the same products as head
// i's output times its entry).
void set_head_mask(MultiHeadAttention& a, const std::vector<float>& keep);  // (h) entries
void set_head_mask(CrossAttention& a, const std::vector<float>& keep);
// Every attention of the model. Index order: kind (encoder self, decoder self, cross), then
// layer, then head.
int head_count(const EncoderDecoder& m);  // 3 * layers * heads
void set_head_mask(EncoderDecoder& m, const std::vector<float>& keep);

// One sublayer of every decoder block replaced (§5's first step), or none (intact): a hook on
// the sublayer's W_O output (the batch means) or on its W_Q input (zeroed: Q = 0, every score 0).
enum class FirstStep {
    intact,
    self_mean,     // self-attention's output replaced by its mean over the batch's sentences
    cross_mean,    // cross-attention's output replaced by its mean over the batch's sentences
    cross_uniform  // cross-attention with equal weights on every source position
};
void set_sublayer(EncoderDecoder& m, FirstStep what);

// Post-LN's residual connections, on (the listing) or off: x = LayerNorm(x + Sublayer(x))
// becomes LayerNorm(Sublayer(x)) in every block (§5: "기울기가 깊은 층까지"). In Post-LN a
// sublayer's first Linear reads the block's x itself, so a pre-hook there keeps x and a hook on
// the sublayer's last Linear subtracts it: the block adds x + (Sublayer(x) - x), which is
// Sublayer(x) to float rounding, and x's two gradient terms through the sum, g and -g, cancel.
// Pre-LN's sublayers read LayerNorm(x), not x: off throws std::invalid_argument there.
void set_residuals(EncoderDecoder& m, bool on);

}  // namespace ablations
