// Rendering: one Axes drawn onto the canvas (images, grid, lines and markers, text, spines and
// ticks, colorbar, labels, legend), and Figure::pixels, the whole canvas as 8-bit RGB.
// Read common/plot/layout.cpp before it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/plot/internal.h"

namespace plot {

// ==== Rendering =============================================================================

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
    auto tx = [&](double v) { return data_x_px(A, v); };
    auto ty = [&](double v) { return data_y_px(A, v); };
    for (const LineArtist& l : A.lines) {
        std::vector<std::pair<double, double>> p;
        if (l.hline) p = {{b.x0, ty(l.y[0])}, {b.x1, ty(l.y[0])}};
        else
            for (size_t i = 0; i < l.x.size(); ++i)
                if (usable(A.xa, l.x[i]) && usable(A.ya, l.y[i]))
                    p.push_back({tx(l.x[i]), ty(l.y[i])});
        paths.push_back(std::move(p));
    }
    std::pair<double, double> pos;
    if (A.legend_style.loc == "best") {
        // matplotlib's choice: the first place, in this order, that covers the fewest data
        // points plus lines crossing it.
        const char* order[] = {"upper right",  "upper left",  "lower left",   "lower right",
                               "right",        "center left", "center right", "lower center",
                               "upper center", "center"};
        int best = -1;
        for (const char* loc : order) {
            double x0, y0;  // not a structured binding: clang before 16 cannot capture one
            std::tie(x0, y0) = at(loc);
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
    const double x0 = pos.first, y0 = pos.second;
    double x1 = x0 + w, y1 = y0 + h, r = 0.2 * F;
    double edge = 1.0 * dpi / 72 / 2;
    // The frame: white at alpha .8 with a light grey rounded edge.
    paint(cv, cv.full(), x0 - 2, y0 - 2, x1 + 2, y1 + 2, white, 0.8, [&](double x, double y) {
        return clamp01(0.5 - rounded_rect_sd(x, y, x0, y0, x1, y1, r));
    });
    paint(cv, cv.full(), x0 - 2, y0 - 2, x1 + 2, y1 + 2, LEGEND_EDGE, 0.8, [&](double x, double y) {
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
            draw_marker(cv, l.marker, (hx0 + hx1) / 2, hy, l.ms * dpi / 72, MARKER_EDGE * dpi / 72,
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
    auto tx = [&](double v) { return data_x_px(A, v); };
    auto ty = [&](double v) { return data_y_px(A, v); };

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
            double x = snap(tx(t.v), pt(GRID_WIDTH));
            draw_polyline(cv, {{x, b.y0}, {x, b.y1}}, pt(GRID_WIDTH), false, GRID_COLOR,
                          A.grid_alpha, clip);
        }
        for (const auto& t : A.ya.ticks) {
            if (!t.major) continue;
            double y = snap(ty(t.v), pt(GRID_WIDTH));
            draw_polyline(cv, {{b.x0, y}, {b.x1, y}}, pt(GRID_WIDTH), false, GRID_COLOR,
                          A.grid_alpha, clip);
        }
    }
    // Lines, then their markers; points a log axis cannot show break the line.
    for (const LineArtist& l : A.lines) {
        if (l.hline) {
            if (!usable(A.ya, l.y[0])) continue;
            double y = ty(l.y[0]);
            draw_polyline(cv, {{b.x0, y}, {b.x1, y}}, pt(l.lw), l.linestyle == 2, l.color, l.alpha,
                          clip);
            continue;
        }
        if (l.linestyle) {
            std::vector<std::pair<double, double>> run;
            auto flush = [&] {
                if (run.size() > 1)
                    draw_polyline(cv, run, pt(l.lw), l.linestyle == 2, l.color, l.alpha, clip);
                run.clear();
            };
            for (size_t i = 0; i < l.x.size(); ++i) {
                if (usable(A.xa, l.x[i]) && usable(A.ya, l.y[i]))
                    run.push_back({tx(l.x[i]), ty(l.y[i])});
                else flush();
            }
            flush();
        }
        if (l.marker)
            for (size_t i = 0; i < l.x.size(); ++i)
                if (usable(A.xa, l.x[i]) && usable(A.ya, l.y[i]))
                    draw_marker(cv, l.marker, tx(l.x[i]), ty(l.y[i]), pt(l.ms), pt(MARKER_EDGE),
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
    double sw = pt(SPINE_WIDTH);
    std::vector<Seg> spines = {{b.x0, b.y0, b.x1, b.y0}, {b.x1, b.y0, b.x1, b.y1},
                               {b.x1, b.y1, b.x0, b.y1}, {b.x0, b.y1, b.x0, b.y0}};
    stroke(cv, spines, sw, false, black, 1, cv.full());
    for (const auto& t : A.xa.ticks) {
        double x = snap(tx(t.v), pt(t.major ? MAJOR_TICK_WIDTH : MINOR_TICK_WIDTH));
        double len = pt(t.major ? MAJOR_TICK_LEN : MINOR_TICK_LEN);
        stroke(cv, {{x, b.y1, x, b.y1 + len}}, pt(t.major ? MAJOR_TICK_WIDTH : MINOR_TICK_WIDTH),
               true, black, 1, cv.full());
    }
    for (const auto& t : A.ya.ticks) {
        double y = snap(ty(t.v), pt(t.major ? MAJOR_TICK_WIDTH : MINOR_TICK_WIDTH));
        double len = pt(t.major ? MAJOR_TICK_LEN : MINOR_TICK_LEN);
        stroke(cv, {{b.x0, y, b.x0 - len, y}}, pt(t.major ? MAJOR_TICK_WIDTH : MINOR_TICK_WIDTH),
               true, black, 1, cv.full());
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
            double y = snap(c.y1 - f * (c.y1 - c.y0), pt(MAJOR_TICK_WIDTH));
            stroke(cv, {{c.x1, y, c.x1 + pt(MAJOR_TICK_LEN), y}}, pt(MAJOR_TICK_WIDTH), true, black,
                   1, cv.full());
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

}  // namespace plot
