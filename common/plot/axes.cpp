// An Axes' limits (matplotlib's autoscale, 5% margins) and ticks (linear, log with its minor
// ticks, fixed), and the public Axes calls that record lines, images, text and settings.
// Read common/plot/text.cpp before it; the state these fill is declared in internal.h.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/plot/internal.h"

namespace plot {

// ==== Axes state: limits and ticks (LineArtist, AxisState, AxesImpl, FigureImpl: internal.h) ====

// ---- limits -------------------------------------------------------------------------------

bool usable(const AxisState& a, double v) { return std::isfinite(v) && (!a.log || v > 0); }

// Autoscale like matplotlib: the data range plus 5% each side in the axis' own scale;
// an image's extent exactly. Returns (lo, hi) with lo > hi for an inverted axis.
std::pair<double, double> auto_limits(const AxesImpl& A, bool is_x) {
    const AxisState& a = is_x ? A.xa : A.ya;
    if (a.has_lim) return {a.lim_lo, a.lim_hi};
    double lo = INFINITY, hi = -INFINITY;
    bool image = false;
    double img_lo = INFINITY, img_hi = -INFINITY;
    for (const auto& im : A.images) {
        image = true;
        double n = is_x ? im->cols : im->rows;
        img_lo = std::min(img_lo, -0.5), img_hi = std::max(img_hi, n - 0.5);
    }
    for (const LineArtist& l : A.lines) {
        if (l.hline && is_x) continue;
        const std::vector<double>& v = is_x ? l.x : l.y;
        for (double d : v)
            if (usable(a, d)) lo = std::min(lo, d), hi = std::max(hi, d);
    }
    if (image) {
        lo = std::min(lo, img_lo), hi = std::max(hi, img_hi);
        if (is_x) return {lo, hi};
        return {hi, lo};  // row 0 on top
    }
    if (!(lo <= hi)) return a.log ? std::make_pair(1.0, 10.0) : std::make_pair(0.0, 1.0);
    double tlo = a.fwd(lo), thi = a.fwd(hi);
    if (thi - tlo < 1e-12 * std::max(1.0, std::abs(tlo))) {  // one value: widen it
        double e = tlo == 0 ? 0.05 : 0.05 * std::abs(tlo);
        tlo -= e, thi += e;
    }
    double d = (thi - tlo) * MARGIN;
    tlo -= d, thi += d;
    if (a.log) return {std::pow(a.base, tlo), std::pow(a.base, thi)};
    return {tlo, thi};
}

// ---- ticks --------------------------------------------------------------------------------

namespace {

// matplotlib's LogLocator: subs * base^k on every stride-th decade.
std::vector<double> log_ticks(double vmin, double vmax, double base, std::vector<double> subs,
                              bool auto_subs, int numticks) {
    double lmin = std::log(vmin) / std::log(base), lmax = std::log(vmax) / std::log(base);
    double numdec = std::floor(lmax) - std::ceil(lmin);
    if (auto_subs) {
        if (numdec > 10 || base < 3) return {};
        subs.clear();
        for (double s = 2; s < base; ++s) subs.push_back(s);
    }
    int stride = (int)std::floor(numdec / numticks) + 1;
    if (stride >= numdec) stride = std::max(1, (int)numdec - 1);
    bool have_subs = subs.size() > 1 || (subs.size() == 1 && subs[0] != 1.0);
    std::vector<double> out;
    for (double d = std::floor(lmin) - stride; d < std::ceil(lmax) + 2 * stride; d += stride) {
        if (have_subs) {
            if (stride != 1) break;
            for (double s : subs) out.push_back(s * std::pow(base, d));
        } else {
            out.push_back(std::pow(base, d));
        }
    }
    return out;
}

std::string int_str(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%d", (int)std::lround(v));
    return buf;
}

std::string base_str(double base) {
    return std::abs(base - std::round(base)) < 1e-9 ? int_str(base) : format_g(base);
}

}  // namespace

void compute_ticks(AxisState& a, bool is_x, bool integer, double len_px, double dpi) {
    a.ticks.clear();
    double vmin = std::min(a.lo, a.hi), vmax = std::max(a.lo, a.hi);
    double tmin = a.fwd(vmin), tmax = a.fwd(vmax), eps = 1e-9 * (tmax - tmin);
    auto inside = [&](double v) {
        if (!usable(a, v)) return false;
        double t = a.fwd(v);
        return t >= tmin - eps && t <= tmax + eps;
    };
    // How many labels fit (matplotlib's get_tick_space: labels about 3 (x) or 2 (y) font
    // sizes apart).
    double len_pt = len_px * 72 / dpi;
    int space = (int)std::floor(len_pt / (FONT_SIZE * (is_x ? 3 : 2)));

    std::vector<double> major;
    std::vector<std::string> labels;
    if (a.fixed) {
        for (size_t i = 0; i < a.fixed_ticks.size(); ++i) {
            if (!inside(a.fixed_ticks[i])) continue;
            major.push_back(a.fixed_ticks[i]);
            if (i < a.fixed_labels.size()) labels.push_back(a.fixed_labels[i]);
        }
        if (labels.size() != major.size()) labels.clear();
    } else if (!a.log) {
        for (double t : nice_ticks_impl(vmin, vmax, std::clamp(space, 1, 9), integer))
            if (inside(t)) major.push_back(t);
    } else {
        int numticks = std::clamp(space, 2, 9);
        if (a.plain) {
            for (double t : log_ticks(vmin, vmax, 10, a.plain_subs, false, numticks))
                if (inside(t)) major.push_back(t);
        } else {
            for (double t : log_ticks(vmin, vmax, a.base, {1.0}, false, numticks))
                if (inside(t)) major.push_back(t);
        }
    }
    if (labels.empty()) {
        if (!a.log) {
            labels = format_ticks(major);
        } else {
            for (double t : major) {
                double k = std::log(t) / std::log(a.base);
                bool decade = std::abs(k - std::round(k)) < 1e-9;
                if (a.plain) labels.push_back(format_g(t));
                else labels.push_back(decade ? base_str(a.base) + "^{" + int_str(k) + "}" : "");
            }
        }
    }
    for (size_t i = 0; i < major.size(); ++i) a.ticks.push_back({major[i], labels[i], true});
    if (a.log) {  // minor ticks between the decades, where none is a major
        int numticks = std::clamp(space, 2, 9);
        // matplotlib's LogFormatter labels them only on a short axis: over more than one decade
        // none; over 0.4 to 1 decade those at round(geomspace(1, base, base/2 + 1)), which is
        // 2, 3, 4 and 6 for base 10; over less, all of them: 2x10^{-1}.
        const double decades = std::abs(a.fwd(vmax) - a.fwd(vmin));
        std::vector<double> sublabels;
        if (!a.fixed && !a.plain && decades <= 1) {
            int b = int(std::round(a.base)), n = b / 2 + 1;
            for (int i = 0; i < (decades > 0.4 ? n : b); ++i)
                sublabels.push_back(decades > 0.4
                                        ? std::round(std::pow(a.base, double(i) / (n - 1)))
                                        : double(i + 1));
        }
        for (double t : log_ticks(vmin, vmax, a.base, {}, true, numticks)) {
            if (!inside(t)) continue;
            bool dup = false;
            for (double m : major) dup |= std::abs(a.fwd(m) - a.fwd(t)) < 1e-9;
            if (dup) continue;
            std::string label;
            double k = std::floor(a.fwd(t) + 1e-9);
            double coeff = std::round(t / std::pow(a.base, k) * 1e6) / 1e6;
            if (std::find(sublabels.begin(), sublabels.end(), coeff) != sublabels.end())
                label = format_g(coeff) + "×" + base_str(a.base) + "^{" + int_str(k) + "}";
            a.ticks.push_back({t, label, false});
        }
    }
}

// ==== Axes ==================================================================================

Axes::Axes(Figure* fig, int row, int col) : impl_(std::make_unique<AxesImpl>()) {
    impl_->fig = fig, impl_->F = fig->impl_.get(), impl_->row = row, impl_->col = col;
}
Axes::~Axes() = default;

namespace {

void parse_fmt(const std::string& fmt, LineArtist& l) {
    std::string rest = fmt;
    l.marker = 0;
    if (!rest.empty() && (rest[0] == 'o' || rest[0] == 's' || rest[0] == '^'))
        l.marker = rest[0], rest.erase(0, 1);
    if (rest == "-") l.linestyle = 1;
    else if (rest == "--") l.linestyle = 2;
    else if (rest.empty()) l.linestyle = l.marker ? 0 : 1;
    else
        throw std::runtime_error("plot: format '" + fmt +
                                 "' not understood -- use a marker o s ^ and/or a line - --");
}

}  // namespace

void Axes::plot(const Values& x, const Values& y, const char* fmt, const std::string& label) {
    plot(x, y, Style{.fmt = fmt, .label = label});
}

void Axes::plot(const Values& x, const Values& y, const Style& style) {
    if (x.size() != y.size())
        throw std::runtime_error("plot: x has " + std::to_string(x.size()) + " values but y has " +
                                 std::to_string(y.size()) + " -- pass equally long series");
    LineArtist l;
    parse_fmt(style.fmt, l);
    l.x = x.v, l.y = y.v;
    l.color = style.color ? *style.color : tab10[impl_->cycle++ % 10];
    l.lw = style.lw, l.ms = style.ms, l.alpha = style.alpha, l.label = style.label;
    impl_->lines.push_back(std::move(l));
    invalidate(impl_->F);
}

void Axes::axhline(double y, const Style& style) {
    LineArtist l;
    parse_fmt(style.fmt, l);
    l.marker = 0;
    l.hline = true;
    l.y = {y};
    l.color = style.color ? *style.color : tab10[0];  // matplotlib: 'C0', the cycle stays
    l.lw = style.lw, l.alpha = style.alpha, l.label = style.label;
    impl_->lines.push_back(std::move(l));
    invalidate(impl_->F);
}

Image& Axes::imshow(const Values& data, int rows, int cols, const ImageStyle& style) {
    if (rows <= 0 || cols <= 0 || data.size() != size_t(rows) * cols)
        throw std::runtime_error("plot: imshow got " + std::to_string(data.size()) +
                                 " values for a " + std::to_string(rows) + " x " +
                                 std::to_string(cols) + " image -- pass rows * cols values");
    auto im = std::make_unique<Image>();
    im->data = data.v, im->rows = rows, im->cols = cols;
    im->cmap = Colormap(style.cmap);
    double mn = INFINITY, mx = -INFINITY;
    for (double v : data.v)
        if (std::isfinite(v)) mn = std::min(mn, v), mx = std::max(mx, v);
    if (!(mn <= mx)) mn = 0, mx = 1;
    im->vmin = style.vmin ? *style.vmin : mn;
    im->vmax = style.vmax ? *style.vmax : mx;
    impl_->images.push_back(std::move(im));
    invalidate(impl_->F);
    return *impl_->images.back();
}

void Axes::text(double x, double y, const std::string& s, const TextStyle& style) {
    impl_->texts.push_back({x, y, s, style});
    invalidate(impl_->F);
}

void Axes::set_title(const std::string& s) { impl_->title = s, invalidate(impl_->F); }
void Axes::set_xlabel(const std::string& s) { impl_->xlabel = s, invalidate(impl_->F); }
void Axes::set_ylabel(const std::string& s) { impl_->ylabel = s, invalidate(impl_->F); }

namespace {
void set_lim(AxisState& a, double lo, double hi, const char* name) {
    if (!std::isfinite(lo) || !std::isfinite(hi) || lo == hi)
        throw std::runtime_error(std::string("plot: set_") + name +
                                 "lim needs two different finite numbers");
    a.has_lim = true, a.lim_lo = lo, a.lim_hi = hi;
}
void set_scale(AxisState& a, const std::string& scale, double base, const char* name) {
    if (scale == "linear") a.log = false;
    else if (scale == "log" && base > 1) a.log = true, a.base = base;
    else
        throw std::runtime_error(std::string("plot: set_") + name + "scale(\"" + scale +
                                 "\") -- use \"linear\" or \"log\" with a base above 1");
}
void set_ticks(AxisState& a, const std::vector<double>& t, const std::vector<std::string>& l) {
    if (!l.empty() && l.size() != t.size())
        throw std::runtime_error("plot: " + std::to_string(t.size()) + " ticks but " +
                                 std::to_string(l.size()) + " labels -- pass one label per tick");
    a.fixed = true, a.fixed_ticks = t, a.fixed_labels = l;
}
}  // namespace

void Axes::set_xlim(double lo, double hi) { set_lim(impl_->xa, lo, hi, "x"), invalidate(impl_->F); }
void Axes::set_ylim(double lo, double hi) { set_lim(impl_->ya, lo, hi, "y"), invalidate(impl_->F); }
void Axes::set_xscale(const std::string& s, double base) {
    set_scale(impl_->xa, s, base, "x"), invalidate(impl_->F);
}
void Axes::set_yscale(const std::string& s, double base) {
    set_scale(impl_->ya, s, base, "y"), invalidate(impl_->F);
}
void Axes::set_xticks(const std::vector<double>& t, const std::vector<std::string>& l) {
    set_ticks(impl_->xa, t, l), invalidate(impl_->F);
}
void Axes::set_yticks(const std::vector<double>& t, const std::vector<std::string>& l) {
    set_ticks(impl_->ya, t, l), invalidate(impl_->F);
}
void Axes::use_plain_log_labels(char axis, std::vector<double> subs) {
    if (axis != 'x' && axis != 'y')
        throw std::runtime_error("plot: use_plain_log_labels axis must be 'x' or 'y'");
    AxisState& a = axis == 'x' ? impl_->xa : impl_->ya;
    a.plain = true, a.plain_subs = subs.empty() ? std::vector<double>{1.0} : subs;
    invalidate(impl_->F);
}
void Axes::grid(double alpha) { impl_->grid_alpha = alpha, invalidate(impl_->F); }
void Axes::legend(const LegendStyle& style) {
    impl_->show_legend = true, impl_->legend_style = style;
    invalidate(impl_->F);
}

std::pair<double, double> Axes::data_to_pixel(double x, double y) const {
    impl_->fig->layout();
    const AxesImpl& A = *impl_;
    return {data_x_px(A, x), data_y_px(A, y)};
}

Axes::Box Axes::box() const {
    impl_->fig->layout();
    return impl_->box;
}
std::pair<double, double> Axes::xlim() const {
    impl_->fig->layout();
    return {impl_->xa.lo, impl_->xa.hi};
}
std::pair<double, double> Axes::ylim() const {
    impl_->fig->layout();
    return {impl_->ya.lo, impl_->ya.hi};
}

std::vector<Axes::Tick> Axes::xticks() const {
    impl_->fig->layout();
    std::vector<Tick> out;
    for (const auto& t : impl_->xa.ticks) out.push_back({t.v, t.label, t.major});
    return out;
}
std::vector<Axes::Tick> Axes::yticks() const {
    impl_->fig->layout();
    std::vector<Tick> out;
    for (const auto& t : impl_->ya.ticks) out.push_back({t.v, t.label, t.major});
    return out;
}

}  // namespace plot
