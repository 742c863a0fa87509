// Chapter 8's experiments: the article's prose claims that need training, each a few runs of
// chapter 7's model and trainer on chapter 7's task, compared under the same budget, over
// several seeds.
//
// A run is a Job (runner.h) returning a Record of numbers; every run is repeated for K seeds
// (--seeds K, default 5; --seed S shifts them: S, S+1, ...). A seed sets both the weights
// (torch.manual_seed(seed)) and the training order (its generator seeded seed + 1), and a
// variant and its baseline share a seed, so each seed gives one paired difference. main.cpp
// prints each claim's table and its comparisons' tests and verdicts (COMPARISONS below, stats.h)
// and draws its figure. `scale`
// multiplies every run's steps (and warm-up), so the tests can run the same code in seconds;
// 1 is the default budget.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "chapters/5-blocks/decoder.h"
#include "chapters/7-translate/task.h"
#include "chapters/7-translate/train.h"
#include "chapters/8-ablations/machinery/runner.h"
#include "chapters/8-ablations/stats.h"
#include "chapters/8-ablations/variants.h"

namespace ablations {

// The table, table.cpp: RUNS (each run's job, model, budget and record keys, a line on what it
// is beside each), CLAIMS (the runs each claim reads) and COMPARISONS (what is judged, below).
// Every design, budget and threshold of the runs was committed before the first scored run of
// its experiment; the comparisons' floors, tests and families follow one rule each (see
// COMPARISONS), the same for every comparison.
//
// The budget is a fixed number of steps of chapter 7's batch of 64 under the paper's schedule,
// so that one seed of all the runs takes minutes on two cores: chapter 7's 2000 steps for its
// model and the variants of its width, fewer where a step costs more (d_k = 256, the 6 + 6
// blocks) or the task is smaller (the positions' numbers, the neighbour task). The warm-up is a
// tenth of the steps (a fifth for the 6 + 6 blocks); a no-warm-up run starts at its peak.
//
// Three splits (three_way_split), none of them chapter 7's 1000 held-out numbers, on which its
// defaults were tuned: chapter 8 neither trains on them nor scores on them. The first 1000 of
// chapter 7's shuffled training numbers are the validation set, the next 1000 the test set
// (every printed score of chapter 7's task is on them), the rest the training set. The one
// choice made (which heads to prune, in which order, how many) is made on validation and
// scored on test. §4's fixed sets leave chapter 7's held-out numbers out of their scoring too.

// Which job trains a run (experiments.cpp): what it trains on and what it measures.
enum class Recipe {
    base,            // chapter 7's model on chapter 7's task, then pruned (§3), first step (§5)
    chapter7,        // a variant of it on chapter 7's task
    positions,       // trained on 1..9999, scored also on five-digit numbers (§4)
    source_lengths,  // trained on sources of <= POS2_MAX_SYLLABLES syllables, scored longer (§4)
    neighbour,       // the neighbour task: one encoder block (§3)
    warmup,          // chapter 7's task with or without the warm-up, or without residual
                     // connections (§5)
    rnn              // the previous article's LSTM with attention on chapter 7's task (rnn.h;
                     // the opening); its model's d_model is the LSTMs' width
};

// The opening claim's clock (the base run and the LSTM's): validation's exact match every
// LEVEL_EVERY steps, and the training's wall time until it first reaches LEVEL_PERCENT.
constexpr int LEVEL_EVERY = 25;
constexpr double LEVEL_PERCENT = 90;

// One run, repeated for every seed: the job that trains it, its model, its budget at --scale 1
// and the keys of the record it hands back (all_jobs checks them; "seed" is added to every one).
struct RunSpec {
    const char* name;  // --runs's name; the jobs are name/seed
    Recipe recipe;
    translate::ModelConfig model;  // its seed is the run's; the neighbour task reads layers,
                                   // d_model, heads and placement
    bool scaled = true;   // softmax(Q K^T / sqrt(d_k)); false: softmax(Q K^T)
    bool warm = true;     // the paper's warm-up; false: its peak learning rate from step 1
    double lr = 1;        // a factor on the paper's schedule, its peak included (warmup runs)
    bool residual = true;  // false: Post-LN's residual connections removed (set_residuals)
    int seed_offset = 0;   // the run trains with --seed's seeds plus this: a fresh block
    int steps = 0, warmup = 0;        // at --scale 1; both scale
    double cost = 0, fixed_cost = 0;  // rough CPU seconds: fixed_cost + cost * scale
    std::vector<const char*> keys;    // the record's keys, without run_settings'
};
extern const std::vector<RunSpec> RUNS;

// What a record's key holds: how many values (for its run at a --scale) and which ones. A kept
// record is checked against these (record_problem) before it is read: the report and the
// figures index its lists by them.
enum class Length {
    one,
    steps,          // one per training step; up to the step it diverged at, when it did
    model_heads,    // one per head of the run's model's one attention (the neighbour task)
    all_heads,      // one per head of every attention of the encoder-decoder (pruning)
    kinds,          // encoder self, decoder self, encoder-decoder
    first_steps,    // intact, self mean, cross mean, cross uniform (FirstStep)
    evaluations,    // one per NB_EVAL_EVERY steps, and one after the last step
    learned_rows,   // LEARNED_POSITIONS
};
enum class Range {
    percent,      // 0..100
    weight,       // 0..1 (and float rounding): an attention weight, a total variation
    step,         // an integer step, 0..the run's steps (0: none)
    head_order,   // every head index once
    head_number,  // an integer, 0..the heads of every attention
    length,       // an integer, a count of digits or syllables, 1..100
    nonnegative,  // a finite number >= 0 (seconds, a distance)
    or_never,     // a number >= 0 (seconds, steps), or +inf: never
    positive,     // a finite number > 0 (a learning rate)
    loss,         // any number: the loss of the step that diverged is not finite
    declared,     // what run_settings says: the seed, the budget and the model it was run with
};
struct KeySpec {
    const char* name;
    Length length;
    Range range;
    const char* meaning;
};
extern const std::vector<KeySpec> KEYS;  // every key any run writes, and "seed"
const KeySpec& key_spec(const std::string& name);  // throws naming a miss

// What every record carries besides its run's keys: the settings it was trained with (seed,
// steps, warmup, layers, d_model, heads, pre_ln, learned_positions, no_positions, scaled, warm,
// lr, residual), so that a kept record says what made it.
std::vector<std::pair<std::string, double>> run_settings(const RunSpec& r, double scale,
                                                         int seed);

// "" when `rec` is a record `r`'s job at `scale` and `seed` could have returned: exactly its
// keys and run_settings' (with their values), every list as long as its Length says, every
// value in its Range. Else what is wrong, naming the key ("validation_accuracy_curve has 0
// values, not 21").
std::string record_problem(const RunSpec& r, double scale, int seed, const Record& rec);
const RunSpec& run_spec(const std::string& name);  // throws naming a miss
int steps_of(const std::string& run, double scale);   // scaled_steps(steps, scale)
int warmup_of(const std::string& run, double scale);  // scaled_steps(warmup, scale)

// Every run of RUNS for every seed (jobs named run/seed), each record checked by
// record_problem (Job::check): the job's own, and a kept one before it is taken.
std::vector<Job> all_jobs(double scale, const std::vector<int>& seeds);

// The seeds of a run: first, first + 1, ..., first + count - 1.
std::vector<int> seed_list(int first, int count);

// One column of a claim's settings panel (its figure's left panel): every seed's run:key.
struct Setting {
    const char* label;    // its name in the legend
    const char* run_key;  // run:key, the key one of the run's keys
};

// One claim of the article: --only's name, its figure 8-<name>.png and every run its table and
// figure read.
struct ClaimSpec {
    const char* name;  // opening, scaling, heads, pruning, positions, order, warmup,
                       // residual, first-step
    std::vector<const char*> runs;
    std::vector<Setting> settings;  // left to right; none for pruning (its panel is a curve)
};
extern const std::vector<ClaimSpec> CLAIMS;
const ClaimSpec& claim_spec(const std::string& name);  // throws naming a miss

// ---- the comparisons, fixed before the runs --------------------------------------------------

// What a comparison is in the family of tests (stats.h: holm): one primary comparison per
// claim of the article, Holm-Bonferroni over all of them at 5% family-wise; every other one
// exploratory, tested alone at 5%; an identity, a number the model's structure fixes, printed
// and never tested.
enum class Family { primary, exploratory, identity };
// The test that fits the outcome, declared with the comparison:
//   graded    the mean paired difference, its t interval (its spread floored by the items'
//             binomial spread, clipped to the range the mean can take) and the exact sign-flip
//             p against the threshold (for within: against the band's nearer edge, or both)
//   count     the seeds whose difference is on the claim's side of the threshold, k of n, and
//             the exact binomial p against 1/2: for outcomes that succeed or fail per seed
//   fisher    the seeds whose value reaches `level`, baseline's against variant's, and
//             Fisher's exact p; diff is the variant's share minus the baseline's (points)
enum class Test { graded, count, fisher };

// One paired comparison: per seed, variant - weight * baseline of `metric` (percentage
// points), judged by `rule` (stats.h). The values are read from the runs' records
// (summary.h: values_of). A seed whose baseline is below `floor` (its competence floor,
// declared with the comparison) did not learn: it is reported, counted and left out. Its
// figure is its claim's, 8-<claim>.png, where it is a column of the comparisons' panel, named
// `label`.
struct ComparisonSpec {
    const char* claim;     // a ClaimSpec's name
    const char* section;   // "§2"
    const char* metric;    // "exact_pp": exact match on the test set, in percentage points;
                           // "seeds_pct": the seeds on the claim's side, % (count);
                           // "seeds_pp": the shares of seeds reaching the level (fisher)
    const char* baseline;  // run:key, the key one of the run's keys; "" for none (weight 0)
    const char* variant;
    Rule rule;
    const char* label;  // the comparison's column in the figure
    Family family = Family::exploratory;
    Test test = Test::graded;
    double floor = 0;    // the baseline's competence floor, per seed
    double weight = 1;   // 0.5: the variant against half the baseline; 0: the variant alone
    double level = 50;   // fisher: a seed succeeds when its value reaches this
    int items = 1000;    // the test items each value is a percentage of (the binomial floor)
    // What a seed's difference is in: percentage points, drawn in the comparisons' panel; or
    // seconds or steps (count tests), drawn beside the values they come from.
    const char* unit = "%p";
};
const char* family_id(Family f);                // primary, exploratory, identity
std::string test_id(const ComparisonSpec& c);  // sign-flip, binomial, fisher>=50, identity
// The fewest seeds whose baseline learned that a comparison is tested on; fewer: undecided.
constexpr int MIN_VALID_SEEDS = 3;
// Floors: chance + 20 points of the baseline's metric (exact match: chance is 0; the neighbour
// task's digits: 10%, the share of the most frequent class), none where the baseline's value
// is itself what the claim is about (the long inputs). Thresholds: those of the
// single-seed rules (the 20-point gap of §2, the 2 points of §3 and §4, the 1 point of
// pruning, the 10 points of Pre-LN's warm-up); the absolute criteria of the single-seed rules
// (§2: unscaled at most half of scaled; §4: the sinusoid at least 50% on longer inputs); 50%
// exact match as the success level of the outcomes that succeed or fail per seed.
//   opening      the Transformer (base) - the LSTM with attention, exact match at the same
//                steps: above 0 (primary, "앞질렀고"); the Transformer's training seconds to
//                90% on validation - half the LSTM's, seed by seed: below 0 (count, primary,
//                "크게 줄었습니다"; a run that never gets there takes +inf seconds, and a seed
//                where neither does is left out)
//   scaling      unscaled - scaled at d_k = 256: below -20 (primary); at d_k = 16: below -20;
//                unscaled - half of scaled at d_k = 256, seed by seed: below 0 (count)
//   heads        1 head - 4 heads: below -2 (primary); the neighbour task: below -2; on a
//                fresh block of seeds, the neighbour task's steps to 99% on validation, 1 head
//                - 4 heads, seed by seed: above 0 (count; +inf where never, as the opening's)
//   pruning      the third of the heads least important on validation removed - intact, seed
//                by seed: above -1 (count, primary)
//   positions    learned - sinusoidal in range: within ±2 (primary); the sinusoid on the
//                8-9-syllable sources, seed by seed: above 50 (count, primary); learned against
//                sinusoidal there: seeds reaching 50%, fewer (fisher)
//   order        no position vectors - sinusoids: below -20 (primary): §4's "순서 없는 집합",
//                the 20 points of §2's "거의 하지 못합니다"
//   warmup       Post-LN without - with warm-up: seeds reaching 50%, fewer (fisher, primary);
//                Pre-LN without - with: above -10; Post-LN - Pre-LN, both without: seeds
//                reaching 50%, fewer (fisher); without the warm-up at a third and a tenth of
//                the peak: Post-LN seeds reaching 50%, fewer (fisher), Pre-LN above -10
//   residual     Post-LN without - with residual connections, both warmed up: seeds reaching
//                50%, fewer (fisher, primary)
//   first-step   self-attention's output averaged - intact, cross-attention's averaged -
//                intact (first digit right): identities. At the first step every decoder
//                input is <시작>, so self-attention's output is the same for every sentence
//                (averaging it changes nothing), and averaging cross-attention's gives every
//                sentence the same input (its accuracy is the share of the first digit the
//                model then writes)
extern const std::vector<ComparisonSpec> COMPARISONS;

// ---- pieces the jobs use, exposed for the tests ----------------------------------------------

int scaled_steps(int steps, double scale);  // max(1, round(steps * scale))

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
