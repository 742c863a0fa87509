// Chapter 8's statistics: a trained result is a distribution over seeds, and a verdict comes
// from an exact test over the seeds, never from one run. First the tests; then each comparison
// of the table (COMPARISONS) read from the runs' records, seed by seed, with its test and
// verdict, and Holm's correction over the primary ones.
//
//   double p = sign_flip_p({-31.2, -28.0, -35.5}, -20);  // differences against a threshold
//   double f = fisher_p(4, 4, 0, 4);                      // 4 of 4 seeds against 0 of 4
//   std::vector<double> adj = holm({0.01, 0.04, 0.03});   // family-wise adjusted
#pragma once
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "chapters/8-ablations/table.h"

namespace ablations {

// The two-sided 95% quantile of Student's t with `df` degrees of freedom (1..30): t_{0.975}.
double t_975(int df);

// The mean of `x` and its 95% Student's t interval, mean ± t_{0.975, n-1} · s / sqrt(n) (s: the
// sample standard deviation, or `min_sd` where that is larger). With fewer than two values
// there is no interval: low = -inf, high = +inf.
struct Interval {
    double mean = 0, low = 0, high = 0;
    int n = 0;
    double half_width() const { return (high - low) / 2; }
};
Interval t_interval(const std::vector<double>& x, double min_sd = 0);
// The interval with its ends moved inside [lo, hi] (the range the quantity can take).
Interval clipped(Interval ci, double lo, double hi);

// The standard deviation, in percentage points, of a percentage measured on `items` items
// whose true share is near `percent`: the binomial sqrt(p (1 - p) / items), with p taken as
// (x + 2) / (items + 4) (Agresti-Coull) so that 0% and 100% still have a spread. A floor under
// the seeds' spread: equal seeds do not make a difference certain.
double binomial_sd(double percent, int items);

// The exact paired sign-flip (permutation) test of "the differences are symmetric about
// `center`": over all 2^n sign patterns s, the share with |sum s_i (x_i - center)| at least
// the observed |sum (x_i - center)|; two-sided. n <= 40 (split in two halves, counted by
// sorting). Five values all above the center: 2/32. No values: 1.
double sign_flip_p(const std::vector<double>& x, double center);

// The exact two-sided binomial test of `k` successes in `n` trials against a probability of
// 1/2: the summed probability of every count no more likely than k. 0 of 5: 2/32.
double binomial_p(int k, int n);
// The exact (Clopper-Pearson) 95% interval of a success probability, k of n: {low, high}.
std::pair<double, double> binomial_interval(int k, int n);

// Fisher's exact test, two-sided: a of n1 against b of n2 successes, the summed hypergeometric
// probability of every table with the same margins no more likely than the observed one.
double fisher_p(int a, int n1, int b, int n2);
// Newcombe's 95% interval (from two Wilson intervals) of b/n2 - a/n1: {low, high} in [-1, 1].
std::pair<double, double> newcombe_interval(int a, int n1, int b, int n2);

// Holm-Bonferroni adjusted p values, in the order of `p`: sorted ascending, the i-th (from 0)
// is multiplied by m - i, made non-decreasing, capped at 1. `m` is the family's size (at least
// p.size()); the members not in `p` count as p = 1, which is what a missing test can show.
std::vector<double> holm(const std::vector<double>& p, size_t m = 0);

// reproduced: the test rejects at 5% (after Holm's adjustment where the comparison is a
// primary one) with the estimate on the claim's side; not reproduced: it rejects with the
// estimate on the other side; undecided: it does not reject, or too few seeds are valid.
// by_construction: an identity the model's structure makes true, printed, never tested.
enum class Verdict { reproduced, not_reproduced, undecided, by_construction };
constexpr double ALPHA = 0.05;
const char* verdict_id(Verdict v);      // reproduced, not_reproduced, undecided,
                                        // holds_by_construction (the TSV)
const char* verdict_korean(Verdict v);  // 재현됨, 이 규모에서는 재현되지 않음, 판단 보류,
                                        // 구성상 성립 (판정 아님)

// ---- each comparison, from the runs' records ----------------------------------------------

// "run:key": the record's scalar `key` of every seed's run, in seed order; throws naming a miss.
std::vector<double> values_of(const Records& r, const std::string& run_key);

struct Comparison {
    const ComparisonSpec* spec;
    std::vector<double> baseline, variant, diff;  // per seed; diff = variant - weight * baseline
    std::vector<bool> valid;                      // per seed: the baseline reached its floor
    int valid_count = 0;
    Interval ci;     // the estimate (ci.mean) and its interval, by the test (machinery/tsv.h)
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

}  // namespace ablations
