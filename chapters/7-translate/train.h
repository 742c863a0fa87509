// Chapter 7's trainer: the model as this task builds it, and the training loop (teacher forcing,
// Adam with the paper's warm-up, one batch of sentences per step). Chapter 8's ablations train
// their variants with the same two calls.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "chapters/5-blocks/decoder.h"
#include "chapters/7-translate/task.h"

namespace translate {

// Where a token's position comes from: section 4's sinusoids (the paper's choice), or a learned
// table of vectors, one per position, which the paper also tried ("성능이 거의 같았고";
// chapter 8 compares the two), or nowhere: without position vectors self-attention sees each
// sentence as a set (section 4's "순서 없는 집합"; chapter 8 trains it).
enum class Positions { sinusoidal, learned, none };
constexpr int LEARNED_POSITIONS = 16;  // rows of a learned table: the longest sentence it takes

// Section 5's EncoderDecoder with a learned table in place of the sinusoids: the one thing it
// overrides is where position vectors come from.
struct LearnedPositionsModel : EncoderDecoder {
    // (LEARNED_POSITIONS, d) each, drawn after every weight of the encoder-decoder, so that the
    // weights the two models share are the same draws.
    Embedding src_pos, tgt_pos;
    LearnedPositionsModel(int src_vocab, int tgt_vocab, int d_model, int n_heads, int layers,
                          LnPlacement p);
    // Rows 0..T-1 of the table that belongs to `tokens`. A position past the last row has no
    // vector: std::out_of_range.
    Tensor position_vectors(const Embedding& tokens, int64_t T) const override;
    // The encoder-decoder's names with src_pos and tgt_pos before the head's.
    void collect_parameters(const std::string& prefix, NamedTensors& out) const override;
};

// Section 5's EncoderDecoder with no position vectors: it adds zeros where the sinusoids go, so
// every token vector is its embedding alone (x + 0 is x).
struct NoPositionsModel : EncoderDecoder {
    using EncoderDecoder::EncoderDecoder;
    Tensor position_vectors(const Embedding&, int64_t T) const override {
        return Tensor::zeros({T, d_model});  // (T, d)
    }
};

struct ModelConfig {
    int layers = 2, d_model = 64, heads = 4;  // encoder blocks = decoder blocks
    LnPlacement placement = LnPlacement::PreLN;
    Positions positions = Positions::sinusoidal;
    int seed = 0;  // torch.manual_seed before the modules are built
};

// The model a config describes, EncoderDecoder(SRC_VOCAB, TGT_VOCAB, ...), the learned
// positions' model or the one without positions, its weights drawn from the default generator
// as it stands.
std::unique_ptr<EncoderDecoder> new_model(const ModelConfig& c);

// new_model(c) after manual_seed(seed), with the token embeddings drawn N(0, 1/d_model) instead
// of N(0, 1) (see train.cpp for why).
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
    // Called every `evaluate_every` steps (0: never) and after the last, with the seconds spent
    // training so far; the time the calls themselves take counts in no seconds (chapter 8 reads
    // the wall time to an accuracy).
    int evaluate_every = 0;
    std::function<void(int step, double seconds)> evaluate;
};

struct TrainResult {
    std::vector<double> losses;  // one per step taken
    int diverged_at = 0;         // the step whose loss was not finite (training stopped), or 0
    double seconds = 0;          // training's wall time, evaluate's calls left out
};

// Trains `model` on `numbers` (shuffled in turn, a new shuffle each epoch; numbers in `heldout`
// are never drawn). Each sentence, with chance 1/8, picks its digit count 1..max_digits first,
// then a number of that length that is not held out; otherwise it is the next of `numbers`.
TrainResult train(EncoderDecoder& model, std::vector<int64_t> numbers,
                  const std::vector<int64_t>& heldout, const TrainConfig& c);

// The same loop for any model of this task: `loss` gives a batch's teacher-forced loss, Adam
// updates `parameters`, and the paper's schedule reads `d_model` (chapter 8 trains the previous
// article's LSTM with it).
using BatchLoss = std::function<Tensor(const Batch&)>;
TrainResult train(const std::vector<Tensor>& parameters, int d_model, const BatchLoss& loss,
                  std::vector<int64_t> numbers, const std::vector<int64_t>& heldout,
                  const TrainConfig& c);

}  // namespace translate
