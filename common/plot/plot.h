// A small matplotlib-like plotting library: Figure -> subplots -> Axes -> PNG.
//
//   plot::Figure fig(11, 4, 150);                  // inches, dpi (the article: 11 x 4 in, 150 dpi)
//   plot::Axes& ax = fig.subplot(1, 2, 0);         // rows, cols, index (0-based, row-major)
//   ax.plot(dks, pmax, "o-", "스케일링 없음");     // fmt: marker o s ^, line - --, each optional
//   ax.axhline(0.125, {.fmt = "--", .color = plot::gray, .lw = 1, .label = "균등분포 1/8"});
//   ax.set_xscale("log"); ax.use_plain_log_labels('x');
//   ax.set_xlabel("d_k"); ax.grid(0.3); ax.legend();
//   plot::Image& im = ax.imshow(PE, 64, 64, {.cmap = "RdBu_r", .vmin = -1, .vmax = 1});
//   fig.colorbar(im, ax);
//   fig.tight_layout(); fig.save_png("figures/2-scaling.png");
//
// Units follow matplotlib: sizes in points (1/72 inch) scaled by the dpi, colours as RGB in 0..1,
// the tab10 colour cycle per Axes, default log/linear tick locators and formatters.
// Errors (missing font, unwritable file, bad arguments) throw std::runtime_error with one line
// that names the problem and the fix; a program's main should catch it, print e.what(), exit 1.
//
// Text may contain "^{...}" for a superscript (the log-axis labels 10^{3}, 2^{7} use it).
//
// This is the only header callers include. The code is beside it in common/plot/: internal.h
// (shared internals), then canvas.cpp, text.cpp, axes.cpp, layout.cpp, render.cpp, figure.cpp;
// ticks.cpp holds the tick locators, the formatters and the colormaps.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace plot {

// ---- colours ----------------------------------------------------------------------------
struct Color {
    double r = 0, g = 0, b = 0;  // 0..1
};
Color hex(const char* rrggbb);  // "#1f77b4" or "1f77b4"

inline constexpr Color black{0, 0, 0};
inline constexpr Color white{1, 1, 1};
inline constexpr Color gray{128 / 255.0, 128 / 255.0, 128 / 255.0};  // matplotlib 'gray'
// matplotlib's tab10 cycle: C0 blue, C1 orange, C2 green, C3 red, C4 purple, ...
inline constexpr Color tab10[10] = {
    {0x1f / 255.0, 0x77 / 255.0, 0xb4 / 255.0}, {0xff / 255.0, 0x7f / 255.0, 0x0e / 255.0},
    {0x2c / 255.0, 0xa0 / 255.0, 0x2c / 255.0}, {0xd6 / 255.0, 0x27 / 255.0, 0x28 / 255.0},
    {0x94 / 255.0, 0x67 / 255.0, 0xbd / 255.0}, {0x8c / 255.0, 0x56 / 255.0, 0x4b / 255.0},
    {0xe3 / 255.0, 0x77 / 255.0, 0xc2 / 255.0}, {0x7f / 255.0, 0x7f / 255.0, 0x7f / 255.0},
    {0xbc / 255.0, 0xbd / 255.0, 0x22 / 255.0}, {0x17 / 255.0, 0xbe / 255.0, 0xcf / 255.0}};

// A colormap: "RdBu_r", "RdBu", "Blues", "Blues_r", "Reds", "Greys", "viridis" (256-entry table
// like matplotlib's: value -> lut[floor(t * 256)], clipped to the ends).
class Colormap {
public:
    explicit Colormap(const std::string& name);  // throws on an unknown name, listing the known
    Color operator()(double t) const;            // t in [0, 1]
    const std::string& name() const { return name_; }

private:
    std::string name_;
    std::vector<Color> lut_;  // 256 entries
};

