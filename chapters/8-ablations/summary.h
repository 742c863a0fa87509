// Chapter 8's comparisons as numbers: each ComparisonSpec (experiments.h) read from the runs'
// records, seed by seed, its test and verdict (stats.h), and the machine-readable summary
// (--summary FILE): a header line, then one line per comparison, tab-separated,
//   claim section metric baseline variant diff ci_low ci_high seeds threshold verdict valid
//   test family p p_adj
// baseline: run:key, "0.5*run:key" where the variant is set against half of it, "-" for none.
// diff: graded, the mean over the valid seeds of variant - weight * baseline (percentage
// points), ci its 95% interval; binomial, the share of the valid seeds on the claim's side
// and its exact interval; fisher, the variant's share of seeds reaching the level minus the
// baseline's and Newcombe's interval (points of seeds). threshold as rule_text() writes it
// ("<-20", ">-1", "±2"); verdict: reproduced, not_reproduced, undecided or
// holds_by_construction; valid: the seeds whose baseline reached its floor; test and family as
// test_id and family_id write them; p the test's, p_adj Holm's over the primary comparisons
// ("-" where there is none: an identity, an exploratory comparison's p_adj, too few seeds).
// With --summary, the seeds' values go to <summary>-seeds.tsv beside it (seeds_tsv).
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "chapters/8-ablations/experiments.h"
#include "chapters/8-ablations/machinery/runner.h"
#include "chapters/8-ablations/stats.h"

namespace ablations {

using Records = std::map<std::string, std::vector<const Record*>>;  // run name -> one per seed

std::string run_name(const std::string& job_name);  // "base/3" -> "base"
// "run:key": the record's scalar `key` of every seed's run, in seed order; throws naming a miss.
std::vector<double> values_of(const Records& r, const std::string& run_key);

// The smallest and the largest first-step self-attention weight over every seed's base run
// (its records' self_weight_min and self_weight_max).
std::pair<double, double> self_weight_range(const Records& r);

struct Comparison {
    const ComparisonSpec* spec;
    std::vector<double> baseline, variant, diff;  // per seed; diff = variant - weight * baseline
    std::vector<bool> valid;                      // per seed: the baseline reached its floor
    int valid_count = 0;
    Interval ci;     // the estimate (ci.mean) and its interval, by the test (summary.h's top)
    int successes_baseline = 0, successes_variant = 0;  // fisher; binomial: the variant's k
    double p = NAN, p_adj = NAN;  // NAN: none
    Verdict verdict = Verdict::undecided;
    bool too_few = false;  // fewer than MIN_VALID_SEEDS valid seeds
};
// A comparison alone: its test, and its verdict as an exploratory one (p_adj = p). baseline
// is ignored (zeros) where the spec has none.
Comparison compare(const ComparisonSpec& spec, std::vector<double> baseline,
                   std::vector<double> variant);
Comparison compare(const Records& r, const ComparisonSpec& spec);
// The family: Holm over the primary comparisons of `all` at 5% family-wise, `family_size` the
// primaries declared (the ones not run count as p = 1; 0: those of COMPARISONS), each
// primary's p_adj and verdict set from it.
void judge_family(std::vector<Comparison>& all, size_t family_size = 0);

extern const char* const SUMMARY_HEADER;  // the TSV's first line, without its newline
std::string summary_tsv(const std::vector<Comparison>& all);

// Every seed's value of every run:key the comparisons read: a header line
// "claim run metric seed value", then one line per claim, run:key and seed (tab-separated).
extern const char* const SEEDS_HEADER;
std::string seeds_tsv(const Records& r, const std::vector<Comparison>& all);
// The per-seed file beside a summary: "x/8-ablations.tsv" -> "x/8-ablations-seeds.tsv".
std::string seeds_path(const std::string& summary);

}  // namespace ablations
