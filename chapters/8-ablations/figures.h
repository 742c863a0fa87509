// Chapter 8's figures, one per claim, drawn from the runs' records (figures.cpp): every seed's
// value as a point, beside the mean and its 95% interval; the right panel shows each
// comparison's paired differences against its threshold.
#pragma once
#include <string>
#include <vector>

#include "chapters/8-ablations/stats.h"

namespace ablations {

// Each claim's figure (the table's CLAIMS name them).
void draw_opening(const Records& r, const std::vector<Comparison>& c, const std::string& path);
void draw_scaling(const Records& r, const std::vector<Comparison>& c, const std::string& path);
void draw_heads(const Records& r, const std::vector<Comparison>& c, const std::string& path);
void draw_pruning(const Records& r, const std::vector<Comparison>& c, const std::string& path);
void draw_positions(const Records& r, const std::vector<Comparison>& c, const std::string& path);
void draw_order(const Records& r, const std::vector<Comparison>& c, const std::string& path);
void draw_warmup(const Records& r, const std::vector<Comparison>& c, const std::string& path);
void draw_residual(const Records& r, const std::vector<Comparison>& c, const std::string& path);
void draw_first_step(const Records& r, const std::vector<Comparison>& c,
                     const std::string& path);

// The comparisons' panel's column names for `claim`: each comparison's own label, in the order
// of `all`, for those in percentage points (the others are drawn beside their values).
std::vector<std::string> comparison_labels(const std::vector<Comparison>& all,
                                           const std::string& claim);

}  // namespace ablations
