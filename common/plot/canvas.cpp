// The canvas's drawing primitives: clipping and pixel snapping, antialiased strokes (solid and
// dashed polylines), the markers o s ^, and the rounded rectangle of the legend frame.
// Read common/plot/internal.h before it (the Canvas type and paint are there).
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "common/plot/internal.h"

namespace plot {

// ==== Canvas: RGB floats in 0..1, composited with "over" at a coverage in 0..1 ==============

Clip intersect(Clip a, Clip b) {
    return {std::max(a.x0, b.x0), std::max(a.y0, b.y0), std::min(a.x1, b.x1), std::min(a.y1, b.y1)};
}

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

// ---- strokes: a polyline's coverage is the max over its segments, composited once ---------

namespace {

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

}  // namespace

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

double rounded_rect_sd(double x, double y, double x0, double y0, double x1, double y1, double r) {
    double cx = (x0 + x1) / 2, cy = (y0 + y1) / 2;
    double qx = std::abs(x - cx) - ((x1 - x0) / 2 - r), qy = std::abs(y - cy) - ((y1 - y0) / 2 - r);
    double outside = std::hypot(std::max(qx, 0.0), std::max(qy, 0.0));
    return outside + std::min(std::max(qx, qy), 0.0) - r;
}

}  // namespace plot
