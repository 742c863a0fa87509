// Chapter 8's comparisons as numbers: each ComparisonSpec (experiments.h) read from the runs'
// records, seed by seed, its interval and verdict (stats.h), and the machine-readable summary
// (--summary FILE): a header line, then one line per comparison, tab-separated,
//   claim section metric baseline variant diff ci_low ci_high seeds threshold verdict
// diff = variant - baseline (the mean over the seeds of the paired differences), in the
// metric's unit (percentage points); threshold as rule_text() writes it ("<-20", ">-1", "±2");
// verdict: reproduced, not_reproduced or undecided.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "chapters/8-ablations/experiments.h"
#include "chapters/8-ablations/runner.h"
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
    std::vector<double> baseline, variant, diff;  // per seed; diff = variant - baseline
    Interval ci;                                  // of diff
    Verdict verdict;
};
Comparison compare(const ComparisonSpec& spec, std::vector<double> baseline,
                   std::vector<double> variant);
Comparison compare(const Records& r, const ComparisonSpec& spec);

extern const char* const SUMMARY_HEADER;  // the TSV's first line, without its newline
std::string summary_tsv(const std::vector<Comparison>& all);

}  // namespace ablations