// ---- styles (designated initialisers: {.fmt = "--", .color = plot::gray, .lw = 1}) --------
struct Style {
    std::string fmt = "-";       // marker "o" "s" "^" (optional) then line "-" "--" (optional)
    std::optional<Color> color = {};  // default: the next tab10 colour of this Axes
    double lw = 1.5;             // line width in points
    double ms = 6;               // marker size in points
    std::string label = {};      // legend entry; empty: not in the legend
    double alpha = 1;
};

enum Align { left, center, right, top, bottom, baseline };

struct TextStyle {
    Align ha = left;      // horizontal: left | center | right
    Align va = baseline;  // vertical: top | center | bottom | baseline
    Color color = black;
    double size = 10;  // points
};

struct ImageStyle {
    std::string cmap = "viridis";
    std::optional<double> vmin = {}, vmax = {};  // default: the data's min and max
};

struct LegendStyle {
    std::string loc = "best";  // best | upper right | upper left | lower left | lower right |
                               // right | center left | center right | lower center |
                               // upper center | center
    double fontsize = 10;
};

// Numbers for plotting: built from vector<double>, vector<float>, vector<int> or {1, 2, 3}.
struct Values {
    std::vector<double> v;
    Values() = default;
    Values(const std::vector<double>& x) : v(x) {}
    Values(const std::vector<float>& x) : v(x.begin(), x.end()) {}
    Values(const std::vector<int>& x) : v(x.begin(), x.end()) {}
    Values(const std::vector<long>& x) : v(x.begin(), x.end()) {}
    Values(std::initializer_list<double> x) : v(x) {}
    Values(const float* p, size_t n) : v(p, p + n) {}
    Values(const double* p, size_t n) : v(p, p + n) {}
    size_t size() const { return v.size(); }
    double operator[](size_t i) const { return v[i]; }
};

// The image an Axes shows (returned by imshow, passed to Figure::colorbar).
struct Image {
    std::vector<double> data;  // (rows, cols) row-major
    int rows = 0, cols = 0;
    Colormap cmap{"viridis"};
    double vmin = 0, vmax = 1;
};

// A rendered RGB canvas, 3 bytes per pixel, row-major from the top-left corner.
struct Pixels {
    int width = 0, height = 0;
    std::vector<uint8_t> rgb;  // (height, width, 3)
    const uint8_t* at(int x, int y) const { return &rgb[(size_t(y) * width + x) * 3]; }
};

class Figure;
struct AxesImpl;

class Axes {
public:
    // Lines and markers; fmt as matplotlib: "o-", "s-", "^--", "--", "o" (markers only).
    // (fmt is a C string so that a braced Style, {.fmt = "--", .lw = 1}, picks the overload below.)
    void plot(const Values& x, const Values& y, const char* fmt = "-",
              const std::string& label = "");
    void plot(const Values& x, const Values& y, const Style& style);
    // A horizontal line across the whole axes at data y (matplotlib axhline).
    void axhline(double y, const Style& style = {});
    // A heatmap: data is (rows, cols) row-major; cell (r, c) is centred on (x=c, y=r), row 0
    // on top, aspect auto (fills the axes box). The returned Image lives as long as the Figure.
    Image& imshow(const Values& data, int rows, int cols, const ImageStyle& style = {});
    // Text at data coordinates (annotations on heatmaps).
    void text(double x, double y, const std::string& s, const TextStyle& style = {});

    void set_title(const std::string& s);
    void set_xlabel(const std::string& s);
    void set_ylabel(const std::string& s);
    void set_xlim(double lo, double hi);
    void set_ylim(double lo, double hi);
    // "linear" or "log" (base 10 or 2 for powers-of-two axes; labels 10^{k} / 2^{k}).
    void set_xscale(const std::string& scale, double base = 10);
    void set_yscale(const std::string& scale, double base = 10);
    // Fixed ticks; empty labels: formatted by the axis' formatter.
    void set_xticks(const std::vector<double>& ticks, const std::vector<std::string>& labels = {});
    void set_yticks(const std::vector<double>& ticks, const std::vector<std::string>& labels = {});
    // The article's helper: major ticks at subs * 10^k labelled like Python's f'{v:g}',
    // minor ticks unlabelled. axis is 'x' or 'y'.
    void use_plain_log_labels(char axis, std::vector<double> subs = {1.0});
    void grid(double alpha = 0.3);
    void legend(const LegendStyle& style = {});

