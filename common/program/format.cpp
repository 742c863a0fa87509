#include "common/program/format.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

std::string fixed(double v, int digits) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

std::string py_repr(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    // Shortest round-trip digits in scientific form, e.g. "1.1920928955078125e-07": the first
    // precision whose correctly rounded digits read back as v (what std::to_chars gives, and
    // not every standard library has a floating-point to_chars).
    char buf[64];
    for (int p = 0; p <= 16; p++) {
        std::snprintf(buf, sizeof buf, "%.*e", p, v);
        if (std::strtod(buf, nullptr) == v) break;
    }
    std::string s(buf);
    bool neg = s[0] == '-';
    if (neg) s.erase(0, 1);
    size_t e = s.find('e');
    int exp10 = std::stoi(s.substr(e + 1));
    std::string digits = s.substr(0, e);
    if (digits.size() > 1) digits.erase(1, 1);  // drop the '.'
    // Python switches to exponent form when the decimal exponent is < -4 or >= 16.
    std::string out;
    if (exp10 < -4 || exp10 >= 16) {
        out = digits.substr(0, 1);
        if (digits.size() > 1) out += "." + digits.substr(1);
        char eb[16];
        std::snprintf(eb, sizeof eb, "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
        out += eb;
    } else if (exp10 < 0) {
        out = "0." + std::string(size_t(-exp10 - 1), '0') + digits;
    } else {
        if (digits.size() <= size_t(exp10) + 1) {
            out = digits + std::string(size_t(exp10) + 1 - digits.size(), '0') + ".0";
        } else {
            out = digits.substr(0, size_t(exp10) + 1) + "." + digits.substr(size_t(exp10) + 1);
        }
    }
    return neg ? "-" + out : out;
}

namespace {

// torch._tensor_str._Formatter: one width and one mode (integer, fixed or scientific) for
// every element of the tensor.
struct Formatter {
    bool int_mode = true, sci_mode = false;
    size_t width = 1;
    static constexpr int precision = 4;

    explicit Formatter(const std::vector<float>& values) {
        double lo = INFINITY, hi = 0;
        bool any = false;
        for (float f : values) {
            if (!std::isfinite(f) || f == 0) continue;
            any = true;
            lo = std::min(lo, std::fabs(double(f)));
            hi = std::max(hi, std::fabs(double(f)));
            if (f != std::ceil(f)) int_mode = false;
        }
        if (!any) return;
        sci_mode = hi / lo > 1000.0 || hi > 1e8 || (!int_mode && lo < 1e-4);
        for (float f : values) {
            if (!std::isfinite(f) || f == 0) continue;
            size_t len = sci_mode   ? sci(f).size()
                         : int_mode ? fixed(f, 0).size() + 1
                                    : fixed(f, precision).size();
            width = std::max(width, len);
        }
    }
    static std::string sci(double v) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.*e", precision, v);
        return buf;
    }
    std::string format(float f) const {
        std::string s;
        if (std::isnan(f)) s = "nan";
        else if (std::isinf(f)) s = f > 0 ? "inf" : "-inf";
        else if (sci_mode) s = sci(f);
        else if (int_mode) s = fixed(f, 0) + ".";
        else s = fixed(f, precision);
        return std::string(width > s.size() ? width - s.size() : 0, ' ') + s;
    }
};

constexpr int LINEWIDTH = 80, EDGE_ITEMS = 3;
constexpr int64_t THRESHOLD = 1000;

std::string tensor_str(const float* p, const Shape& shape, size_t d, int indent, bool summarize,
                       const Formatter& fmt) {
    const int64_t n = shape[d];
    int64_t stride = 1;
    for (size_t k = d + 1; k < shape.size(); k++) stride *= shape[k];
    std::vector<int64_t> rows;
    bool gap = summarize && n > 2 * EDGE_ITEMS;
    for (int64_t i = 0; i < n; i++)
        if (!gap || i < EDGE_ITEMS || i >= n - EDGE_ITEMS) rows.push_back(i);
    if (d + 1 == shape.size()) {  // a vector: wrap elements at the line width
        size_t per_line = std::max<size_t>(1, (LINEWIDTH - indent) / (fmt.width + 2));
        std::vector<std::string> items;
        for (int64_t i : rows) {
            if (gap && i == n - EDGE_ITEMS) items.push_back(" ...");
            items.push_back(fmt.format(p[i]));
        }
        std::string out = "[";
        for (size_t i = 0; i < items.size(); i++) {
            if (i > 0) out += i % per_line == 0 ? ",\n" + std::string(indent + 1, ' ') : ", ";
            out += items[i];
        }
        return out + "]";
    }
    std::string sep = "," + std::string(shape.size() - d - 1, '\n') + std::string(indent + 1, ' ');
    std::string out = "[";
    bool first = true;
    for (int64_t i : rows) {
        if (!first) out += sep;
        if (gap && i == n - EDGE_ITEMS) out += "..." + sep;
        out += tensor_str(p + i * stride, shape, d + 1, indent + 1, summarize, fmt);
        first = false;
    }
    return out + "]";
}

}  // namespace

std::string torch_str(const Tensor& t) {
    const std::string prefix = "tensor(";
    std::vector<float> v = t.to_vector();
    bool summarize = t.numel() > THRESHOLD;
    // Like torch, only the printed (edge) elements decide the format when summarising.
    std::vector<float> shown;
    if (summarize && t.dim() > 0) {
        std::vector<int64_t> idx(t.dim(), 0);
        for (int64_t i = 0; i < t.numel(); i++) {
            bool edge = true;
            int64_t rest = i;
            for (int d = t.dim() - 1; d >= 0; d--) {
                int64_t k = rest % t.shape()[d], n = t.shape()[d];
                rest /= n;
                if (n > 2 * EDGE_ITEMS && k >= EDGE_ITEMS && k < n - EDGE_ITEMS) edge = false;
            }
            if (edge) shown.push_back(v[i]);
        }
    } else {
        shown = v;
    }
    Formatter fmt(shown);
    if (t.dim() == 0) return prefix + fmt.format(v[0]) + ")";
    if (t.numel() == 0) return prefix + "[])";
    return prefix + tensor_str(v.data(), t.shape(), 0, int(prefix.size()), summarize, fmt) + ")";
}

std::string with_commas(int64_t v) {
    const std::string digits = std::to_string(v < 0 ? -v : v);
    std::string out;
    for (size_t i = 0; i < digits.size(); i++) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return v < 0 ? "-" + out : out;
}
