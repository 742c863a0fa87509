// Chapter 8's runs: the recipes the table's rows name (RunSpec::recipe), each training one run
// for one seed with chapter 7's make_model and train() (or the LSTM of rnn.h) and measuring what
// its claims read; the data sets they train and score on; and every run of the table for every
// seed as a job for the runner (machinery/runner.h).
//
// Three splits (three_way_split), none of them chapter 7's 1000 held-out numbers, on which its
// defaults are tuned: chapter 8 neither trains on them nor scores on them. The first 1000 of
// chapter 7's shuffled training numbers are the validation set, the next 1000 the test set
// (every printed score of chapter 7's task is on them), the rest the training set. The one
// choice made (which heads to prune, in which order, how many) is made on validation and
// scored on test. §4's fixed sets leave chapter 7's held-out numbers out of their scoring too.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "chapters/5-blocks/decoder.h"
#include "chapters/7-translate/task.h"
#include "chapters/8-ablations/table.h"

namespace ablations {

// ---- the recipes (table.h: Recipe) ------------------------------------------------------------

// Chapter 7's model on chapter 7's task, on the clock of the opening claim; then its heads
// removed (§3, prune) and its first generation step taken apart (§5, first_step_logits).
Record train_base(const RunSpec& r, translate::TrainConfig tc);
// A variant of chapter 7's model on chapter 7's task, and its attention's peak before training.
Record train_variant(const RunSpec& r, translate::TrainConfig tc);
// Trained on 1..9999, scored in range and on five-digit numbers (§4, length_split).
Record train_positions(const RunSpec& r, translate::TrainConfig tc);
// Trained on sources of <= POS2_MAX_SYLLABLES syllables, scored longer (§4).
Record train_source_lengths(const RunSpec& r, translate::TrainConfig tc);
// The neighbour task: one encoder block (§3, neighbour_targets).
Record train_neighbour(const RunSpec& r, translate::TrainConfig tc);
// Chapter 7's task with the 6 + 6 blocks, and the schedule's peak learning rate (§5).
Record train_deep(const RunSpec& r, translate::TrainConfig tc);
// The previous article's LSTM with attention on chapter 7's task (rnn.h; the opening), its
// model's d_model the LSTMs' width, on the base run's clock.
Record train_lstm(const RunSpec& r, translate::TrainConfig tc);

// The opening claim's clock (the base run and the LSTM's): validation's exact match every
// LEVEL_EVERY steps, and the training's wall time until it first reaches LEVEL_PERCENT.
constexpr int LEVEL_EVERY = 25;
constexpr double LEVEL_PERCENT = 90;

// ---- the jobs ---------------------------------------------------------------------------------

// Every run of RUNS for every seed (jobs named run/seed, run_name's inverse), each record
// checked by record_problem (Job::check, machinery/records.h): the job's own, and a kept one
// before it is taken.
std::vector<Job> all_jobs(double scale, const std::vector<int>& seeds);
std::string run_name(const std::string& job_name);  // "base/3" -> "base"
// The seeds of a run: first, first + 1, ..., first + count - 1.
std::vector<int> seed_list(int first, int count);

// ---- the data sets and the measurements the recipes use, exposed for the tests ------------

// Chapter 7's split with a validation and a test set taken out of its training numbers, and
// its held-out numbers (`tuned`) set aside.
struct ThreeWay {
    std::vector<int64_t> train, validation, test, tuned;
    std::vector<int64_t> never_train() const;  // validation, test and tuned: training never
                                               // draws them
};
ThreeWay three_way_split();

// Which attention a head belongs to (set_head_mask's kinds, variants.h).
enum class Kind { encoder_self, decoder_self, cross };
const char* kind_name(Kind k);  // "인코더 셀프", "디코더 셀프", "인코더-디코더"

// Exact match on `numbers` in percent (greedy generation).
double exact_match(const EncoderDecoder& m, const std::vector<int64_t>& numbers);

// §3's pruning, the order chosen on `validation`, scored on `test`. Every head is removed alone
// (scored on validation: the order, least harmful first); then the heads are removed in that
// order, cumulatively, scoring both sets after each. `keep` is the number chosen on validation:
// the most heads whose cumulative removal costs validation under 1 point. `third` is test after
// removing the first third_of_heads(n) heads of the order.
inline int third_of_heads(int n) { return (n + 2) / 3; }  // ceil(n / 3)
struct Pruning {
    std::vector<double> alone_validation;  // (n) each head removed alone
    std::vector<int> order;                // (n) head indices, least harmful on validation first
    std::vector<double> curve_validation, curve_test;  // (n) after removing order[0..i]
    std::vector<double> kind_removed_test;             // (3) every head of one kind removed
    double full_validation = 0, full_test = 0, third_test = 0;
    int can_go = 0;  // chosen on validation
};
Pruning prune(EncoderDecoder& m, const std::vector<int64_t>& validation,
              const std::vector<int64_t>& test);

// The first generation step, from <시작> alone, with one sublayer of every decoder block
// replaced (set_sublayer, variants.h), through EncoderDecoder::decode as generation runs it.
// Returns the logits of the first predicted token, (B, 1, TGT_VOCAB); the model is left intact.
Tensor first_step_logits(EncoderDecoder& m, const translate::Batch& b, FirstStep what);

// The fixed sets of §4: 1000 held-out numbers below 10000, the rest of 1..9999 to train on, and
// 1000 five-digit numbers (never trained on: training draws at most four digits); none of the
// scored ones is one of chapter 7's held-out numbers.
struct LengthSplit {
    std::vector<int64_t> train, heldout, five_digit;
};
LengthSplit length_split();

// The fixed sets of §4's second experiment: every number of 1..99999 whose source has at most
// POS2_MAX_SYLLABLES syllables, less three_way_split's never_train(), to train on; 1000 fixed
// numbers of more syllables (8 or 9), never trained on and not chapter 7's held-out ones, to
// score; and the numbers of three_way_split's test set of trained lengths, to score in range.
constexpr int POS2_MAX_SYLLABLES = 7;
struct SourceLengthSplit {
    std::vector<int64_t> train, long_test, in_range_test;
    std::vector<int64_t> excluded;  // every number training skips
};
SourceLengthSplit source_length_split();

// §3's second experiment: sequences of NB_LENGTH digits x, targets the class of
// y_i = x_{i-1} - x_{i+1} (indices mod NB_LENGTH): y_i + 9, in 0..NB_CLASSES - 1. The sign
// needs the two neighbours kept apart: one softmax weighing both alike averages their value
// vectors, which holds {a, b} but not which is left (at best 10% + 90% / 2 = 55% of the
// digits); one head must weigh them unevenly, two heads can each fetch one. Scored per position
// (percent) on 1000 fixed test sequences; validation accuracy every NB_EVAL_EVERY steps is a
// curve, nothing is chosen on it.
constexpr int NB_LENGTH = 8, NB_CLASSES = 19;
constexpr int NB_EVAL_EVERY = 50;  // validation accuracy every so many steps (the curve)
std::vector<int64_t> neighbour_targets(const std::vector<int64_t>& x);  // (B * NB_LENGTH)
// 1000 fixed test sequences, (1000 * NB_LENGTH) digits, all different.
std::vector<int64_t> neighbour_test_set();
// 1000 fixed validation sequences, all different and none in the test set.
std::vector<int64_t> neighbour_validation_set();

}  // namespace ablations
