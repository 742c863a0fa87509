// Chapter 8's statistics: a trained result is a distribution over seeds, and a verdict comes
// from the mean paired difference and its 95% interval, never from one run.
//
//   Interval ci = t_interval({-31.2, -28.0, -35.5});  // per seed: variant - baseline
//   Verdict v = judge(ci, Rule{Side::below, -20});     // reproduced: wholly below -20
#pragma once
#include <string>
#include <vector>

namespace ablations {

// The two-sided 95% quantile of Student's t with `df` degrees of freedom (1..30): t_{0.975}.
double t_975(int df);

// The mean of `x` and its 95% Student's t interval, mean ± t_{0.975, n-1} · s / sqrt(n) (s: the
// sample standard deviation). With fewer than two values there is no interval: low = -inf,
// high = +inf (every verdict is then undecided).
struct Interval {
    double mean = 0, low = 0, high = 0;
    int n = 0;
    double half_width() const { return (high - low) / 2; }
};
Interval t_interval(const std::vector<double>& x);

// Where a claim puts the difference: below the threshold, above it, or within ±threshold.
enum class Side { below, above, within };
struct Rule {
    Side side;
    double threshold;  // for Side::within, the half-width of the band (> 0)
};
std::string rule_text(const Rule& r);  // "<-20", ">-1", "±2": the TSV's threshold column

// reproduced: the interval lies wholly on the claim's side of the threshold; not reproduced:
// wholly on the other side; undecided: it straddles (or touches) the threshold. For within:
// reproduced if the interval lies inside (-t, t), not reproduced if it lies wholly outside it.
enum class Verdict { reproduced, not_reproduced, undecided };
Verdict judge(const Interval& ci, const Rule& rule);
const char* verdict_id(Verdict v);      // reproduced, not_reproduced, undecided (the TSV)
const char* verdict_korean(Verdict v);  // 재현됨, 이 규모에서는 재현되지 않음, 판단 보류

}  // namespace ablations
