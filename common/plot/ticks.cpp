// Tick locators, tick formatters and colormaps: the numeric half of the plotting library,
// written after matplotlib's MaxNLocator, ScalarFormatter and colormap lookup tables.
// Read common/plot/plot.h before it; internal.h declares nice_ticks_impl for the layout.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <stdexcept>

#include "common/plot/internal.h"

namespace plot {

Color hex(const char* rrggbb) {
    if (rrggbb[0] == '#') ++rrggbb;
    unsigned v = 0;
    if (std::sscanf(rrggbb, "%6x", &v) != 1)
        throw std::runtime_error(std::string("plot: bad colour '") + rrggbb +
                                 "' -- use six hex digits like \"#1f77b4\"");
    return {((v >> 16) & 255) / 255.0, ((v >> 8) & 255) / 255.0, (v & 255) / 255.0};
}

// ---- nice ticks (matplotlib's MaxNLocator with steps 1, 2, 2.5, 5, 10) --------------------

namespace {

// Is `ms` within the locator's tolerance of `edge`? (matplotlib's _Edge_integer.closeto)
bool close_to(double ms, double edge, double step, double offset) {
    double tol = 1e-10;
    if (offset > 0) {
        double digits = std::log10(offset / step);
        tol = std::min(0.4999, std::max(1e-10, std::pow(10.0, digits - 12)));
    }
    return std::abs(ms - edge) < tol;
}

// Python's divmod for floats: floor division and a remainder with the divisor's sign.
std::pair<double, double> py_divmod(double x, double y) {
    double m = std::fmod(x, y);
    if (m != 0 && ((y < 0) != (m < 0))) m += y;
    double d = std::round((x - m) / y);
    return {d, m};
}

}  // namespace

std::vector<double> nice_ticks_impl(double vmin, double vmax, int nbins, bool integer) {
    if (!(vmax > vmin)) std::swap(vmin, vmax);
    if (!(vmax > vmin)) return {vmin};
    nbins = std::max(1, nbins);
    // scale_range: the step's order of magnitude, and an offset for ranges far from zero.
    double dv = vmax - vmin, meanv = (vmax + vmin) / 2;
    double offset = 0;
    if (std::abs(meanv) / dv >= 100)
        offset = std::copysign(std::pow(10.0, std::floor(std::log10(std::abs(meanv)))), meanv);
    double scale = std::pow(10.0, std::floor(std::log10(dv / nbins)));
    double lo = vmin - offset, hi = vmax - offset;

    std::vector<double> steps;
    for (double s : {0.1, 0.2, 0.25, 0.5, 1.0, 2.0, 2.5, 5.0, 10.0, 20.0}) {
        double v = s * scale;
        // Integer axes keep only whole steps (and steps below one, bumped to one later).
        if (integer && v >= 1 && std::abs(v - std::round(v)) >= 0.001) continue;
        steps.push_back(v);
    }
    double raw_step = (hi - lo) / nbins;
    size_t istep = 0;
    while (istep + 1 < steps.size() && steps[istep] < raw_step) ++istep;

    std::vector<double> ticks;
    for (size_t k = istep + 1; k-- > 0;) {
        double step = steps[k];
        if (integer && std::floor(hi) - std::ceil(lo) >= 1) step = std::max(1.0, step);
        double best_vmin = std::floor(lo / step) * step;
        auto [dl, ml] = py_divmod(lo - best_vmin, step);
        double low = close_to(ml / step, 1, step, offset) ? dl + 1 : dl;
        auto [dh, mh] = py_divmod(hi - best_vmin, step);
        double high = close_to(mh / step, 0, step, offset) ? dh : dh + 1;
        ticks.clear();
        for (double i = low; i <= high; ++i) ticks.push_back(i * step + best_vmin + offset);
        int inside = 0;
        for (double t : ticks) inside += (t - offset <= hi && t - offset >= lo);
        if (inside >= 2) break;
    }
    for (double& t : ticks) t += 0.0;  // no negative zero
    return ticks;
}

std::vector<double> nice_ticks(double lo, double hi, int nbins) {
    return nice_ticks_impl(lo, hi, nbins, false);
}

// ScalarFormatter: the fewest decimals that still tell every tick apart.
std::vector<std::string> format_ticks(const std::vector<double>& ticks) {
    std::vector<std::string> out;
    if (ticks.empty()) return out;
    double mn = *std::min_element(ticks.begin(), ticks.end());
    double mx = *std::max_element(ticks.begin(), ticks.end());
    double range = mx - mn;
    if (range == 0) range = std::max(std::abs(mn), std::abs(mx));
    if (range == 0) range = 1;
    int oom = (int)std::floor(std::log10(range));
    int sigfigs = std::max(0, 3 - oom);
    double thresh = 1e-3 * std::pow(10.0, oom);
    while (sigfigs >= 0) {
        double p = std::pow(10.0, sigfigs), worst = 0;
        for (double t : ticks) worst = std::max(worst, std::abs(t - std::nearbyint(t * p) / p));
        if (worst < thresh) --sigfigs;
        else break;
    }
    ++sigfigs;
    for (double t : ticks) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.*f", sigfigs, t);
        std::string s = buf;
        // "-0.00" reads as zero.
        if (s[0] == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);
        out.push_back(s);
    }
    return out;
}

