// Chapter 8's TSV files (see tsv.h).
#include "chapters/8-ablations/machinery/tsv.h"

#include <cmath>
#include <cstdio>
#include <set>

namespace ablations {

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
