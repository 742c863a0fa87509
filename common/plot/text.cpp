// Text: the font loaded with stb_truetype (NanumGothic, for the Korean labels), glyphs rasterised
// and cached, one line laid out (superscripts for 10^{3}) and drawn or measured; and plot.h's
// font calls (font_path, check_font, text_extent). Read common/plot/canvas.cpp before it.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/plot/internal.h"
#include "common/program/terminal.h"

// Static copies: another file of the project may define the same stb implementations.
#define STBTT_STATIC
#define STB_TRUETYPE_IMPLEMENTATION
#include <stb_truetype.h>

#ifndef PROJECT_FONT
#define PROJECT_FONT "/usr/share/fonts/truetype/nanum/NanumGothic.ttf"
#endif

namespace plot {

// ==== Text: stb_truetype glyphs, cached per (glyph, size, quarter-pixel shift), alpha-blended ===

namespace {

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
        if (!f.read((char*)font->bytes.data(), (std::streamsize)font->bytes.size()))
            font->bytes.clear();
    }
    int offset = font->bytes.empty() ? -1 : stbtt_GetFontOffsetForIndex(font->bytes.data(), 0);
    if (offset < 0 || !stbtt_InitFont(&font->info, font->bytes.data(), offset))
        throw std::runtime_error("font not found: " + path +
                                 " -- install with: sudo apt-get install fonts-nanum");
    const Font& ref = *font;
    g_fonts[path] = std::move(font);
    return ref;
}

// The code points of s; a byte that does not start a well-formed character is U+FFFD.
std::vector<int> utf8_decode(const std::string& s) {
    std::vector<int> out;
    for (size_t i = 0; i < s.size();) {
        char32_t c;
        out.push_back(term::decode_utf8(s, i, c) ? int(c) : 0xFFFD);
    }
    return out;
}

}  // namespace

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

namespace {

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

}  // namespace

// Draws (cv != nullptr) or only measures one line of text anchored at (x, y) and returns its
// box. Rotated text turns 90 degrees counter-clockwise about the anchor after aligning in its
// own frame (matplotlib's rotation_mode='anchor', used for the y label).
Rect draw_text(Canvas* cv, const std::string& s, double x, double y, double size_pt, double dpi,
               const Color& color, HAlign ha, VAlign va, bool rotated) {
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

// ==== Fonts and text, for callers ===========================================================

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
