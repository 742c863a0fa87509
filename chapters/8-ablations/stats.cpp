// Chapter 8's statistics (see stats.h): the tests, then each comparison read from the records.
#include "chapters/8-ablations/stats.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace ablations {

double t_975(int df) {
    // Student's t, the 0.975 quantile, to three decimals (any statistics table; scipy.stats.t).
    static const double table[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                   2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                                   2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                                   2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
    if (df < 1 || df > 30)
        throw std::invalid_argument("t_975: " + std::to_string(df) + " degrees of freedom (1..30)");
    return table[df - 1];
}

Interval t_interval(const std::vector<double>& x, double min_sd) {
    Interval ci;
    ci.n = int(x.size());
    if (x.empty()) return {NAN, -INFINITY, INFINITY, 0};
    double sum = 0;
    for (double v : x)
        sum += v;
    ci.mean = sum / double(x.size());
    if (x.size() < 2) {
        ci.low = -std::numeric_limits<double>::infinity();
        ci.high = std::numeric_limits<double>::infinity();
        return ci;
    }
    double ss = 0;
    for (double v : x)
        ss += (v - ci.mean) * (v - ci.mean);
    // the sample standard deviation, never below the floor the caller knows of
    const double s = std::max(std::sqrt(ss / double(x.size() - 1)), min_sd);
    const double half = t_975(ci.n - 1) * s / std::sqrt(double(x.size()));
    ci.low = ci.mean - half;
    ci.high = ci.mean + half;
    return ci;
}

Interval clipped(Interval ci, double lo, double hi) {
    ci.low = std::clamp(ci.low, lo, hi);
    ci.high = std::clamp(ci.high, lo, hi);
    return ci;
}

double binomial_sd(double percent, int items) {
    const double x = percent / 100.0 * items, p = (x + 2) / (items + 4.0);
    return 100.0 * std::sqrt(p * (1 - p) / items);
}

double sign_flip_p(const std::vector<double>& x, double center) {
    const size_t n = x.size();
    if (n > 40) throw std::invalid_argument("sign_flip_p: more than 40 values");
    std::vector<double> y;
    double total = 0, size = 0;
    for (double v : x) {
        y.push_back(v - center);
        total += v - center;
        size += std::fabs(v - center);
    }
    // Sums that differ by float rounding alone count as equal.
    const double eps = 1e-9 * (1 + size), t = std::fabs(total);
    if (t - eps <= 0) return 1.0;  // every pattern's |sum| reaches 0
    auto sums = [&](size_t from, size_t to) {  // every signed sum of y[from..to)
        std::vector<double> s = {0.0};
        for (size_t i = from; i < to; i++) {
            const size_t k = s.size();
            for (size_t j = 0; j < k; j++) {
                s.push_back(s[j] - y[i]);
                s[j] += y[i];
            }
        }
        return s;
    };
    const std::vector<double> a = sums(0, n / 2);
    std::vector<double> b = sums(n / 2, n);
    std::sort(b.begin(), b.end());
    // The patterns whose |a + b| < t: b strictly inside (-t - a, t - a).
    double inside = 0;
    for (double s : a) {
        const auto from = std::upper_bound(b.begin(), b.end(), -t - s + eps);
        const auto to = std::lower_bound(b.begin(), b.end(), t - s - eps);
        if (to > from) inside += double(to - from);
    }
    return 1.0 - inside / (double(a.size()) * double(b.size()));
}

namespace {

double log_choose(int n, int k) {
    return std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0);
}

// The summed probability of the outcomes no more likely than the observed one (a relative
// tolerance keeps ties that float rounding would split).
double as_or_less_likely(const std::vector<double>& log_p, size_t observed) {
    const double bound = log_p[observed] + 1e-7;
    double p = 0;
    for (double lp : log_p)
        if (lp <= bound) p += std::exp(lp);
    return std::min(1.0, p);
}

// P(X <= k) for X ~ Binomial(n, q).
double binomial_cdf(int k, int n, double q) {
    if (q <= 0) return 1.0;
    if (q >= 1) return k >= n ? 1.0 : 0.0;
    double p = 0;
    for (int j = 0; j <= k; j++)
        p += std::exp(log_choose(n, j) + j * std::log(q) + (n - j) * std::log1p(-q));
    return std::min(1.0, p);
}

// The q in [0, 1] where the decreasing f(q) crosses `target`, by bisection.
template <class F>
double crossing(F f, double target) {
    double lo = 0, hi = 1;
    for (int i = 0; i < 200; i++) {
        const double mid = (lo + hi) / 2;
        (f(mid) > target ? lo : hi) = mid;
    }
    return (lo + hi) / 2;
}

std::pair<double, double> wilson(int k, int n) {
    const double z = 1.959963984540054, p = double(k) / n, z2n = z * z / n;
    const double centre = (p + z2n / 2) / (1 + z2n);
    const double half = z * std::sqrt(p * (1 - p) / n + z2n / (4.0 * n)) / (1 + z2n);
    return {std::max(0.0, centre - half), std::min(1.0, centre + half)};
}

}  // namespace

