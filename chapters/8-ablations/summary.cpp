// Chapter 8's comparisons and summary (see summary.h).
#include "chapters/8-ablations/summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
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

Comparison compare(const ComparisonSpec& spec, std::vector<double> baseline,
                   std::vector<double> variant) {
    if (baseline.size() != variant.size())
        throw std::invalid_argument(std::string("compare: ") + spec.variant + " and " +
                                    spec.baseline + " have different numbers of seeds");
    Comparison c{&spec, std::move(baseline), std::move(variant), {}, {}, Verdict::undecided};
    for (size_t i = 0; i < c.baseline.size(); i++)
        c.diff.push_back(c.variant[i] - c.baseline[i]);
    c.ci = t_interval(c.diff);
    c.verdict = judge(c.ci, spec.rule);
    return c;
}

Comparison compare(const Records& r, const ComparisonSpec& spec) {
    return compare(spec, values_of(r, spec.baseline), values_of(r, spec.variant));
}

const char* const SUMMARY_HEADER =
    "claim\tsection\tmetric\tbaseline\tvariant\tdiff\tci_low\tci_high\tseeds\tthreshold\tverdict";

namespace {
std::string number(double v) {
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char b[32];
    std::snprintf(b, sizeof b, "%.2f", v);
    return std::string(b) == "-0.00" ? "0.00" : b;
}
}  // namespace

std::string summary_tsv(const std::vector<Comparison>& all) {
    std::string out = std::string(SUMMARY_HEADER) + "\n";
    for (const Comparison& c : all) {
        const ComparisonSpec& s = *c.spec;
        for (const std::string& field :
             {std::string(s.claim), std::string(s.section), std::string(s.metric),
              std::string(s.baseline), std::string(s.variant), number(c.ci.mean),
              number(c.ci.low), number(c.ci.high), std::to_string(c.ci.n), rule_text(s.rule),
              std::string(verdict_id(c.verdict))})
            out += field + "\t";
        out.back() = '\n';
    }
    return out;
}

}  // namespace ablations
