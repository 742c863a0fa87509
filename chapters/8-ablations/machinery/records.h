// Chapter 8's records, checked: what every key of a run's record holds (KEYS), and whether a
// record is one its run could have written (record_problem). A record read back from --keep's
// folder is a file anyone could have written: it is taken only when it passes.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "chapters/8-ablations/table.h"

namespace ablations {

// What a record's key holds: how many values (for its run at a --scale) and which ones. The
// report and the figures index a record's lists by them.
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

}  // namespace ablations
