// Chapter 7's trainer: the model as this task builds it, and the training loop (teacher forcing,
// Adam with the paper's warm-up, one batch of sentences per step). Chapter 8's ablations train
// their variants with the same two calls.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "chapters/5-blocks/decoder.h"
#include "chapters/7-translate/task.h"

namespace translate {

struct ModelConfig {
    int layers = 2, d_model = 64, heads = 4;  // encoder blocks = decoder blocks
    LnPlacement placement = LnPlacement::PreLN;
    Positions positions = Positions::sinusoidal;
    int seed = 0;  // torch.manual_seed before the modules are built
};

// EncoderDecoder(SRC_VOCAB, TGT_VOCAB, ...) after manual_seed(seed), with the token embeddings
// drawn N(0, 1/d_model) instead of N(0, 1) (see train.cpp for why).
std::unique_ptr<EncoderDecoder> make_model(const ModelConfig& c);

struct TrainConfig {
    int steps = 2000, batch = 64, warmup = 200;
    double lr = 1.0;              // a factor on the paper's schedule
    int seed = 0;                 // the training order (seed + 1 seeds its generator)
    int max_digits = MAX_DIGITS;  // the longest numbers training may draw
    // The learning rate of a step (from 1). Empty: optim::noam_lr(step, d_model, warmup, lr).
    std::function<double(int step)> schedule;
    // Called every `report_every` steps and after the last, with the mean loss since the last
    // call, the step's learning rate and the tokens per second since the last call.
    int report_every = 100;
    std::function<void(int step, double loss, double lr, double tokens_per_s)> report;
    // Asked after every step: true stops the training there (main's Ctrl-C with --save).
    std::function<bool()> stop;
};

struct TrainResult {
    std::vector<double> losses;  // one per step taken
    int diverged_at = 0;         // the step whose loss was not finite (training stopped), or 0
    double seconds = 0;
};

// Trains `model` on `numbers` (shuffled in turn, a new shuffle each epoch; numbers in `heldout`
// are never drawn). Each sentence, with chance 1/8, picks its digit count 1..max_digits first,
// then a number of that length that is not held out; otherwise it is the next of `numbers`.
TrainResult train(EncoderDecoder& model, std::vector<int64_t> numbers,
                  const std::vector<int64_t>& heldout, const TrainConfig& c);

}  // namespace translate
