// The plotting library's internals shared by its .cpp files: matplotlib's default sizes, the
// float canvas and its drawing primitives, text layout, and the state behind Axes and Figure.
// Sizes follow matplotlib's defaults (rcParams): points, which become pixels as points * dpi / 72.
// Not part of the public API: callers include common/plot/plot.h, never this file.
// Read common/plot/plot.h before it; then the .cpp files in the order canvas, text, axes, layout,
// render, figure (ticks.cpp, the locators, formatters and colormaps, reads on its own).
#pragma once
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/plot/plot.h"

namespace plot {

// ---- matplotlib's defaults (points unless noted) ------------------------------------------
constexpr double FONT_SIZE = 10;   // font.size; tick labels, axis labels, legend
constexpr double TITLE_SIZE = 12;  // axes.titlesize 'large'
constexpr double MAJOR_TICK_LEN = 3.5, MAJOR_TICK_WIDTH = 0.8;
constexpr double MINOR_TICK_LEN = 2.0, MINOR_TICK_WIDTH = 0.6;
constexpr double TICK_PAD = 3.5;     // gap between a tick and its label
constexpr double SPINE_WIDTH = 0.8;  // axes.linewidth
constexpr double LABEL_PAD = 4;      // axes.labelpad
constexpr double TITLE_PAD = 6;      // axes.titlepad
constexpr double GRID_WIDTH = 0.8;   // grid.linewidth, colour #b0b0b0
constexpr double MARKER_EDGE = 1.0;  // lines.markeredgewidth
constexpr double TIGHT_PAD = 1.08;   // tight_layout pad, in font sizes
constexpr double MARGIN = 0.05;      // axes.xmargin / ymargin
const Color GRID_COLOR{0xb0 / 255.0, 0xb0 / 255.0, 0xb0 / 255.0};
const Color LEGEND_EDGE{0.8, 0.8, 0.8};

// ---- canvas.cpp: RGB floats in 0..1, composited with "over" at a coverage in 0..1 ---------

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

Clip intersect(Clip a, Clip b);
// The pixels whose centres lie inside a continuous box.
Clip clip_of(double x0, double y0, double x1, double y1);
double clamp01(double v);
// Agg's snapping of straight strokes: a pixel centre for odd widths, a pixel edge for even.
double snap(double v, double width_px);

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

struct Seg {
    double ax, ay, bx, by;
};

// A polyline's segments of width width_px, composited once (butt: square ends, for dashes).
void stroke(Canvas& cv, const std::vector<Seg>& segs, double width_px, bool butt, const Color& c,
            double alpha, Clip clip);
// A polyline, solid or dashed (matplotlib's '--').
void draw_polyline(Canvas& cv, const std::vector<std::pair<double, double>>& pts, double width_px,
                   bool dashed, const Color& c, double alpha, Clip clip);
// Markers 'o' 's' '^' of size ms_px with an edge of edge_px in the same colour.
void draw_marker(Canvas& cv, char m, double cx, double cy, double ms_px, double edge_px,
                 const Color& c, double alpha, Clip clip);
// Signed distance to a rounded rectangle (negative inside).
double rounded_rect_sd(double x, double y, double x0, double y0, double x1, double y1, double r);

// ---- text.cpp: stb_truetype glyphs, one line of text laid out, drawn or measured ----------

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
TextLine layout_text(const std::string& s, double size_px);

enum VAlign { va_top, va_center, va_bottom, va_baseline, va_center_baseline };
enum HAlign { ha_left, ha_center, ha_right };

struct Rect {
    double x0, y0, x1, y1;
};

// Draws (cv != nullptr) or only measures one line of text anchored at (x, y) and returns its
// box; rotated text turns 90 degrees counter-clockwise about the anchor (the y label).
Rect draw_text(Canvas* cv, const std::string& s, double x, double y, double size_pt, double dpi,
               const Color& color, HAlign ha, VAlign va, bool rotated = false);
Rect unite(const Rect& a, const Rect& b);

// ---- axes.cpp: what an Axes and a Figure hold; limits and ticks ---------------------------

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

// Data to canvas pixels inside the axes' box, through each axis's scale (linear or log): x grows
// rightwards from box.x0 at xa.lo, y upwards from box.y1 at ya.lo. view_fraction is 0 at a.lo
// and 1 at a.hi.
inline double view_fraction(const AxisState& a, double v) {
    return (a.fwd(v) - a.fwd(a.lo)) / (a.fwd(a.hi) - a.fwd(a.lo));
}
inline double data_x_px(const AxesImpl& A, double x) {
    return A.box.x0 + view_fraction(A.xa, x) * (A.box.x1 - A.box.x0);
}
inline double data_y_px(const AxesImpl& A, double y) {
    return A.box.y1 - view_fraction(A.ya, y) * (A.box.y1 - A.box.y0);
}

// Can axis a show v? (finite, and positive on a log axis)
bool usable(const AxisState& a, double v);
// Autoscale like matplotlib; (lo, hi) with lo > hi for an inverted axis.
std::pair<double, double> auto_limits(const AxesImpl& A, bool is_x);
// Ticks of one axis for the view [lo, hi] drawn over len_px pixels.
void compute_ticks(AxisState& a, bool is_x, bool integer, double len_px, double dpi);

// ---- layout.cpp: the boxes of every label -------------------------------------------------

// Marks the figure's layout stale; the next use lays it out again.
void invalidate(FigureImpl* F);

struct Decor {
    Rect ink;  // everything an axes draws (labels included), canvas pixels
    std::vector<Rect> xtick_boxes, ytick_boxes, cbar_boxes;
    Rect xlabel{}, ylabel{}, title{};
};

// Positions of tick labels, axis labels and title for the current boxes and ticks.
// With cv it draws them as well.
Decor decorate(const AxesImpl& A, double dpi, Canvas* cv);

// ---- ticks.cpp ----------------------------------------------------------------------------

// MaxNLocator's ticks for [lo, hi]; integer: whole steps only (an image's axes).
std::vector<double> nice_ticks_impl(double lo, double hi, int nbins, bool integer);

}  // namespace plot