double binomial_p(int k, int n) {
    if (n <= 0) return 1.0;
    if (k < 0 || k > n) throw std::invalid_argument("binomial_p: k outside 0..n");
    std::vector<double> log_p;
    for (int j = 0; j <= n; j++)
        log_p.push_back(log_choose(n, j) - n * std::log(2.0));
    return as_or_less_likely(log_p, size_t(k));
}

std::pair<double, double> binomial_interval(int k, int n) {
    if (n <= 0) return {0.0, 1.0};
    // low: P(X >= k | q) = 0.025, a rising function of q; high: P(X <= k | q) = 0.025.
    const double low =
        k == 0 ? 0.0 : crossing([&](double q) { return binomial_cdf(k - 1, n, q); }, 0.975);
    const double high =
        k == n ? 1.0 : crossing([&](double q) { return binomial_cdf(k, n, q); }, 0.025);
    return {low, high};
}

double fisher_p(int a, int n1, int b, int n2) {
    if (a < 0 || b < 0 || a > n1 || b > n2) throw std::invalid_argument("fisher_p: bad table");
    const int n = n1 + n2, k = a + b;  // the margins: n1 and n2 seeds, k successes in all
    const int from = std::max(0, k - n2), to = std::min(k, n1);
    std::vector<double> log_p;
    for (int x = from; x <= to; x++)
        log_p.push_back(log_choose(k, x) + log_choose(n - k, n1 - x) - log_choose(n, n1));
    return as_or_less_likely(log_p, size_t(a - from));
}

std::pair<double, double> newcombe_interval(int a, int n1, int b, int n2) {
    if (n1 <= 0 || n2 <= 0) return {-1.0, 1.0};
    const double p1 = double(a) / n1, p2 = double(b) / n2, d = p2 - p1;
    const auto [l1, u1] = wilson(a, n1);
    const auto [l2, u2] = wilson(b, n2);
    const double low = d - std::sqrt((p2 - l2) * (p2 - l2) + (u1 - p1) * (u1 - p1));
    const double high = d + std::sqrt((u2 - p2) * (u2 - p2) + (p1 - l1) * (p1 - l1));
    return {std::max(-1.0, low), std::min(1.0, high)};
}

std::vector<double> holm(const std::vector<double>& p, size_t m) {
    m = std::max(m, p.size());
    std::vector<size_t> order(p.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(), [&](size_t i, size_t j) { return p[i] < p[j]; });
    std::vector<double> adjusted(p.size());
    double running = 0;
    for (size_t r = 0; r < order.size(); r++) {
        running = std::max(running, std::min(1.0, double(m - r) * p[order[r]]));
        adjusted[order[r]] = running;
    }
    return adjusted;
}

const char* verdict_id(Verdict v) {
    switch (v) {
        case Verdict::reproduced:
            return "reproduced";
        case Verdict::not_reproduced:
            return "not_reproduced";
        case Verdict::undecided:
            return "undecided";
        case Verdict::by_construction:
            return "holds_by_construction";
    }
    return "?";
}

const char* verdict_korean(Verdict v) {
    switch (v) {
        case Verdict::reproduced:
            return "재현됨";
        case Verdict::not_reproduced:
            return "이 규모에서는 재현되지 않음";
        case Verdict::undecided:
            return "판단 보류";
        case Verdict::by_construction:
            return "구성상 성립 (판정 아님)";
    }
    return "?";
}

std::vector<double> values_of(const Records& r, const std::string& run_key) {
    const size_t colon = run_key.find(':');
    const std::string run = run_key.substr(0, colon), key = run_key.substr(colon + 1);
    const auto it = r.find(run);
    if (colon == std::string::npos || it == r.end())
        throw std::runtime_error("no run \"" + run + "\" for " + run_key);
    std::vector<double> v;
    for (const Record* rec : it->second)
        v.push_back(rec->value(key));
    return v;
}

namespace {

double mean(const std::vector<double>& x) {
    double s = 0;
    for (double v : x)
        s += v;
    return x.empty() ? NAN : s / double(x.size());
}

// Whether `d` lies on the claim's side of the rule.
bool on_claim_side(double d, const Rule& r) {
    switch (r.side) {
        case Side::below:
            return d < r.threshold;
        case Side::above:
            return d > r.threshold;
        case Side::within:
            return std::fabs(d) < r.threshold;
    }
    return false;
}

// The graded test's p: two-sided against the threshold; for within, against the band's nearer
// edge when the mean is outside it, and against both edges (the larger p) when inside.
double graded_p(const std::vector<double>& d, const Rule& r) {
    if (r.side != Side::within) return sign_flip_p(d, r.threshold);
    const double m = mean(d), t = r.threshold;
    if (std::fabs(m) < t) return std::max(sign_flip_p(d, t), sign_flip_p(d, -t));
    return sign_flip_p(d, m > 0 ? t : -t);
}

// The verdict from a p and whether the estimate is on the claim's side.
Verdict verdict_of(const Comparison& c, double p, bool claim_side, bool no_side) {
    if (c.spec->family == Family::identity) return Verdict::by_construction;
    if (c.too_few || !(p < ALPHA) || no_side) return Verdict::undecided;
    return claim_side ? Verdict::reproduced : Verdict::not_reproduced;
}

// Whether the estimate is on the claim's side, and whether it has no side (a tie).
std::pair<bool, bool> estimate_side(const Comparison& c) {
    const ComparisonSpec& s = *c.spec;
    switch (s.test) {
        case Test::graded:
            return {on_claim_side(c.ci.mean, s.rule), false};
        case Test::count:
            return {2 * c.successes_variant > c.valid_count,
                    2 * c.successes_variant == c.valid_count};
        case Test::fisher: {
            const int a = c.successes_baseline, b = c.successes_variant;
            return {s.rule.side == Side::below ? b < a : b > a, a == b};
        }
    }
    return {false, true};
}

}  // namespace

