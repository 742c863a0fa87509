// Chapter 8's figures, one per claim, drawn from the runs' records (figures.cpp).
#pragma once
#include <map>
#include <string>

#include "chapters/8-ablations/runner.h"

namespace ablations {

using Records = std::map<std::string, const Record*>;  // run name -> its record

void draw_scaling(const Records& r, const std::string& path);
void draw_heads(const Records& r, const std::string& path);
void draw_pruning(const Records& r, const std::string& path);
void draw_positions(const Records& r, const std::string& path);
void draw_warmup(const Records& r, const std::string& path);
void draw_first_step(const Records& r, const std::string& path);

}  // namespace ablations
