// Chapter 8's table: every run, every claim and every comparison, each declared once
// (table.cpp). The jobs, the report, the figures and the --summary TSV are made from it;
// README.md beside this file is the guide to the protocol.
//
// A run (RunSpec) is a recipe (runs.h: what it trains on and what it measures), chapter 7's
// model configuration, a variant (variants.h: what it changes in that model or its training)
// and a budget. Every run is repeated for K seeds; a seed sets both the weights
// (torch.manual_seed(seed)) and the training order (its generator seeded seed + 1), and a
// variant and its baseline share a seed, so each seed gives one paired difference.
//
// The budget is a fixed number of steps of chapter 7's batch of 64 under the paper's schedule,
// so that one seed of all the runs takes minutes on two cores: chapter 7's 2000 steps for its
// model and the variants of its width, fewer where a step costs more (d_k = 256, the 6 + 6
// blocks) or the task is smaller (the positions' numbers, the neighbour task). The warm-up is a
// tenth of the steps (a fifth for the 6 + 6 blocks); a run without warm-up starts at its peak.
// `scale` (--scale) multiplies every run's steps and warm-up, so the tests run the same code in
// seconds; 1 is the stated budget.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "chapters/7-translate/train.h"
#include "chapters/8-ablations/machinery/runner.h"
#include "chapters/8-ablations/variants.h"

namespace ablations {

struct RunSpec;
// What trains a run for one seed and measures what its claims read (runs.h). `tc` is the run's
// budget at its --scale: steps, warm-up, lr, the seed and the progress report.
using Recipe = Record (*)(const RunSpec& r, translate::TrainConfig tc);

// One run, repeated for every seed: the recipe that trains it, its model, what it changes, its
// budget at --scale 1 and the keys of the record it hands back (machinery/records.h checks
// them; the settings it ran with are added to every one).
struct RunSpec {
    const char* name;  // --runs's name; the jobs are name/seed
    Recipe recipe;
    translate::ModelConfig model;  // its seed is the run's; the neighbour task reads layers,
                                   // d_model, heads and placement
    Variant variant = nullptr;     // none: the model and training as chapter 7 has them
    double lr = 1;                 // a factor on the paper's schedule, its peak included
    int seed_offset = 0;           // the run trains with --seed's seeds plus this: a fresh block
    int steps = 0, warmup = 0;        // at --scale 1; both scale
    double cost = 0, fixed_cost = 0;  // rough CPU seconds: fixed_cost + cost * scale
    std::vector<const char*> keys;    // the record's keys, without run_settings'
};
extern const std::vector<RunSpec> RUNS;
const RunSpec& run_spec(const std::string& name);  // throws naming a miss
int scaled_steps(int steps, double scale);            // max(1, round(steps * scale))
int steps_of(const std::string& run, double scale);   // scaled_steps(steps, scale)
int warmup_of(const std::string& run, double scale);  // scaled_steps(warmup, scale)

// One column of a claim's settings panel (its figure's left panel): every seed's run:key.
struct Setting {
    const char* label;    // its name in the legend
    const char* run_key;  // run:key, the key one of the run's keys
};

struct Comparison;                                                  // stats.h
using Records = std::map<std::string, std::vector<const Record*>>;  // run name -> one per seed
// A claim's printed table and verdicts (report.h) and its figure (figures.h), from the runs'
// records and the claim's comparisons; `scale` gives the runs' steps.
using Report = void (*)(const Records& r, const std::vector<Comparison>& cmp, double scale);
using Draw = void (*)(const Records& r, const std::vector<Comparison>& cmp,
                      const std::string& path);

// One claim of the article: --only's name, its figure 8-<name>.png, every run its table and
// figure read, and the functions that print the one and draw the other.
struct ClaimSpec {
    const char* name;  // opening, scaling, heads, pruning, positions, order, warmup,
                       // residual, first-step
    Report report;
    Draw draw;
    std::vector<const char*> runs;
    std::vector<Setting> settings;  // left to right; none for pruning (its panel is a curve)
};
extern const std::vector<ClaimSpec> CLAIMS;
const ClaimSpec& claim_spec(const std::string& name);  // throws naming a miss

// ---- the comparisons, fixed before the runs --------------------------------------------------

// Where a claim puts the difference: below the threshold, above it, or within ±threshold.
enum class Side { below, above, within };
struct Rule {
    Side side;
    double threshold;  // for Side::within, the half-width of the band (> 0)
};
std::string rule_text(const Rule& r);  // "<-20", ">-1", "±2": the TSV's threshold column

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
// points), judged by `rule` (stats.h). A seed whose baseline is below `floor` (its competence
// floor) did not learn: it is reported, counted and left out. Its figure is its claim's,
// 8-<claim>.png, where it is a column of the comparisons' panel, named `label`.
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
// One rule each for every comparison: a floor of chance + 20 points of the baseline's metric
// (none where the baseline's value is itself what the claim is about), the claim's own
// threshold, 50% exact match as the level of the outcomes that succeed or fail per seed.
// README.md beside this file gives each claim's comparisons in words.
extern const std::vector<ComparisonSpec> COMPARISONS;
const char* family_id(Family f);               // primary, exploratory, identity
std::string test_id(const ComparisonSpec& c);  // sign-flip, binomial, fisher>=50, identity
// The fewest seeds whose baseline learned that a comparison is tested on; fewer: undecided.
constexpr int MIN_VALID_SEEDS = 3;

}  // namespace ablations
