// Chapter 8's records, checked (see records.h).
#include "chapters/8-ablations/machinery/records.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>

#include "chapters/8-ablations/runs.h"

namespace ablations {

const std::vector<KeySpec> KEYS = {
    // every run chapter 7's trainer trains (train_record)
    {"loss", Length::steps, Range::loss, "the training loss of every step"},
    {"diverged_at", Length::one, Range::step, "the step whose loss was not finite; 0: none"},
    {"seconds", Length::one, Range::nonnegative, "the training's wall time"},
    {"exact", Length::one, Range::percent, "exact match on the test set, %"},
    {"init_attention_peak", Length::one, Range::weight,
     "before training: the mean over queries of the largest attention weight"},
    // the base run's pruning (prune), chosen on validation, scored on test
    {"exact_validation_without_head", Length::all_heads, Range::percent,
     "validation exact match with each head removed alone"},
    {"prune_order", Length::all_heads, Range::head_order,
     "the heads, least harmful on validation first"},
    {"exact_validation_pruned", Length::all_heads, Range::percent,
     "validation exact match after removing the first 1, 2, ... heads of the order"},
    {"exact_test_pruned", Length::all_heads, Range::percent, "the same on the test set"},
    {"exact_kind_removed", Length::kinds, Range::percent,
     "test exact match with every head of one kind of attention removed"},
    {"exact_validation", Length::one, Range::percent, "validation exact match, every head kept"},
    {"exact_pruned_third", Length::one, Range::percent,
     "test exact match with the first third of the order removed"},
    {"prunable_heads", Length::one, Range::head_number,
     "the most heads removable for under 1 point of validation"},
    {"exact_prunable_removed", Length::one, Range::percent, "test exact match with those removed"},
    // the base run's first generation step (first_step)
    {"self_weight_min", Length::one, Range::weight, "the first step's smallest self weight"},
    {"self_weight_max", Length::one, Range::weight, "the first step's largest self weight"},
    {"decode_max_diff", Length::one, Range::nonnegative,
     "the first step by hand against EncoderDecoder::decode: largest probability difference"},
    {"first_digit_intact", Length::one, Range::percent, "first digit right, the model intact, %"},
    {"first_digit_self_mean", Length::one, Range::percent,
     "first digit right, self-attention's output averaged, %"},
    {"first_digit_cross_mean", Length::one, Range::percent,
     "first digit right, cross-attention's output averaged, %"},
    {"first_digit_cross_uniform", Length::one, Range::percent,
     "first digit right, cross-attention's weights uniform, %"},
    {"first_step_total_variation", Length::first_steps, Range::weight,
     "the first step's total variation from the intact model's distribution"},
    // §4's positions
    {"exact_five_digit", Length::one, Range::percent, "exact match on five-digit numbers"},
    {"train_max_digits", Length::one, Range::length, "the most digits training drew"},
    {"train_max_syllables", Length::one, Range::length, "the longest source training drew"},
    {"src_pos_row_change", Length::learned_rows, Range::nonnegative,
     "how far each row of the learned source table moved in training"},
    {"tgt_pos_row_change", Length::learned_rows, Range::nonnegative,
     "how far each row of the learned target table moved in training"},
    {"exact_long_source", Length::one, Range::percent,
     "exact match on sources of 8 or 9 syllables"},
    {"test_min_syllables", Length::one, Range::length, "the shortest source of that test"},
    // §3's neighbour task
    {"digit_accuracy", Length::one, Range::percent, "test digits right, %"},
    {"validation_steps", Length::evaluations, Range::step, "the steps validation was scored at"},
    {"validation_accuracy_curve", Length::evaluations, Range::percent,
     "validation digits right at those steps, %"},
    {"steps_to_99", Length::one, Range::or_never,
     "the first of those steps with 99% or more; inf: none"},
    {"head_left_weight", Length::model_heads, Range::weight,
     "each head's mean weight on the left neighbour, on validation"},
    {"head_right_weight", Length::model_heads, Range::weight,
     "each head's mean weight on the right neighbour, on validation"},
    {"max_head_left_weight", Length::one, Range::weight, "the largest of head_left_weight"},
    {"max_head_right_weight", Length::one, Range::weight, "the largest of head_right_weight"},
    // §5's warm-up
    {"peak_lr", Length::one, Range::positive, "the schedule's peak learning rate"},
    // the opening: the clock to LEVEL_PERCENT on validation, and the LSTM's size
    {"steps_to_level", Length::one, Range::or_never,
     "the first step validation was scored at and reached LEVEL_PERCENT exact; inf: never"},
    {"seconds_to_level", Length::one, Range::or_never,
     "the training's wall time to that step; inf: never"},
    {"parameters", Length::one, Range::positive, "the model's parameter count"},
    // every record: run_settings
    {"seed", Length::one, Range::declared, "the run's seed"},
    {"steps", Length::one, Range::declared, "the training steps at its --scale"},
    {"warmup", Length::one, Range::declared, "the warm-up steps at its --scale"},
    {"layers", Length::one, Range::declared, "encoder blocks (= decoder blocks)"},
    {"d_model", Length::one, Range::declared, "the model's width"},
    {"heads", Length::one, Range::declared, "heads per attention"},
    {"pre_ln", Length::one, Range::declared, "1: Pre-LN, 0: Post-LN"},
    {"learned_positions", Length::one, Range::declared,
     "1: a learned table, 0: sinusoids or none (no_positions)"},
    {"no_positions", Length::one, Range::declared, "1: no position vectors at all"},
    {"scaled", Length::one, Range::declared, "1: scores divided by sqrt(d_k), 0: not"},
    {"warm", Length::one, Range::declared, "1: the paper's warm-up, 0: the peak from step 1"},
    {"lr", Length::one, Range::declared, "the factor on the paper's learning-rate schedule"},
    {"residual", Length::one, Range::declared, "1: residual connections, 0: removed"},
};

const KeySpec& key_spec(const std::string& name) {
    for (const KeySpec& k : KEYS)
        if (name == k.name) return k;
    throw std::invalid_argument("no record key \"" + name + "\" in chapter 8's table");
}

namespace {
std::string shown(double v) {  // a value as a problem message quotes it
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}
}  // namespace

std::vector<std::pair<std::string, double>> run_settings(const RunSpec& r, double scale,
                                                         int seed) {
    return {{"seed", seed + r.seed_offset},
            {"steps", scaled_steps(r.steps, scale)},
            {"warmup", scaled_steps(r.warmup, scale)},
            {"layers", r.model.layers},
            {"d_model", r.model.d_model},
            {"heads", r.model.heads},
            {"pre_ln", r.model.placement == LnPlacement::PreLN},
            {"learned_positions", r.model.positions == translate::Positions::learned},
            {"no_positions", r.model.positions == translate::Positions::none},
            {"scaled", r.variant != unscaled},
            {"warm", r.variant != no_warmup},
            {"lr", r.lr},
            {"residual", r.variant != no_residuals}};
}

std::string record_problem(const RunSpec& r, double scale, int seed, const Record& rec) {
    std::set<std::string> declared(r.keys.begin(), r.keys.end()), carried;
    std::map<std::string, double> settings;
    for (const auto& [key, value] : run_settings(r, scale, seed)) {
        declared.insert(key);
        settings[key] = value;
    }
    for (const auto& item : rec.items)
        carried.insert(item.first);
    for (const std::string& k : declared)
        if (!carried.count(k)) return "no " + k;
    for (const std::string& k : carried)
        if (!declared.count(k)) return "a key " + k + " that " + r.name + " does not write";
    const int steps = scaled_steps(r.steps, scale);
    const double diverged = rec.value("diverged_at");
    const int heads = 3 * r.model.layers * r.model.heads;  // head_count of its model
    auto integral_in = [](double v, double lo, double hi) {
        return v == std::floor(v) && v >= lo && v <= hi;  // false for NaN
    };
    if (!integral_in(diverged, 0, steps))
        return "diverged_at " + shown(diverged) + " is not a step of " + std::to_string(steps);
    for (const auto& [key, values] : rec.items) {
        const KeySpec& spec = key_spec(key);
        size_t n = 1;
        switch (spec.length) {
            case Length::one: n = 1; break;
            case Length::steps: n = size_t(diverged > 0 ? diverged : steps); break;
            case Length::model_heads: n = size_t(r.model.heads); break;
            case Length::all_heads: n = size_t(heads); break;
            case Length::kinds: n = 3; break;
            case Length::first_steps: n = 4; break;
            case Length::evaluations:
                n = size_t(steps / NB_EVAL_EVERY + (steps % NB_EVAL_EVERY != 0));
                break;
            case Length::learned_rows: n = size_t(translate::LEARNED_POSITIONS); break;
        }
        if (values.size() != n)
            return key + " has " + std::to_string(values.size()) + " values, not " +
                   std::to_string(n);
        std::set<double> seen;
        for (double v : values) {
            bool ok = true;
            switch (spec.range) {
                case Range::percent: ok = v >= 0 && v <= 100; break;
                // float sums of weights may pass 1 by a few units in the last place
                case Range::weight: ok = v >= 0 && v <= 1 + 1e-5; break;
                case Range::step: ok = integral_in(v, 0, steps); break;
                case Range::head_order: ok = integral_in(v, 0, heads - 1) && seen.insert(v).second;
                    break;
                case Range::head_number: ok = integral_in(v, 0, heads); break;
                case Range::length: ok = integral_in(v, 1, 100); break;
                case Range::nonnegative: ok = std::isfinite(v) && v >= 0; break;
                case Range::or_never: ok = v >= 0; break;  // +inf passes, NaN fails
                case Range::positive: ok = std::isfinite(v) && v > 0; break;
                case Range::loss: ok = true; break;
                case Range::declared: ok = v == settings.at(key); break;
            }
            if (!ok) return key + " holds " + shown(v) + ", which it cannot (" +
                            spec.meaning + ")";
        }
    }
    return "";
}

}  // namespace ablations
