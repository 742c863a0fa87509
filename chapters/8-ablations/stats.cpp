// Chapter 8's statistics (see stats.h).
#include "chapters/8-ablations/stats.h"

#include <cmath>
#include <cstdio>
#include <limits>
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

Interval t_interval(const std::vector<double>& x) {
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
    const double s = std::sqrt(ss / double(x.size() - 1));  // the sample standard deviation
    const double half = t_975(ci.n - 1) * s / std::sqrt(double(x.size()));
    ci.low = ci.mean - half;
    ci.high = ci.mean + half;
    return ci;
}

std::string rule_text(const Rule& r) {
    char b[32];
    std::snprintf(b, sizeof b, "%s%g", r.side == Side::below   ? "<"
                                       : r.side == Side::above ? ">"
                                                               : "±",
                  r.threshold);
    return b;
}

Verdict judge(const Interval& ci, const Rule& r) {
    if (!(ci.n >= 2) || !std::isfinite(ci.low) || !std::isfinite(ci.high))
        return Verdict::undecided;
    const double t = r.threshold;
    switch (r.side) {
        case Side::below:
            return ci.high < t ? Verdict::reproduced
                   : ci.low > t ? Verdict::not_reproduced
                                : Verdict::undecided;
        case Side::above:
            return ci.low > t ? Verdict::reproduced
                   : ci.high < t ? Verdict::not_reproduced
                                 : Verdict::undecided;
        case Side::within:
            return ci.low > -t && ci.high < t        ? Verdict::reproduced
                   : ci.high < -t || ci.low > t ? Verdict::not_reproduced
                                                : Verdict::undecided;
    }
    return Verdict::undecided;
}

const char* verdict_id(Verdict v) {
    switch (v) {
        case Verdict::reproduced:
            return "reproduced";
        case Verdict::not_reproduced:
            return "not_reproduced";
        case Verdict::undecided:
            return "undecided";
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
    }
    return "?";
}

}  // namespace ablations
