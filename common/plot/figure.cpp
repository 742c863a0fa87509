// The drawing half of the plotting library: a float RGB canvas with antialiased strokes,
// markers and text (stb_truetype), the axes layout (ticks, labels, tight_layout, legend,
// colorbar) and PNG output (stb_image_write). Numbers follow matplotlib's defaults (rcParams):
// sizes are in points and become pixels as points * dpi / 72.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <stdexcept>
#include <tuple>
#include <unistd.h>

#include "common/plot/plot.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wunused-but-set-variable"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
// Static copies: another file of the project may define the same stb implementations.
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>
#define STBTT_STATIC
#define STB_TRUETYPE_IMPLEMENTATION
#include <stb_truetype.h>
#pragma GCC diagnostic pop

#ifndef PROJECT_FONT
#define PROJECT_FONT "/usr/share/fonts/truetype/nanum/NanumGothic.ttf"
#endif

namespace plot {

std::vector<double> nice_ticks_impl(double lo, double hi, int nbins, bool integer);  // ticks.cpp

namespace {

// ---- matplotlib's defaults (points unless noted) ------------------------------------------
constexpr double kFontSize = 10;         // font.size; tick labels, axis labels, legend
constexpr double kTitleSize = 12;        // axes.titlesize 'large'
constexpr double kMajorTickLen = 3.5, kMajorTickWidth = 0.8;
constexpr double kMinorTickLen = 2.0, kMinorTickWidth = 0.6;
constexpr double kTickPad = 3.5;         // gap between a tick and its label
constexpr double kSpineWidth = 0.8;      // axes.linewidth
constexpr double kLabelPad = 4;          // axes.labelpad
constexpr double kTitlePad = 6;          // axes.titlepad
constexpr double kGridWidth = 0.8;       // grid.linewidth, colour #b0b0b0
constexpr double kMarkerEdge = 1.0;      // lines.markeredgewidth
constexpr double kTightPad = 1.08;       // tight_layout pad, in font sizes
constexpr double kMargin = 0.05;         // axes.xmargin / ymargin
const Color kGridColor{0xb0 / 255.0, 0xb0 / 255.0, 0xb0 / 255.0};
const Color kLegendEdge{0.8, 0.8, 0.8};

// ============================================================================================
// Canvas: RGB floats in 0..1, composited with "over" at a coverage in 0..1.
// ============================================================================================

struct Clip {
    int x0, y0, x1, y1;  // pixel index range [x0, x1) x [y0, y1)
};

struct Canvas {
    int w = 0, h = 0;
    std::vector<float> rgb;  // (h, w, 3)
    void reset(int width, int height) {
        w = width, h = height;
        rgb.assign(size_t(w) * h * 3, 1.0f);
    }
    Clip full() const { return {0, 0, w, h}; }
    void blend(int x, int y, const Color& c, double a) {
        float* p = &rgb[(size_t(y) * w + x) * 3];
        float fa = float(a);
        p[0] += (float(c.r) - p[0]) * fa;
        p[1] += (float(c.g) - p[1]) * fa;
        p[2] += (float(c.b) - p[2]) * fa;
    }
    void set(int x, int y, const Color& c) {
        float* p = &rgb[(size_t(y) * w + x) * 3];
        p[0] = float(c.r), p[1] = float(c.g), p[2] = float(c.b);
    }
};

Clip intersect(Clip a, Clip b) {
    return {std::max(a.x0, b.x0), std::max(a.y0, b.y0), std::min(a.x1, b.x1), std::min(a.y1, b.y1)};
}

// The pixels whose centres lie inside a continuous box.
Clip clip_of(double x0, double y0, double x1, double y1) {
    return {(int)std::ceil(x0 - 0.5), (int)std::ceil(y0 - 0.5), (int)std::floor(x1 - 0.5) + 1,
            (int)std::floor(y1 - 0.5) + 1};
}

double clamp01(double v) { return v < 0 ? 0 : (v > 1 ? 1 : v); }

// Like Agg's snapping of straight strokes: a line whose width rounds to an odd number of pixels
// is centred on a pixel centre, an even one on a pixel edge, so spines, ticks and grid lines
// come out crisp and evenly dark.
double snap(double v, double width_px) {
    long n = std::max(1L, std::lround(width_px));
    return n % 2 ? std::floor(v) + 0.5 : std::round(v);
}

// Evaluates coverage(px, py) at every pixel centre of a box and composites the colour.
template <class F>
void paint(Canvas& cv, Clip clip, double x0, double y0, double x1, double y1, const Color& c,
           double alpha, F coverage) {
    Clip r = intersect(clip, {(int)std::floor(x0), (int)std::floor(y0), (int)std::ceil(x1) + 1,
                              (int)std::ceil(y1) + 1});
    for (int y = r.y0; y < r.y1; ++y)
        for (int x = r.x0; x < r.x1; ++x) {
            double a = coverage(x + 0.5, y + 0.5);
            if (a > 0) cv.blend(x, y, c, a * alpha);
        }
}

// ---- strokes: a polyline's coverage is the max over its segments, composited once ---------

struct Seg {
    double ax, ay, bx, by;
};

// Coverage of one segment of half width hw (pixels) at a pixel centre. Round ends join
// consecutive segments smoothly; butt ends cut dashes square.
double segment_coverage(const Seg& s, double hw, bool butt, double px, double py) {
    double dx = s.bx - s.ax, dy = s.by - s.ay, len = std::hypot(dx, dy);
    double peak = std::min(1.0, 2 * hw);  // a hairline never covers a whole pixel
    double rx = px - s.ax, ry = py - s.ay;
    if (len < 1e-9) return butt ? 0 : std::clamp(hw + 0.5 - std::hypot(rx, ry), 0.0, peak);
    double ux = dx / len, uy = dy / len;
    double along = rx * ux + ry * uy, perp = std::abs(rx * uy - ry * ux);
    if (butt) {
        double across = std::clamp(hw + 0.5 - perp, 0.0, peak);
        return across * clamp01(along + 0.5) * clamp01(len - along + 0.5);
    }
    double d = along < 0 ? std::hypot(rx, ry)
                         : (along > len ? std::hypot(px - s.bx, py - s.by) : perp);
    return std::clamp(hw + 0.5 - d, 0.0, peak);
}

void stroke(Canvas& cv, const std::vector<Seg>& segs, double width_px, bool butt, const Color& c,
            double alpha, Clip clip) {
    if (segs.empty()) return;
    double hw = width_px / 2, m = hw + 1;
    double x0 = 1e300, y0 = 1e300, x1 = -1e300, y1 = -1e300;
    for (const Seg& s : segs) {
        x0 = std::min({x0, s.ax, s.bx}), x1 = std::max({x1, s.ax, s.bx});
        y0 = std::min({y0, s.ay, s.by}), y1 = std::max({y1, s.ay, s.by});
    }
    auto bound = [](double v) { return std::clamp(v, -1e6, 1e6); };
    Clip r = intersect(clip, {(int)std::floor(bound(x0 - m)), (int)std::floor(bound(y0 - m)),
                              (int)std::ceil(bound(x1 + m)), (int)std::ceil(bound(y1 + m))});
    if (r.x1 <= r.x0 || r.y1 <= r.y0) return;
    int rw = r.x1 - r.x0, rh = r.y1 - r.y0;
    std::vector<float> cov(size_t(rw) * rh, 0.0f);
    for (const Seg& s : segs) {
        int sx0 = std::max(r.x0, (int)std::floor(bound(std::min(s.ax, s.bx) - m)));
        int sx1 = std::min(r.x1, (int)std::ceil(bound(std::max(s.ax, s.bx) + m)));
        int sy0 = std::max(r.y0, (int)std::floor(bound(std::min(s.ay, s.by) - m)));
        int sy1 = std::min(r.y1, (int)std::ceil(bound(std::max(s.ay, s.by) + m)));
        for (int y = sy0; y < sy1; ++y)
            for (int x = sx0; x < sx1; ++x) {
                float a = (float)segment_coverage(s, hw, butt, x + 0.5, y + 0.5);
                float& dst = cov[size_t(y - r.y0) * rw + (x - r.x0)];
                if (a > dst) dst = a;
            }
    }
    for (int y = r.y0; y < r.y1; ++y)
        for (int x = r.x0; x < r.x1; ++x) {
            float a = cov[size_t(y - r.y0) * rw + (x - r.x0)];
            if (a > 0) cv.blend(x, y, c, a * alpha);
        }
}

// A polyline, solid or dashed (matplotlib's '--': 3.7 on, 1.6 off, in line widths).
void draw_polyline(Canvas& cv, const std::vector<std::pair<double, double>>& pts, double width_px,
                   bool dashed, const Color& c, double alpha, Clip clip) {
    std::vector<Seg> segs;
    if (!dashed) {
        for (size_t i = 1; i < pts.size(); ++i)
            segs.push_back({pts[i - 1].first, pts[i - 1].second, pts[i].first, pts[i].second});
        stroke(cv, segs, width_px, false, c, alpha, clip);
        return;
    }
    double on = 3.7 * width_px, off = 1.6 * width_px;
    bool drawing = true;
    double left = on;  // length left in the current dash or gap
    for (size_t i = 1; i < pts.size(); ++i) {
        double ax = pts[i - 1].first, ay = pts[i - 1].second;
        double bx = pts[i].first, by = pts[i].second;
        double len = std::hypot(bx - ax, by - ay), t = 0;
        if (len > 1e5) {  // a line far outside the canvas: dash only the visible stretch
            len = 0;
            segs.push_back({ax, ay, bx, by});
            continue;
        }
        while (t < len) {
            double step = std::min(left, len - t);
            if (drawing) {
                double f0 = t / len, f1 = (t + step) / len;
                segs.push_back({ax + (bx - ax) * f0, ay + (by - ay) * f0, ax + (bx - ax) * f1,
                                ay + (by - ay) * f1});
            }
            t += step, left -= step;
            if (left <= 1e-9) drawing = !drawing, left = drawing ? on : off;
        }
    }
    stroke(cv, segs, width_px, true, c, alpha, clip);
}

// Markers 'o' 's' '^' of size ms (points) with a 1 pt edge in the same colour.
void draw_marker(Canvas& cv, char m, double cx, double cy, double ms_px, double edge_px,
                 const Color& c, double alpha, Clip clip) {
    double half = ms_px / 2 + edge_px / 2, e = half + 1;
    if (m == 'o') {
        paint(cv, clip, cx - e, cy - e, cx + e, cy + e, c, alpha, [&](double x, double y) {
            return clamp01(half + 0.5 - std::hypot(x - cx, y - cy));
        });
    } else if (m == 's') {
        paint(cv, clip, cx - e, cy - e, cx + e, cy + e, c, alpha, [&](double x, double y) {
            return clamp01(half + 0.5 - std::abs(x - cx)) * clamp01(half + 0.5 - std::abs(y - cy));
        });
    } else if (m == '^') {
        // Apex up; the base and the apex sit ms/2 below and above the centre.
        double h = ms_px / 2;
        double vx[3] = {cx, cx + h, cx - h}, vy[3] = {cy - h, cy + h, cy + h};
        double nx[3], ny[3], off[3];
        for (int k = 0; k < 3; ++k) {  // outward edge normals (clockwise on screen)
            int j = (k + 1) % 3;
            double ex = vx[j] - vx[k], ey = vy[j] - vy[k], l = std::hypot(ex, ey);
            nx[k] = ey / l, ny[k] = -ex / l;
            off[k] = nx[k] * vx[k] + ny[k] * vy[k];
        }
        double em = 2 * h + edge_px + 2;
        paint(cv, clip, cx - em, cy - em, cx + em, cy + em, c, alpha, [&](double x, double y) {
            double sd = -1e9;
            for (int k = 0; k < 3; ++k) sd = std::max(sd, nx[k] * x + ny[k] * y - off[k]);
            return clamp01(0.5 - (sd - edge_px / 2));
        });
    }
}

// Signed distance to a rounded rectangle (negative inside).
double rounded_rect_sd(double x, double y, double x0, double y0, double x1, double y1, double r) {
    double cx = (x0 + x1) / 2, cy = (y0 + y1) / 2;
    double qx = std::abs(x - cx) - ((x1 - x0) / 2 - r), qy = std::abs(y - cy) - ((y1 - y0) / 2 - r);
    double outside = std::hypot(std::max(qx, 0.0), std::max(qy, 0.0));
    return outside + std::min(std::max(qx, qy), 0.0) - r;
}

// ============================================================================================
// Text: stb_truetype glyphs, cached per (glyph, size, quarter-pixel shift), alpha-blended.
// ============================================================================================

struct Font {
    std::vector<unsigned char> bytes;
    stbtt_fontinfo info{};
};

struct GlyphBitmap {
    int x0 = 0, y0 = 0, w = 0, h = 0;  // offset from the pen position (y down)
    std::vector<unsigned char> alpha;
};

std::mutex g_font_mutex;
std::map<std::string, std::unique_ptr<Font>> g_fonts;
std::map<std::tuple<const Font*, int, int, int>, GlyphBitmap> g_glyphs;

const Font& get_font() {
    std::string path = font_path();
    std::lock_guard<std::mutex> lock(g_font_mutex);
    auto it = g_fonts.find(path);
    if (it != g_fonts.end()) return *it->second;
    auto font = std::make_unique<Font>();
    std::ifstream f(path, std::ios::binary | std::ios::ate);
    if (f) {
        font->bytes.resize((size_t)std::max<std::streamoff>(0, f.tellg()));
        f.seekg(0);
        if (!f.read((char*)font->bytes.data(), (std::streamsize)font->bytes.size())) font->bytes.clear();
    }
    int offset = font->bytes.empty() ? -1 : stbtt_GetFontOffsetForIndex(font->bytes.data(), 0);
    if (offset < 0 || !stbtt_InitFont(&font->info, font->bytes.data(), offset))
        throw std::runtime_error("font not found: " + path +
                                 " -- install with: sudo apt-get install fonts-nanum");
    const Font& ref = *font;
    g_fonts[path] = std::move(font);
    return ref;
}

std::vector<int> utf8_decode(const std::string& s) {
    std::vector<int> out;
    for (size_t i = 0; i < s.size();) {
        unsigned char c = s[i];
        int cp = 0xFFFD, n = 1;
        if (c < 0x80) cp = c;
        else if ((c >> 5) == 6) cp = c & 0x1F, n = 2;
        else if ((c >> 4) == 14) cp = c & 0x0F, n = 3;
        else if ((c >> 3) == 30) cp = c & 0x07, n = 4;
        if (n > 1) {
            if (i + n > s.size()) n = 1, cp = 0xFFFD;
            for (int k = 1; k < n; ++k) {
                unsigned char d = s[i + k];
                if ((d >> 6) != 2) { n = 1, cp = 0xFFFD; break; }
                cp = (cp << 6) | (d & 0x3F);
            }
        }
        out.push_back(cp);
        i += n;
    }
    return out;
}

// One glyph placed on a line: pen x, baseline shift (y down), size in pixels.
struct Placed {
    int glyph;
    double x, rise, size_px;
};

struct TextLine {
    std::vector<Placed> glyphs;
    double width = 0, ascent = 0, descent = 0;  // pixels; the layout box is lp-based like mpl
};

// Lays out "10^{3}": the part in ^{...} is a superscript at 0.7 of the size.
TextLine layout_text(const std::string& s, double size_px) {
    const Font& f = get_font();
    TextLine line;
    std::vector<int> cps = utf8_decode(s);
    double pen = 0;
    bool sup = false;
    int prev = -1;
    double ink_top = 0, ink_bottom = 0;
    for (size_t i = 0; i < cps.size(); ++i) {
        if (!sup && cps[i] == '^' && i + 1 < cps.size() && cps[i + 1] == '{') {
            sup = true, ++i, prev = -1;
            continue;
        }
        if (sup && cps[i] == '}') {
            sup = false, prev = -1;
            continue;
        }
        double px = sup ? 0.7 * size_px : size_px, rise = sup ? -0.45 * size_px : 0;
        float scale = stbtt_ScaleForMappingEmToPixels(&f.info, (float)px);
        int g = stbtt_FindGlyphIndex(&f.info, cps[i]);
        if (prev >= 0) pen += scale * stbtt_GetGlyphKernAdvance(&f.info, prev, g);
        int adv = 0, lsb = 0, x0, y0, x1, y1;
        stbtt_GetGlyphHMetrics(&f.info, g, &adv, &lsb);
        if (stbtt_GetGlyphBox(&f.info, g, &x0, &y0, &x1, &y1)) {
            ink_top = std::max(ink_top, y1 * scale - rise);
            ink_bottom = std::max(ink_bottom, -y0 * scale + rise);
        }
        line.glyphs.push_back({g, pen, rise, px});
        pen += scale * adv;
        prev = g;
    }
    line.width = pen;
    // matplotlib pads every line to the ink of "lp" so labels line up.
    float scale = stbtt_ScaleForMappingEmToPixels(&f.info, (float)size_px);
    int x0, y0, x1, y1;
    double lp_top = 0, lp_bottom = 0;
    if (stbtt_GetCodepointBox(&f.info, 'l', &x0, &y0, &x1, &y1)) lp_top = y1 * scale;
    if (stbtt_GetCodepointBox(&f.info, 'p', &x0, &y0, &x1, &y1)) lp_bottom = -y0 * scale;
    line.ascent = std::max(ink_top, lp_top);
    line.descent = std::max(ink_bottom, lp_bottom);
    return line;
}

const GlyphBitmap& glyph_bitmap(const Font& f, int glyph, double size_px, int shift4) {
    auto key = std::make_tuple(&f, glyph, (int)std::lround(size_px * 64), shift4);
    std::lock_guard<std::mutex> lock(g_font_mutex);
    auto it = g_glyphs.find(key);
    if (it != g_glyphs.end()) return it->second;
    GlyphBitmap b;
    float scale = stbtt_ScaleForMappingEmToPixels(&f.info, (float)size_px);
    float sx = shift4 / 4.0f;
    int x0, y0, x1, y1;
    stbtt_GetGlyphBitmapBoxSubpixel(&f.info, glyph, scale, scale, sx, 0, &x0, &y0, &x1, &y1);
    b.x0 = x0, b.y0 = y0, b.w = x1 - x0, b.h = y1 - y0;
    if (b.w > 0 && b.h > 0) {
        b.alpha.assign(size_t(b.w) * b.h, 0);
        stbtt_MakeGlyphBitmapSubpixel(&f.info, b.alpha.data(), b.w, b.h, b.w, scale, scale, sx, 0,
                                      glyph);
    }
    return g_glyphs.emplace(key, std::move(b)).first->second;
}

// Glyph coverage -> opacity. FreeType's hinted glyphs in matplotlib have darker stems than
// stb_truetype's unhinted ones; a mild gamma brings the weight closer.
double text_alpha(unsigned char a) {
    static const std::vector<double> table = [] {
        std::vector<double> t(256);
        for (int i = 0; i < 256; ++i) t[i] = std::pow(i / 255.0, 0.75);
        return t;
    }();
    return table[a];
}

enum VAlign { va_top, va_center, va_bottom, va_baseline, va_center_baseline };
enum HAlign { ha_left, ha_center, ha_right };

struct Rect {
    double x0, y0, x1, y1;
};

// Draws (cv != nullptr) or only measures one line of text anchored at (x, y) and returns its
// box. Rotated text turns 90 degrees counter-clockwise about the anchor after aligning in its
// own frame (matplotlib's rotation_mode='anchor', used for the y label).
Rect draw_text(Canvas* cv, const std::string& s, double x, double y, double size_pt, double dpi,
               const Color& color, HAlign ha, VAlign va, bool rotated = false) {
    double size_px = size_pt * dpi / 72;
    TextLine line = layout_text(s, size_px);
    // Offsets of the baseline start from the anchor, in the text's own frame (u right, v down).
    double u0 = ha == ha_left ? 0 : (ha == ha_center ? -line.width / 2 : -line.width);
    double v0 = 0;
    switch (va) {
        case va_top: v0 = line.ascent; break;
        case va_bottom: v0 = -line.descent; break;
        case va_center: v0 = (line.ascent - line.descent) / 2; break;
        case va_center_baseline: v0 = line.ascent / 2; break;
        case va_baseline: v0 = 0; break;
    }
    Rect box;
    if (!rotated) {
        box = {x + u0, y + v0 - line.ascent, x + u0 + line.width, y + v0 + line.descent};
    } else {  // (u, v) -> (x + v, y - u)
        box = {x + v0 - line.ascent, y - u0 - line.width, x + v0 + line.descent, y - u0};
    }
    if (!cv) return box;

    const Font& f = get_font();
    if (!rotated) {
        double ox = x + u0;
        int oy = (int)std::lround(y + v0);
        for (const Placed& g : line.glyphs) {
            double gx = ox + g.x;
            int ix = (int)std::floor(gx), shift4 = (int)std::floor((gx - ix) * 4);
            const GlyphBitmap& b = glyph_bitmap(f, g.glyph, g.size_px, shift4);
            int bx = ix + b.x0, by = oy + (int)std::lround(g.rise) + b.y0;
            for (int j = 0; j < b.h; ++j)
                for (int i = 0; i < b.w; ++i) {
                    int px = bx + i, py = by + j;
                    unsigned char a = b.alpha[size_t(j) * b.w + i];
                    if (a && px >= 0 && py >= 0 && px < cv->w && py < cv->h)
                        cv->blend(px, py, color, text_alpha(a));
                }
        }
    } else {
        int ox = (int)std::lround(x + v0);
        double oy = y - u0;
        for (const Placed& g : line.glyphs) {
            int iu = (int)std::lround(g.x);
            const GlyphBitmap& b = glyph_bitmap(f, g.glyph, g.size_px, 0);
            for (int j = 0; j < b.h; ++j)
                for (int i = 0; i < b.w; ++i) {
                    double u = iu + b.x0 + i, v = std::lround(g.rise) + b.y0 + j;
                    int px = ox + (int)v, py = (int)std::lround(oy - u) - 1;
                    unsigned char a = b.alpha[size_t(j) * b.w + i];
                    if (a && px >= 0 && py >= 0 && px < cv->w && py < cv->h)
                        cv->blend(px, py, color, text_alpha(a));
                }
        }
    }
    return box;
}

Rect unite(const Rect& a, const Rect& b) {
    return {std::min(a.x0, b.x0), std::min(a.y0, b.y0), std::max(a.x1, b.x1), std::max(a.y1, b.y1)};
}

}  // namespace

// ============================================================================================
// Axes state
// ============================================================================================

struct LineArtist {
    std::vector<double> x, y;
    Color color;
    double lw = 1.5, ms = 6, alpha = 1;
    char marker = 0;  // 0 | 'o' | 's' | '^'
    int linestyle = 1;  // 0 none, 1 solid, 2 dashed
    std::string label;
    bool hline = false;  // x spans the axes; y[0] is the data y
};

struct TextArtist {
    double x, y;
    std::string s;
    TextStyle style;
};

struct AxisState {
    bool log = false;
    double base = 10;
    bool has_lim = false;
    double lim_lo = 0, lim_hi = 1;
    bool fixed = false;
    std::vector<double> fixed_ticks;
    std::vector<std::string> fixed_labels;
    bool plain = false;  // use_plain_log_labels
    std::vector<double> plain_subs;
    // Computed by the layout.
    double lo = 0, hi = 1;
    struct Tick {
        double v;
        std::string label;
        bool major;
    };
    std::vector<Tick> ticks;

