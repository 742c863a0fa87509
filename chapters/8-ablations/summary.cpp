// Chapter 8's comparisons and summary (see summary.h).
#include "chapters/8-ablations/summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <stdexcept>

namespace ablations {

std::string run_name(const std::string& job_name) { return job_name.substr(0, job_name.find('/')); }

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

std::pair<double, double> self_weight_range(const Records& r) {
    const std::vector<double> lo = values_of(r, "base:self_weight_min"),
                              hi = values_of(r, "base:self_weight_max");
    if (lo.empty()) throw std::runtime_error("no base run for the first-step weights");
    return {*std::min_element(lo.begin(), lo.end()), *std::max_element(hi.begin(), hi.end())};
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

const char* const SUMMARY_HEADER =
    "claim\tsection\tmetric\tbaseline\tvariant\tdiff\tci_low\tci_high\tseeds\tthreshold\tverdict"
    "\tvalid\ttest\tfamily\tp\tp_adj";

namespace {
std::string number(double v) {
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char b[32];
    std::snprintf(b, sizeof b, "%.2f", v);
    return std::string(b) == "-0.00" ? "0.00" : b;
}
std::string probability(double p) {
    if (std::isnan(p)) return "-";
    char b[32];
    std::snprintf(b, sizeof b, "%.4f", p);
    return b;
}
// The baseline column: "-" for none, "0.5*run:key" where the variant meets half of it.
std::string baseline_text(const ComparisonSpec& s) {
    if (s.weight == 0) return "-";
    if (s.weight == 1) return s.baseline;
    char b[32];
    std::snprintf(b, sizeof b, "%g*", s.weight);
    return b + std::string(s.baseline);
}
}  // namespace

std::string summary_tsv(const std::vector<Comparison>& all) {
    std::string out = std::string(SUMMARY_HEADER) + "\n";
    for (const Comparison& c : all) {
        const ComparisonSpec& s = *c.spec;
        const bool adjusted = s.family == Family::primary;
        for (const std::string& field :
             {std::string(s.claim), std::string(s.section), std::string(s.metric),
              baseline_text(s), std::string(s.variant),
              number(c.ci.mean), number(c.ci.low), number(c.ci.high),
              std::to_string(c.diff.size()), rule_text(s.rule), std::string(verdict_id(c.verdict)),
              std::to_string(c.valid_count), test_id(s), std::string(family_id(s.family)),
              probability(c.p), probability(adjusted ? c.p_adj : NAN)})
            out += field + "\t";
        out.back() = '\n';
    }
    return out;
}

const char* const SEEDS_HEADER = "claim\trun\tmetric\tseed\tvalue";

std::string seeds_tsv(const Records& r, const std::vector<Comparison>& all) {
    std::string out = std::string(SEEDS_HEADER) + "\n";
    std::set<std::string> done;  // claim + run:key, each once
    for (const Comparison& c : all)
        for (const char* run_key : {c.spec->baseline, c.spec->variant}) {
            const std::string rk = run_key;
            if (rk.empty() || !done.insert(std::string(c.spec->claim) + "\t" + rk).second)
                continue;
            const std::string run = rk.substr(0, rk.find(':')), key = rk.substr(rk.find(':') + 1);
            for (const Record* rec : r.at(run)) {
                char value[40];
                std::snprintf(value, sizeof value, "%.10g", rec->value(key));
                out += std::string(c.spec->claim) + "\t" + run + "\t" + key + "\t" +
                       std::to_string(int(rec->value("seed"))) + "\t" + value + "\n";
            }
        }
    return out;
}

std::string seeds_path(const std::string& summary) {
    const size_t slash = summary.rfind('/'), dot = summary.rfind('.');
    const bool has_ext = dot != std::string::npos && (slash == std::string::npos || dot > slash);
    return (has_ext ? summary.substr(0, dot) : summary) + "-seeds" +
           (has_ext ? summary.substr(dot) : ".tsv");
}

}  // namespace ablations
