// Chapter 8's experiments: the article's prose claims that need training, each a few runs of
// chapter 7's model and trainer on chapter 7's task, compared under the same budget.
//
// A run is a Job (runner.h) returning a Record of numbers; main.cpp prints each claim's table
// and verdict from the records and draws its figure. `scale` multiplies every run's steps (and
// warm-up), so the tests can run the same code in seconds; 1 is the default budget.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "chapters/5-blocks/decoder.h"
#include "chapters/7-translate/task.h"
#include "chapters/7-translate/train.h"
#include "chapters/8-ablations/runner.h"

namespace ablations {

// The runs, by name. Each claim reads the runs it needs (main.cpp lists which).
//   base           chapter 7's model (2 + 2 blocks, d_model 64, 4 heads, Pre-LN, 2000 steps);
//                  then its heads masked one by one and greedily (§3), and its first
//                  generation step taken apart (§5)
//   heads-1        the same with 1 head (d_k = 64): the same parameter count (§3)
//   unscaled-16    base without the 1/sqrt(d_k) (d_k = 16) (§2)
//   scaled-256     1 + 1 blocks, d_model 256, 1 head (d_k = 256), with the division (§2)
//   unscaled-256   the same without it (§2)
//   pos-sin        trained on 1..9999 only, sinusoidal positions (§4)
//   pos-learned    the same with learned position tables (§4)
//   warm-post, nowarm-post, warm-pre, nowarm-pre
//                  6 + 6 blocks, d_model 32: Post-LN and Pre-LN, with the paper's warm-up and
//                  with the same peak learning rate from the first step (§5)
//
// The budget, chosen before any result was seen, so that the 11 runs fit in about 4 minutes on
// two cores (about 440 CPU seconds): chapter 7's 2000 steps for its own model and its 1-head and
// unscaled variants; 400 steps where d_k = 256 (one head of 256 needs d_model = 256, sixteen
// times chapter 7's per-layer cost, so 1 + 1 blocks); 1000 steps for the positions (a tenth of
// the numbers to learn); 500 steps for the 6 + 6-block runs at d_model 32 (depth is what Post-LN
// is about; the width is cut to pay for it). Every run uses chapter 7's batch of 64 and the
// paper's schedule with the warm-up a tenth of the steps, as chapter 7 has it; the no-warm-up
// runs start at that schedule's peak. Batches and the held-out sets are chapter 7's.
// seed: every run's torch.manual_seed for its weights (and seed + 1 for its training order); the
// held-out sets are fixed whatever it is.
std::vector<Job> all_jobs(double scale, int seed = 0);

// ---- pieces the jobs use, exposed for the tests ----------------------------------------------

int scaled_steps(int steps, double scale);  // max(1, round(steps * scale))

// Every attention of the model computes softmax(Q K^T / sqrt(d_k)) (on) or softmax(Q K^T).
void set_score_scaling(EncoderDecoder& m, bool on);

// Which attention a head belongs to.
enum class Kind { encoder_self, decoder_self, cross };
const char* kind_name(Kind k);  // "인코더 셀프", "디코더 셀프", "인코더-디코더"
// The head masks of every attention of the model, one entry per head: 1 keeps it, 0 removes it.
// Index order: kind, then layer, then head.
int head_count(const EncoderDecoder& m);  // 3 * layers * heads
void set_head_mask(EncoderDecoder& m, const std::vector<float>& keep);

// Exact match on `numbers` in percent (greedy generation).
double exact_match(const EncoderDecoder& m, const std::vector<int64_t>& numbers);

// The first generation step, from <시작> alone, with one sublayer of every decoder block
// replaced. Returns the logits of the first predicted token, (B, 1, TGT_VOCAB).
enum class FirstStep {
    intact,
    self_mean,     // self-attention's output replaced by its mean over the batch's sentences
    cross_mean,    // cross-attention's output replaced by its mean over the batch's sentences
    cross_uniform  // cross-attention with equal weights on every source position
};
Tensor first_step_logits(const EncoderDecoder& m, const translate::Batch& b, FirstStep what);

// The fixed sets of §4: 1000 held-out numbers below 10000, the rest of 1..9999 to train on, and
// 1000 five-digit numbers (never trained on: training draws at most four digits).
struct LengthSplit {
    std::vector<int64_t> train, heldout, five_digit;
};
LengthSplit length_split();

}  // namespace ablations