    // Data -> canvas pixel (x right, y down) for the current layout; valid after
    // Figure::tight_layout() or a render (call Figure::layout() to force one).
    std::pair<double, double> data_to_pixel(double x, double y) const;
    // The axes box in canvas pixels: left, top, right, bottom.
    struct Box {
        double x0, y0, x1, y1;
    };
    Box box() const;
    // The current view limits (autoscaled if not set).
    std::pair<double, double> xlim() const;
    std::pair<double, double> ylim() const;
    // The ticks drawn for the current layout: value, label (minor ticks: "" unless a log axis
    // shows under two labelled decades), major or not.
    struct Tick {
        double value;
        std::string label;
        bool major;
    };
    std::vector<Tick> xticks() const;
    std::vector<Tick> yticks() const;

    Axes(Figure* fig, int row, int col);
    ~Axes();
    Axes(const Axes&) = delete;
    Axes& operator=(const Axes&) = delete;

private:
    friend class Figure;
    friend struct FigureImpl;
    std::unique_ptr<AxesImpl> impl_;
};

struct FigureImpl;

class Figure {
public:
    Figure(double width_in, double height_in, double dpi = 100);
    ~Figure();
    Figure(const Figure&) = delete;
    Figure& operator=(const Figure&) = delete;

    // The Axes at grid cell index (0-based, row-major) of a rows x cols grid; the same index
    // returns the same Axes.
    Axes& subplot(int rows, int cols, int index);
    // A colorbar for im beside ax (matplotlib's fraction .15, pad .05, aspect 20).
    void colorbar(const Image& im, Axes& ax);
    // Place the axes so tick labels, labels, titles and colorbars do not overlap
    // (plt.tight_layout, pad 1.08 x font size). Without it: matplotlib's default subplot box.
    void tight_layout();
    // Compute ticks and axes positions now (done by render and save_png anyway).
    void layout();

    // Render the whole canvas (width_in * dpi x height_in * dpi) and return it.
    const Pixels& pixels();
    // Render and write a PNG. bbox_tight (like savefig(bbox_inches='tight')) crops to the drawn
    // content plus 0.1 in. Creates the parent folder, writes a temp file and renames it;
    // throws std::runtime_error naming the path and the reason on failure.
    void save_png(const std::string& path, bool bbox_tight = true);
    // The PNG bytes save_png would write.
    std::vector<uint8_t> png_bytes(bool bbox_tight = true);

private:
    friend class Axes;
    std::unique_ptr<FigureImpl> impl_;
};

// ---- pieces that tests and curious readers may call directly ------------------------------
// matplotlib's MaxNLocator (steps 1, 2, 2.5, 5, 10): tick values covering [lo, hi] for at most
// nbins intervals; may reach beyond [lo, hi] by one step like matplotlib's raw ticks.
std::vector<double> nice_ticks(double lo, double hi, int nbins);
// Labels like matplotlib's ScalarFormatter: shared decimal places, ASCII minus.
std::vector<std::string> format_ticks(const std::vector<double>& ticks);
// Python's f'{v:g}'.
std::string format_g(double v);
// The font file used: $PLOT_FONT if set, else the build's PROJECT_FONT (NanumGothic).
std::string font_path();
// Throws the one-line "font not found: <path> -- install with: sudo apt-get install fonts-nanum"
// if the font cannot be loaded; renders call this lazily.
void check_font();
// Width and height (ascent + descent) in pixels of one line of text at size points and dpi.
std::pair<double, double> text_extent(const std::string& s, double size_pt, double dpi);

}  // namespace plot
