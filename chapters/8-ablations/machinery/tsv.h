// Chapter 8's TSV files. The summary (--summary FILE): a header line, then one line per
// comparison, tab-separated,
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
#include <string>
#include <vector>

#include "chapters/8-ablations/stats.h"

namespace ablations {

extern const char* const SUMMARY_HEADER;  // the TSV's first line, without its newline
std::string summary_tsv(const std::vector<Comparison>& all);

// Every seed's value of every run:key the comparisons read: a header line
// "claim run metric seed value", then one line per claim, run:key and seed (tab-separated).
extern const char* const SEEDS_HEADER;
std::string seeds_tsv(const Records& r, const std::vector<Comparison>& all);
// The per-seed file beside a summary: "x/8-ablations.tsv" -> "x/8-ablations-seeds.tsv".
std::string seeds_path(const std::string& summary);

}  // namespace ablations