    double fwd(double v) const { return log ? std::log(v) / std::log(base) : v; }
};

struct AxesImpl {
    Figure* fig;
    FigureImpl* F;  // the figure's state, to mark its layout stale
    int row, col;
    std::vector<LineArtist> lines;
    std::vector<std::unique_ptr<Image>> images;
    std::vector<TextArtist> texts;
    AxisState xa, ya;
    std::string title, xlabel, ylabel;
    double grid_alpha = -1;  // < 0: no grid
    bool show_legend = false;
    LegendStyle legend_style;
    int cycle = 0;
    const Image* cbar = nullptr;
    // Layout results (canvas pixels).
    Axes::Box box{0, 0, 0, 0};
    Axes::Box cbar_box{0, 0, 0, 0};
    std::vector<double> cbar_ticks;
    std::vector<std::string> cbar_labels;
};

struct FigureImpl {
    double w_in, h_in, dpi;
    int rows = 0, cols = 0;
    std::vector<std::unique_ptr<Axes>> axes;  // (rows * cols), null where no subplot
    bool tight = false;
    bool laid_out = false;
    Canvas canvas;
    Pixels pixels;

    double pt(double points) const { return points * dpi / 72; }
    int W() const { return (int)std::lround(w_in * dpi); }
    int H() const { return (int)std::lround(h_in * dpi); }
};

namespace {

void invalidate(FigureImpl* F);

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
    double d = (thi - tlo) * kMargin;
    tlo -= d, thi += d;
    if (a.log) return {std::pow(a.base, tlo), std::pow(a.base, thi)};
    return {tlo, thi};
}

// ---- ticks --------------------------------------------------------------------------------

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

// Ticks of one axis for the view [lo, hi] drawn over len_px pixels.
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
    int space = (int)std::floor(len_pt / (kFontSize * (is_x ? 3 : 2)));

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
                sublabels.push_back(decades > 0.4 ? std::round(std::pow(a.base, double(i) / (n - 1)))
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

}  // namespace

// ============================================================================================
// Axes
// ============================================================================================

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
    double fx = (A.xa.fwd(x) - A.xa.fwd(A.xa.lo)) / (A.xa.fwd(A.xa.hi) - A.xa.fwd(A.xa.lo));
    double fy = (A.ya.fwd(y) - A.ya.fwd(A.ya.lo)) / (A.ya.fwd(A.ya.hi) - A.ya.fwd(A.ya.lo));
    return {A.box.x0 + fx * (A.box.x1 - A.box.x0), A.box.y1 - fy * (A.box.y1 - A.box.y0)};
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

// ============================================================================================
// Layout: ticks, the boxes of every label, and the placement of the axes on the grid
// ============================================================================================

namespace {

void invalidate(FigureImpl* F) { F->laid_out = false; }

struct Decor {
    Rect ink;  // everything an axes draws (labels included), canvas pixels
    std::vector<Rect> xtick_boxes, ytick_boxes, cbar_boxes;
    Rect xlabel{}, ylabel{}, title{};
};

// Positions of tick labels, axis labels and title for the current boxes and ticks.
// With cv it draws them as well.
Decor decorate(const AxesImpl& A, double dpi, Canvas* cv) {
    auto pt = [&](double p) { return p * dpi / 72; };
    const Axes::Box& b = A.box;
    Decor d;
    d.ink = {b.x0, b.y0, b.x1, b.y1};
    auto tx = [&](double v) {
        return b.x0 + (A.xa.fwd(v) - A.xa.fwd(A.xa.lo)) / (A.xa.fwd(A.xa.hi) - A.xa.fwd(A.xa.lo)) *
                          (b.x1 - b.x0);
    };
    auto ty = [&](double v) {
        return b.y1 - (A.ya.fwd(v) - A.ya.fwd(A.ya.lo)) / (A.ya.fwd(A.ya.hi) - A.ya.fwd(A.ya.lo)) *
                          (b.y1 - b.y0);
    };
    bool any_x_major = false, any_y_major = false;
    for (const auto& t : A.xa.ticks) any_x_major |= t.major;
    for (const auto& t : A.ya.ticks) any_y_major |= t.major;
    // x tick labels hang below the ticks, centred; y tick labels sit left, centred on the
    // part above the baseline (matplotlib's center_baseline).
    double xlab_top = b.y1 + (any_x_major ? pt(kMajorTickLen) : 0) + pt(kTickPad);
    double ylab_right = b.x0 - (any_y_major ? pt(kMajorTickLen) : 0) - pt(kTickPad);
    double below = b.y1, leftmost = b.x0;
    for (const auto& t : A.xa.ticks) {
        if (t.label.empty()) continue;
        Rect r = draw_text(cv, t.label, snap(tx(t.v), pt(kMajorTickWidth)), xlab_top, kFontSize, dpi, black,
                           ha_center, va_top);
        d.xtick_boxes.push_back(r), d.ink = unite(d.ink, r), below = std::max(below, r.y1);
    }
    if (d.xtick_boxes.empty()) below = xlab_top - pt(kTickPad);
    for (const auto& t : A.ya.ticks) {
        if (t.label.empty()) continue;
        Rect r = draw_text(cv, t.label, ylab_right, snap(ty(t.v), pt(kMajorTickWidth)), kFontSize, dpi,
                           black, ha_right, va_center_baseline);
        d.ytick_boxes.push_back(r), d.ink = unite(d.ink, r), leftmost = std::min(leftmost, r.x0);
    }
    if (d.ytick_boxes.empty()) leftmost = ylab_right + pt(kTickPad);
    if (!A.xlabel.empty()) {
        d.xlabel = draw_text(cv, A.xlabel, (b.x0 + b.x1) / 2, below + pt(kLabelPad), kFontSize,
                             dpi, black, ha_center, va_top);
        d.ink = unite(d.ink, d.xlabel);
    }
    if (!A.ylabel.empty()) {
        d.ylabel = draw_text(cv, A.ylabel, leftmost - pt(kLabelPad), (b.y0 + b.y1) / 2, kFontSize,
                             dpi, black, ha_center, va_bottom, true);
        d.ink = unite(d.ink, d.ylabel);
    }
    if (!A.title.empty()) {
        d.title = draw_text(cv, A.title, (b.x0 + b.x1) / 2, b.y0 - pt(kTitlePad), kTitleSize, dpi,
                            black, ha_center, va_baseline);
        d.ink = unite(d.ink, d.title);
    }
    if (A.cbar) {
        const Axes::Box& c = A.cbar_box;
        d.ink = unite(d.ink, {c.x0, c.y0, c.x1, c.y1});
        double left = c.x1 + pt(kMajorTickLen) + pt(kTickPad);
        for (size_t i = 0; i < A.cbar_ticks.size(); ++i) {
            double f = (A.cbar_ticks[i] - A.cbar->vmin) / (A.cbar->vmax - A.cbar->vmin);
            double y = snap(c.y1 - f * (c.y1 - c.y0), pt(kMajorTickWidth));
            Rect r = draw_text(cv, A.cbar_labels[i], left, y, kFontSize, dpi, black, ha_left,
                               va_center_baseline);
            d.cbar_boxes.push_back(r), d.ink = unite(d.ink, r);
        }
    }
    return d;
}

}  // namespace

// ============================================================================================
// Figure
// ============================================================================================

Figure::Figure(double width_in, double height_in, double dpi) : impl_(std::make_unique<FigureImpl>()) {
    if (!(width_in > 0 && height_in > 0 && dpi > 0) || width_in * dpi > 20000 ||
        height_in * dpi > 20000)
        throw std::runtime_error("plot: figure size " + format_g(width_in) + " x " +
                                 format_g(height_in) + " in at " + format_g(dpi) +
                                 " dpi -- use positive sizes under 20000 pixels");
    impl_->w_in = width_in, impl_->h_in = height_in, impl_->dpi = dpi;
}
Figure::~Figure() = default;

double Figure::dpi() const { return impl_->dpi; }
int Figure::width_px() const { return impl_->W(); }
int Figure::height_px() const { return impl_->H(); }

Axes& Figure::subplot(int rows, int cols, int index) {
    FigureImpl& F = *impl_;
    if (rows <= 0 || cols <= 0 || index < 0 || index >= rows * cols)
        throw std::runtime_error("plot: subplot(" + std::to_string(rows) + ", " +
                                 std::to_string(cols) + ", " + std::to_string(index) +
                                 ") -- index counts from 0 to rows * cols - 1");
    if (F.rows == 0) F.rows = rows, F.cols = cols, F.axes.resize(size_t(rows) * cols);
    if (F.rows != rows || F.cols != cols)
        throw std::runtime_error("plot: this figure's grid is " + std::to_string(F.rows) + " x " +
                                 std::to_string(F.cols) + " -- use the same grid for every subplot");
    if (!F.axes[index]) F.axes[index] = std::make_unique<Axes>(this, index / cols, index % cols);
    F.laid_out = false;
    return *F.axes[index];
}

void Figure::colorbar(const Image& im, Axes& ax) {
    ax.impl_->cbar = &im;
    impl_->laid_out = false;
}

void Figure::tight_layout() {
    impl_->tight = true;
    impl_->laid_out = false;
}

void Figure::layout() {
    FigureImpl& F = *impl_;
    if (F.laid_out) return;
    check_font();
    const double W = F.W(), H = F.H(), dpi = F.dpi;
    const int R = std::max(1, F.rows), C = std::max(1, F.cols);

    for (auto& ax : F.axes) {
        if (!ax) continue;
        AxesImpl& A = *ax->impl_;
        std::tie(A.xa.lo, A.xa.hi) = auto_limits(A, true);
        std::tie(A.ya.lo, A.ya.hi) = auto_limits(A, false);
    }

    // Per grid cell: how far its drawing reaches beyond the cell on each side (pixels).
    std::vector<double> dl(R * C, 0), dr(R * C, 0), dt(R * C, 0), db(R * C, 0);
    auto place = [&](bool tight) {
        double left, right, top, bottom, gap_w, gap_h;
        if (!tight) {  // matplotlib's default subplot parameters
            left = 0.125 * W, right = 0.1 * W, bottom = 0.11 * H, top = 0.12 * H;
            double cw = (W - left - right) / (C + 0.2 * (C - 1)), ch = (H - top - bottom) / (R + 0.2 * (R - 1));
            gap_w = 0.2 * cw, gap_h = 0.2 * ch;
        } else {  // tight_layout: margins and gaps are the largest overhangs plus a pad
            double pad = F.pt(kTightPad * kFontSize);
            left = right = top = bottom = 0;
            gap_w = gap_h = 0;
            for (int r = 0; r < R; ++r) {
                left = std::max(left, dl[r * C]), right = std::max(right, dr[r * C + C - 1]);
                for (int c = 0; c + 1 < C; ++c) gap_w = std::max(gap_w, dr[r * C + c] + dl[r * C + c + 1]);
            }
            for (int c = 0; c < C; ++c) {
                top = std::max(top, dt[c]), bottom = std::max(bottom, db[(R - 1) * C + c]);
                for (int r = 0; r + 1 < R; ++r) gap_h = std::max(gap_h, db[r * C + c] + dt[(r + 1) * C + c]);
            }
            left += pad, right += pad, top += pad, bottom += pad, gap_w += pad, gap_h += pad;
        }
        double cw = (W - left - right - gap_w * (C - 1)) / C;
        double ch = (H - top - bottom - gap_h * (R - 1)) / R;
        if (cw < 10 || ch < 10)
            throw std::runtime_error("plot: the figure is too small for its labels -- make it larger");
        for (auto& ax : F.axes) {
            if (!ax) continue;
            AxesImpl& A = *ax->impl_;
            double sx0 = left + A.col * (cw + gap_w), sy0 = top + A.row * (ch + gap_h);
            double sx1 = sx0 + cw, sy1 = sy0 + ch;
            // Spines on pixel centres keep them crisp.
            auto snap_box = [&](double v) { return snap(v, F.pt(kSpineWidth)); };
            double main_x1 = A.cbar ? sx0 + 0.80 * cw : sx1;
            A.box = {snap_box(sx0), snap_box(sy0), snap_box(main_x1), snap_box(sy1)};
            if (A.cbar) {  // colorbar: pad .05, slot .15 of the cell, 20 times taller than wide
                double h = A.box.y1 - A.box.y0;
                double w = std::min(0.15 * cw, h / 20);
                double cx0 = sx0 + 0.85 * cw;
                A.cbar_box = {snap_box(cx0), A.box.y0, snap_box(cx0 + w), A.box.y1};
                A.cbar_ticks.clear();
                double lo = std::min(A.cbar->vmin, A.cbar->vmax), hi = std::max(A.cbar->vmin, A.cbar->vmax);
                int space = (int)std::floor(h * 72 / dpi / (kFontSize * 2));
                for (double t : nice_ticks_impl(lo, hi, std::clamp(space, 1, 9), false))
                    if (t >= lo - 1e-9 * (hi - lo) && t <= hi + 1e-9 * (hi - lo)) A.cbar_ticks.push_back(t);
                A.cbar_labels = format_ticks(A.cbar_ticks);
            }
            bool image = !A.images.empty();
            compute_ticks(A.xa, true, image, A.box.x1 - A.box.x0, dpi);
            compute_ticks(A.ya, false, image, A.box.y1 - A.box.y0, dpi);
            Decor d = decorate(A, dpi, nullptr);
            int k = A.row * C + A.col;
            dl[k] = std::max(0.0, sx0 - d.ink.x0), dr[k] = std::max(0.0, d.ink.x1 - sx1);
            dt[k] = std::max(0.0, sy0 - d.ink.y0), db[k] = std::max(0.0, d.ink.y1 - sy1);
        }
    };
    place(false);
    if (F.tight) {
        place(true);  // ticks may change with the new sizes: settle once more
        place(true);
    }
    F.laid_out = true;
}

// ============================================================================================
// Rendering
// ============================================================================================

namespace {

struct LegendEntry {
    const LineArtist* line;
    TextLine text;
};

void draw_legend(Canvas& cv, const AxesImpl& A, double dpi) {
    std::vector<const LineArtist*> items;
    for (const LineArtist& l : A.lines)
        if (!l.label.empty()) items.push_back(&l);
    if (items.empty()) return;
    double F = A.legend_style.fontsize * dpi / 72;  // matplotlib sizes the legend in font sizes
    double pad = 0.4 * F, spacing = 0.5 * F, handle = 2.0 * F, gap = 0.8 * F, inset = 0.5 * F;
    std::vector<TextLine> texts;
    double text_w = 0, content_h = 0;
    for (const LineArtist* l : items) {
        texts.push_back(layout_text(l->label, F));
        const TextLine& t = texts.back();
        text_w = std::max(text_w, t.width);
        content_h += std::max(t.ascent, 0.7 * F) + t.descent;
    }
    content_h += spacing * (items.size() - 1);
    double w = 2 * pad + handle + gap + text_w, h = 2 * pad + content_h;

    const Axes::Box& b = A.box;
    auto at = [&](const std::string& loc) -> std::pair<double, double> {  // top-left corner
        double left = b.x0 + inset, right = b.x1 - inset - w, hc = (b.x0 + b.x1 - w) / 2;
        double top = b.y0 + inset, bottom = b.y1 - inset - h, vc = (b.y0 + b.y1 - h) / 2;
        if (loc == "upper right") return {right, top};
        if (loc == "upper left") return {left, top};
        if (loc == "lower left") return {left, bottom};
        if (loc == "lower right") return {right, bottom};
        if (loc == "right" || loc == "center right") return {right, vc};
        if (loc == "center left") return {left, vc};
        if (loc == "lower center") return {hc, bottom};
        if (loc == "upper center") return {hc, top};
        if (loc == "center") return {hc, vc};
        throw std::runtime_error("plot: legend loc '" + loc +
                                 "' -- use best, upper right, upper left, lower left, lower right, "
                                 "right, center left, center right, lower center, upper center "
                                 "or center");
    };
    // Data in pixels, for 'best'.
    std::vector<std::vector<std::pair<double, double>>> paths;
    auto tx = [&](double v) {
        return b.x0 + (A.xa.fwd(v) - A.xa.fwd(A.xa.lo)) / (A.xa.fwd(A.xa.hi) - A.xa.fwd(A.xa.lo)) * (b.x1 - b.x0);
    };
    auto ty = [&](double v) {
        return b.y1 - (A.ya.fwd(v) - A.ya.fwd(A.ya.lo)) / (A.ya.fwd(A.ya.hi) - A.ya.fwd(A.ya.lo)) * (b.y1 - b.y0);
    };
    for (const LineArtist& l : A.lines) {
        std::vector<std::pair<double, double>> p;
        if (l.hline) p = {{b.x0, ty(l.y[0])}, {b.x1, ty(l.y[0])}};
        else
            for (size_t i = 0; i < l.x.size(); ++i)
                if (usable(A.xa, l.x[i]) && usable(A.ya, l.y[i])) p.push_back({tx(l.x[i]), ty(l.y[i])});
        paths.push_back(std::move(p));
    }
    std::pair<double, double> pos;
    if (A.legend_style.loc == "best") {
        // matplotlib's choice: the first place, in this order, that covers the fewest data
        // points plus lines crossing it.
        const char* order[] = {"upper right", "upper left", "lower left", "lower right", "right",
                               "center left", "center right", "lower center", "upper center", "center"};
        int best = -1;
        for (const char* loc : order) {
            auto [x0, y0] = at(loc);
            double x1 = x0 + w, y1 = y0 + h;
            auto in = [&](double x, double y) { return x >= x0 && x <= x1 && y >= y0 && y <= y1; };
            int bad = 0;
            for (const auto& p : paths) {
                bool crosses = false;
                for (size_t i = 0; i < p.size(); ++i) {
                    if (in(p[i].first, p[i].second)) ++bad, crosses = true;
                    if (i == 0 || crosses) continue;
                    // Does segment i-1 -> i cross the box? Sample it finely enough.
                    auto [ax, ay] = p[i - 1];
                    auto [bx, by] = p[i];
                    int n = 2 + (int)(std::hypot(bx - ax, by - ay) / 2);
                    for (int k = 1; k < n && !crosses; ++k)
                        crosses = in(ax + (bx - ax) * k / n, ay + (by - ay) * k / n);
                }
                bad += crosses;
            }
            if (best < 0 || bad < best) best = bad, pos = {x0, y0};
            if (bad == 0) break;
        }
    } else {
        pos = at(A.legend_style.loc);
    }
    auto [x0, y0] = pos;
    double x1 = x0 + w, y1 = y0 + h, r = 0.2 * F;
    double edge = 1.0 * dpi / 72 / 2;
    // The frame: white at alpha .8 with a light grey rounded edge.
    paint(cv, cv.full(), x0 - 2, y0 - 2, x1 + 2, y1 + 2, white, 0.8, [&](double x, double y) {
        return clamp01(0.5 - rounded_rect_sd(x, y, x0, y0, x1, y1, r));
    });
    paint(cv, cv.full(), x0 - 2, y0 - 2, x1 + 2, y1 + 2, kLegendEdge, 0.8, [&](double x, double y) {
        return clamp01(edge + 0.5 - std::abs(rounded_rect_sd(x, y, x0, y0, x1, y1, r)));
    });
    double y = y0 + pad;
    for (size_t i = 0; i < items.size(); ++i) {
        const LineArtist& l = *items[i];
        const TextLine& t = texts[i];
        double baseline = y + std::max(t.ascent, 0.7 * F);
        double hx0 = x0 + pad, hx1 = hx0 + handle, hy = baseline - 0.35 * F;
        if (l.linestyle)
            draw_polyline(cv, {{hx0, hy}, {hx1, hy}}, l.lw * dpi / 72, l.linestyle == 2, l.color,
                          l.alpha, cv.full());
        if (l.marker)
            draw_marker(cv, l.marker, (hx0 + hx1) / 2, hy, l.ms * dpi / 72, kMarkerEdge * dpi / 72,
                        l.color, l.alpha, cv.full());
        draw_text(&cv, l.label, hx1 + gap, baseline, A.legend_style.fontsize, dpi, black, ha_left,
                  va_baseline);
        y = baseline + t.descent + spacing;
    }
}

void draw_axes(Canvas& cv, const AxesImpl& A, double dpi) {
    auto pt = [&](double p) { return p * dpi / 72; };
    const Axes::Box& b = A.box;
    Clip clip = intersect(cv.full(), clip_of(b.x0, b.y0, b.x1, b.y1));
    auto fx = [&](double v) {
        return (A.xa.fwd(v) - A.xa.fwd(A.xa.lo)) / (A.xa.fwd(A.xa.hi) - A.xa.fwd(A.xa.lo));
    };
    auto fy = [&](double v) {
        return (A.ya.fwd(v) - A.ya.fwd(A.ya.lo)) / (A.ya.fwd(A.ya.hi) - A.ya.fwd(A.ya.lo));
    };
    auto tx = [&](double v) { return b.x0 + fx(v) * (b.x1 - b.x0); };
    auto ty = [&](double v) { return b.y1 - fy(v) * (b.y1 - b.y0); };

    // Images: each pixel shows the cell under its centre (nearest neighbour, like imshow).
    for (const auto& im : A.images) {
        double span = im->vmax - im->vmin;
        for (int py = clip.y0; py < clip.y1; ++py) {
            double fyv = (b.y1 - (py + 0.5)) / (b.y1 - b.y0);
            double yv = A.ya.lo + fyv * (A.ya.hi - A.ya.lo);
            int r = (int)std::floor(yv + 0.5);
            if (r < 0 || r >= im->rows) continue;
            for (int px = clip.x0; px < clip.x1; ++px) {
                double fxv = ((px + 0.5) - b.x0) / (b.x1 - b.x0);
                double xv = A.xa.lo + fxv * (A.xa.hi - A.xa.lo);
                int c = (int)std::floor(xv + 0.5);
                if (c < 0 || c >= im->cols) continue;
                double v = im->data[size_t(r) * im->cols + c];
                if (!std::isfinite(v)) continue;
                cv.set(px, py, im->cmap(span == 0 ? 0 : (v - im->vmin) / span));
            }
        }
    }
    // Grid at the major ticks, under the data.
    if (A.grid_alpha >= 0) {
        for (const auto& t : A.xa.ticks) {
            if (!t.major) continue;
            double x = snap(tx(t.v), pt(kGridWidth));
            draw_polyline(cv, {{x, b.y0}, {x, b.y1}}, pt(kGridWidth), false, kGridColor, A.grid_alpha, clip);
        }
        for (const auto& t : A.ya.ticks) {
            if (!t.major) continue;
            double y = snap(ty(t.v), pt(kGridWidth));
            draw_polyline(cv, {{b.x0, y}, {b.x1, y}}, pt(kGridWidth), false, kGridColor, A.grid_alpha, clip);
        }
    }
    // Lines, then their markers; points a log axis cannot show break the line.
    for (const LineArtist& l : A.lines) {
        if (l.hline) {
            if (!usable(A.ya, l.y[0])) continue;
            double y = ty(l.y[0]);
            draw_polyline(cv, {{b.x0, y}, {b.x1, y}}, pt(l.lw), l.linestyle == 2, l.color, l.alpha, clip);
            continue;
        }
        if (l.linestyle) {
            std::vector<std::pair<double, double>> run;
            auto flush = [&] {
                if (run.size() > 1) draw_polyline(cv, run, pt(l.lw), l.linestyle == 2, l.color, l.alpha, clip);
                run.clear();
            };
            for (size_t i = 0; i < l.x.size(); ++i) {
                if (usable(A.xa, l.x[i]) && usable(A.ya, l.y[i])) run.push_back({tx(l.x[i]), ty(l.y[i])});
                else flush();
            }
            flush();
        }
        if (l.marker)
            for (size_t i = 0; i < l.x.size(); ++i)
                if (usable(A.xa, l.x[i]) && usable(A.ya, l.y[i]))
                    draw_marker(cv, l.marker, tx(l.x[i]), ty(l.y[i]), pt(l.ms), pt(kMarkerEdge),
                                l.color, l.alpha, clip);
    }
    // Text annotations at data coordinates.
    for (const TextArtist& t : A.texts) {
        HAlign ha = t.style.ha == right ? ha_right : (t.style.ha == center ? ha_center : ha_left);
        VAlign va = t.style.va == top ? va_top
                    : t.style.va == center ? va_center
                    : t.style.va == bottom ? va_bottom
                                           : va_baseline;
        draw_text(&cv, t.s, tx(t.x), ty(t.y), t.style.size, dpi, t.style.color, ha, va);
    }
    // Spines and outward ticks.
    double sw = pt(kSpineWidth);
    std::vector<Seg> spines = {{b.x0, b.y0, b.x1, b.y0}, {b.x1, b.y0, b.x1, b.y1},
                               {b.x1, b.y1, b.x0, b.y1}, {b.x0, b.y1, b.x0, b.y0}};
    stroke(cv, spines, sw, false, black, 1, cv.full());
    for (const auto& t : A.xa.ticks) {
        double x = snap(tx(t.v), pt(t.major ? kMajorTickWidth : kMinorTickWidth));
        double len = pt(t.major ? kMajorTickLen : kMinorTickLen);
        stroke(cv, {{x, b.y1, x, b.y1 + len}}, pt(t.major ? kMajorTickWidth : kMinorTickWidth), true,
               black, 1, cv.full());
    }
    for (const auto& t : A.ya.ticks) {
        double y = snap(ty(t.v), pt(t.major ? kMajorTickWidth : kMinorTickWidth));
        double len = pt(t.major ? kMajorTickLen : kMinorTickLen);
        stroke(cv, {{b.x0, y, b.x0 - len, y}}, pt(t.major ? kMajorTickWidth : kMinorTickWidth), true,
               black, 1, cv.full());
    }
    // Colorbar: the colormap from vmin (bottom) to vmax (top), ticks on the right.
    if (A.cbar) {
        const Axes::Box& c = A.cbar_box;
        Clip cc = intersect(cv.full(), clip_of(c.x0, c.y0, c.x1, c.y1));
        for (int py = cc.y0; py < cc.y1; ++py) {
            double f = (c.y1 - (py + 0.5)) / (c.y1 - c.y0);
            Color col = A.cbar->cmap(f);
            for (int px = cc.x0; px < cc.x1; ++px) cv.set(px, py, col);
        }
        std::vector<Seg> outline = {{c.x0, c.y0, c.x1, c.y0}, {c.x1, c.y0, c.x1, c.y1},
                                    {c.x1, c.y1, c.x0, c.y1}, {c.x0, c.y1, c.x0, c.y0}};
        stroke(cv, outline, sw, false, black, 1, cv.full());
        for (double t : A.cbar_ticks) {
            double f = (t - A.cbar->vmin) / (A.cbar->vmax - A.cbar->vmin);
            double y = snap(c.y1 - f * (c.y1 - c.y0), pt(kMajorTickWidth));
            stroke(cv, {{c.x1, y, c.x1 + pt(kMajorTickLen), y}}, pt(kMajorTickWidth), true, black, 1,
                   cv.full());
        }
    }
    decorate(A, dpi, &cv);
    if (A.show_legend) draw_legend(cv, A, dpi);
}

}  // namespace

const Pixels& Figure::pixels() {
    layout();
    FigureImpl& F = *impl_;
    F.canvas.reset(F.W(), F.H());
    for (auto& ax : F.axes)
        if (ax) draw_axes(F.canvas, *ax->impl_, F.dpi);
    F.pixels.width = F.canvas.w, F.pixels.height = F.canvas.h;
    F.pixels.rgb.resize(F.canvas.rgb.size());
    for (size_t i = 0; i < F.canvas.rgb.size(); ++i)
        F.pixels.rgb[i] = (uint8_t)(std::clamp(F.canvas.rgb[i], 0.0f, 1.0f) * 255 + 0.5f);
    return F.pixels;
}

std::vector<uint8_t> Figure::png_bytes(bool bbox_tight) {
    const Pixels& p = pixels();
    int x0 = 0, y0 = 0, x1 = p.width, y1 = p.height;
    if (bbox_tight) {  // the drawn content plus 0.1 inch, like bbox_inches='tight'
        int mx0 = p.width, my0 = p.height, mx1 = -1, my1 = -1;
        for (int y = 0; y < p.height; ++y)
            for (int x = 0; x < p.width; ++x) {
                const uint8_t* c = p.at(x, y);
                if (c[0] != 255 || c[1] != 255 || c[2] != 255)
                    mx0 = std::min(mx0, x), mx1 = std::max(mx1, x), my0 = std::min(my0, y), my1 = std::max(my1, y);
            }
        if (mx1 >= 0) {
            int pad = (int)std::lround(0.1 * impl_->dpi);
            x0 = std::max(0, mx0 - pad), y0 = std::max(0, my0 - pad);
            x1 = std::min(p.width, mx1 + 1 + pad), y1 = std::min(p.height, my1 + 1 + pad);
        }
    }
    std::vector<uint8_t> out;
    auto sink = [](void* ctx, void* data, int size) {
        auto* v = static_cast<std::vector<uint8_t>*>(ctx);
        v->insert(v->end(), (uint8_t*)data, (uint8_t*)data + size);
    };
    const uint8_t* start = p.rgb.data() + (size_t(y0) * p.width + x0) * 3;
    if (!stbi_write_png_to_func(sink, &out, x1 - x0, y1 - y0, 3, start, p.width * 3))
        throw std::runtime_error("plot: PNG encoding failed");
    return out;
}

void Figure::save_png(const std::string& path, bool bbox_tight) {
    std::vector<uint8_t> png = png_bytes(bbox_tight);
    namespace fs = std::filesystem;
    auto fail = [&](const std::string& why) {
        throw std::runtime_error("cannot write figure " + path + ": " + why);
    };
    fs::path target(path);
    if (target.filename().empty()) fail("the path names no file");
    std::error_code ec;
    if (target.has_parent_path()) {
        fs::create_directories(target.parent_path(), ec);
        if (ec) fail("cannot create folder " + target.parent_path().string() + ": " + ec.message());
    }
    // Write beside the target and rename, so a reader never sees half a PNG.
    std::string tmp = path + ".tmp" + std::to_string(::getpid());
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) fail(std::strerror(errno));
    size_t wrote = std::fwrite(png.data(), 1, png.size(), f);
    int err = wrote == png.size() ? 0 : errno;
    if (std::fclose(f) != 0 && !err) err = errno;
    if (err || wrote != png.size()) {
        std::remove(tmp.c_str());
        fail(err ? std::strerror(err) : "short write");
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        int e = errno;
        std::remove(tmp.c_str());
        fail(std::strerror(e));
    }
}

// ============================================================================================
// Fonts and text, for callers
// ============================================================================================

std::string font_path() {
    const char* env = std::getenv("PLOT_FONT");
    return env && *env ? env : PROJECT_FONT;
}

void check_font() { get_font(); }

std::pair<double, double> text_extent(const std::string& s, double size_pt, double dpi) {
    TextLine l = layout_text(s, size_pt * dpi / 72);
    return {l.width, l.ascent + l.descent};
}

}  // namespace plot
