// Chapter 8's printed report: for each claim (CLAIMS, table.h) its table over the seeds,
// drawn from the runs' records, then each of its comparisons: the paired differences (a seed
// whose baseline missed its floor marked), the test's estimate, interval and p, and the verdict
// with why it is undecided where it is.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "chapters/8-ablations/stats.h"

namespace ablations {

// Each claim's report (the table's CLAIMS name them): its table over the seeds, then its
// comparisons.
void report_opening(const Records& r, const std::vector<Comparison>& cmp, double scale);
void report_scaling(const Records& r, const std::vector<Comparison>& cmp, double scale);
void report_heads(const Records& r, const std::vector<Comparison>& cmp, double scale);
void report_pruning(const Records& r, const std::vector<Comparison>& cmp, double scale);
void report_positions(const Records& r, const std::vector<Comparison>& cmp, double scale);
void report_order(const Records& r, const std::vector<Comparison>& cmp, double scale);
void report_warmup(const Records& r, const std::vector<Comparison>& cmp, double scale);
void report_residual(const Records& r, const std::vector<Comparison>& cmp, double scale);
void report_first_step(const Records& r, const std::vector<Comparison>& cmp, double scale);

// The comparisons of one claim, as its report ends: the per-seed differences, the test and
// the verdict (also the whole report of a claim that --runs left incomplete).
void report_comparisons(const std::vector<Comparison>& all, const std::string& claim);

// The smallest and the largest first-step self-attention weight over every seed's base run
// (its records' self_weight_min and self_weight_max).
std::pair<double, double> self_weight_range(const Records& r);

}  // namespace ablations