std::string format_g(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

// ---- colormaps ----------------------------------------------------------------------------

namespace {

// ColorBrewer anchors (8-bit values, as in matplotlib's _cm.py), spaced evenly over [0, 1].
const char* const RDBU_ANCHORS[] = {"67001f", "b2182b", "d6604d", "f4a582", "fddbc7", "f7f7f7",
                                    "d1e5f0", "92c5de", "4393c3", "2166ac", "053061"};
const char* const BLUES_ANCHORS[] = {"f7fbff", "deebf7", "c6dbef", "9ecae1", "6baed6",
                                     "4292c6", "2171b5", "08519c", "08306b"};
const char* const REDS_ANCHORS[] = {"fff5f0", "fee0d2", "fcbba1", "fc9272", "fb6a4a",
                                    "ef3b2c", "cb181d", "a50f15", "67000d"};
const char* const GREYS_ANCHORS[] = {"ffffff", "f0f0f0", "d9d9d9", "bdbdbd", "969696",
                                     "737373", "525252", "252525", "000000"};

// viridis, matplotlib's 256-entry table as the bytes matplotlib paints (value * 255 truncated),
// eight colours a line.
const char* const viridis_hex =
    "44015444025544035745055845065a45085b46095c460b5e"
    "460c5f460e61470f62471163471265471466471567471669"
    "47186a48196b481a6c481c6e481d6f481e70482071482172"
    "482273482374472575472676472777472878472a79472b7a"
    "472c7b462d7c462f7c46307d46317e45327f45347f453580"
    "453681443781443982433a83433b83433c84423d84423e85"
    "4240854141864142864043874044873f45873f47883e4888"
    "3e49893d4a893d4b893d4c893c4d8a3c4e8a3b508a3b518a"
    "3a528b3a538b39548b39558b38568b38578c37588c37598c"
    "365a8c365b8c355c8c355d8c345e8d345f8d33608d33618d"
    "32628d32638d31648d31658d31668d30678d30688d2f698d"
    "2f6a8d2e6b8e2e6c8e2e6d8e2d6e8e2d6f8e2c708e2c718e"
    "2c728e2b738e2b748e2a758e2a768e2a778e29788e29798e"
    "287a8e287a8e287b8e277c8e277d8e277e8e267f8e26808e"
    "26818e25828e25838d24848d24858d24868d23878d23888d"
    "23898d22898d228a8d228b8d218c8d218d8c218e8c208f8c"
    "20908c20918c1f928c1f938b1f948b1f958b1f968b1e978a"
    "1e988a1e998a1e998a1e9a891e9b891e9c891e9d881e9e88"
    "1e9f881ea0871fa1871fa2861fa38620a48520a58521a685"
    "21a78422a78423a88323a98224aa8225ab8126ac8127ad80"
    "28ae7f29af7f2ab07e2bb17d2cb17d2eb27c2fb37b30b47a"
    "32b57a33b67935b77836b87738b97639b9763bba753dbb74"
    "3ebc7340bd7242be7144be7045bf6f47c06e49c16d4bc26c"
    "4dc26b4fc36951c46853c56755c66657c66559c7645bc862"
    "5ec96160c96062ca5f64cb5d67cc5c69cc5b6bcd596dce58"
    "70ce5672cf5574d05477d05279d1517cd24f7ed24e81d34c"
    "83d34b86d44988d5478bd5468dd64490d64392d74195d73f"
    "97d83e9ad83c9dd93a9fd938a2da37a5da35a7db33aadb32"
    "addc30afdc2eb2dd2cb5dd2bb7dd29bade27bdde26bfdf24"
    "c2df22c5df21c7e01fcae01ecde01dcfe11cd2e11bd4e11a"
    "d7e219dae218dce218dfe318e1e318e4e318e7e419e9e419"
    "ece41aeee51bf1e51cf3e51ef6e61ff8e621fae622fde724";

}  // namespace

Colormap::Colormap(const std::string& name) : name_(name) {
    std::string base = name;
    bool reversed = base.size() > 2 && base.compare(base.size() - 2, 2, "_r") == 0;
    if (reversed) base.resize(base.size() - 2);

    std::vector<Color> anchors;
    auto take = [&](const char* const* a, size_t n) {
        for (size_t i = 0; i < n; ++i) anchors.push_back(hex(a[i]));
    };
    if (base == "RdBu")
        take(RDBU_ANCHORS, std::size(RDBU_ANCHORS));
    else if (base == "Blues")
        take(BLUES_ANCHORS, std::size(BLUES_ANCHORS));
    else if (base == "Reds")
        take(REDS_ANCHORS, std::size(REDS_ANCHORS));
    else if (base == "Greys")
        take(GREYS_ANCHORS, std::size(GREYS_ANCHORS));
    else if (base == "viridis") {
        for (int i = 0; i < 256; ++i) {
            char six[7] = {};
            std::copy(viridis_hex + 6 * i, viridis_hex + 6 * i + 6, six);
            lut_.push_back(hex(six));
        }
    } else {
        throw std::runtime_error(
            "plot: unknown colormap '" + name +
            "' -- use RdBu, Blues, Reds, Greys or viridis (add _r to reverse)");
    }
    if (!anchors.empty()) {
        // A linear ramp through the anchors, sampled at 256 points, stored as the bytes
        // matplotlib would paint (value * 255 truncated).
        int n = (int)anchors.size();
        for (int j = 0; j < 256; ++j) {
            double x = j / 255.0 * (n - 1);
            int k = std::min(n - 2, (int)std::floor(x));
            double f = x - k;
            auto mix = [&](double a, double b) {
                return std::floor((a + f * (b - a)) * 255 + 1e-9) / 255;
            };
            const Color &a = anchors[k], &b = anchors[k + 1];
            lut_.push_back({mix(a.r, b.r), mix(a.g, b.g), mix(a.b, b.b)});
        }
    }
    if (reversed) std::reverse(lut_.begin(), lut_.end());
}

Color Colormap::operator()(double t) const {
    if (std::isnan(t)) return lut_[0];
    int i = (int)std::floor(t * 256);
    return lut_[std::clamp(i, 0, 255)];
}

}  // namespace plot
