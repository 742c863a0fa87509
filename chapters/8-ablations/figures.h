// Chapter 8's figures, one per claim, drawn from the runs' records (figures.cpp): every seed's
// value as a point, beside the mean and its 95% interval; the right panel shows each
// comparison's paired differences against its threshold.
#pragma once
#include <string>
#include <vector>

#include "chapters/8-ablations/summary.h"

namespace ablations {

void draw_scaling(const Records& r, const std::vector<Comparison>& c, const std::string& path);
void draw_heads(const Records& r, const std::vector<Comparison>& c, const std::string& path);
void draw_pruning(const Records& r, const std::vector<Comparison>& c, const std::string& path);
void draw_positions(const Records& r, const std::vector<Comparison>& c, const std::string& path);
void draw_warmup(const Records& r, const std::vector<Comparison>& c, const std::string& path);
void draw_first_step(const Records& r, const std::vector<Comparison>& c,
                     const std::string& path);

}  // namespace ablations