Comparison compare(const ComparisonSpec& spec, std::vector<double> baseline,
                   std::vector<double> variant) {
    const bool alone = spec.weight == 0;  // the variant against the threshold, no baseline
    if (alone) baseline.assign(variant.size(), 0.0);
    if (baseline.size() != variant.size())
        throw std::invalid_argument(std::string("compare: ") + spec.variant + " and " +
                                    spec.baseline + " have different numbers of seeds");
    Comparison c;
    c.spec = &spec;
    c.baseline = std::move(baseline);
    c.variant = std::move(variant);
    std::vector<double> d, b, v;  // over the valid seeds
    for (size_t i = 0; i < c.baseline.size(); i++) {
        c.diff.push_back(c.variant[i] - spec.weight * c.baseline[i]);
        // A difference that is no number (inf - inf: neither run reached a level) is no
        // evidence either way.
        c.valid.push_back((alone || c.baseline[i] >= spec.floor) && !std::isnan(c.diff.back()));
        if (!c.valid.back()) continue;
        d.push_back(c.diff.back());
        b.push_back(c.baseline[i]);
        v.push_back(c.variant[i]);
    }
    c.valid_count = int(d.size());
    c.too_few = c.valid_count < MIN_VALID_SEEDS;
    const int n = c.valid_count;
    switch (spec.test) {
        case Test::graded: {
            // Equal seeds do not make a difference certain: the spread of one seed's difference
            // is at least what measuring both percentages on `items` items gives it.
            const double sb = spec.weight * binomial_sd(mean(b), spec.items),
                         sv = binomial_sd(mean(v), spec.items);
            const double lo = -spec.weight * mean(b), hi = 100 - spec.weight * mean(b);
            c.ci = n ? clipped(t_interval(d, std::sqrt(sb * sb + sv * sv)), lo, hi)
                     : t_interval(d);
            if (n) c.p = graded_p(d, spec.rule);
            break;
        }
        case Test::count: {
            for (double x : d)
                c.successes_variant += on_claim_side(x, spec.rule);
            const auto [low, high] = binomial_interval(c.successes_variant, n);
            c.ci = {n ? 100.0 * c.successes_variant / n : NAN, 100 * low, 100 * high, n};
            if (n) c.p = binomial_p(c.successes_variant, n);
            break;
        }
        case Test::fisher: {
            for (size_t i = 0; i < d.size(); i++) {
                c.successes_baseline += b[i] >= spec.level;
                c.successes_variant += v[i] >= spec.level;
            }
            const int a = c.successes_baseline, s = c.successes_variant;
            const auto [low, high] = newcombe_interval(a, n, s, n);
            c.ci = {n ? 100.0 * (s - a) / n : NAN, 100 * low, 100 * high, n};
            if (n) c.p = fisher_p(a, n, s, n);
            break;
        }
    }
    if (spec.family == Family::identity) c.p = NAN;
    c.p_adj = c.p;
    const auto [side, tie] = estimate_side(c);
    c.verdict = verdict_of(c, c.p_adj, side, tie);
    return c;
}

Comparison compare(const Records& r, const ComparisonSpec& spec) {
    std::vector<double> v = values_of(r, spec.variant);
    return compare(spec, spec.weight == 0 ? std::vector<double>{} : values_of(r, spec.baseline),
                   std::move(v));
}

void judge_family(std::vector<Comparison>& all, size_t family_size) {
    if (family_size == 0)
        for (const ComparisonSpec& s : COMPARISONS)
            family_size += s.family == Family::primary;
    std::vector<double> p;
    std::vector<Comparison*> primaries;
    for (Comparison& c : all) {
        if (c.spec->family != Family::primary) continue;
        primaries.push_back(&c);
        p.push_back(c.too_few || std::isnan(c.p) ? 1.0 : c.p);  // no test: it shows nothing
    }
    const std::vector<double> adjusted = holm(p, family_size);
    for (size_t i = 0; i < primaries.size(); i++) {
        Comparison& c = *primaries[i];
        c.p_adj = c.too_few ? NAN : adjusted[i];
        const auto [side, tie] = estimate_side(c);
        c.verdict = verdict_of(c, c.p_adj, side, tie);
    }
}

}  // namespace ablations
