// Figure: its size, the subplot grid, the colorbar and tight_layout requests, and PNG output
// with stb_image_write (the bbox_tight crop, the bytes, a save through a temp file). Its layout()
// is in layout.cpp and pixels() in render.cpp. Read common/plot/render.cpp before it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/plot/internal.h"
#include "common/program/atomic_file.h"

// Static copies: another file of the project may define the same stb implementations.
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>

namespace plot {

// ==== Figure ================================================================================

Figure::Figure(double width_in, double height_in, double dpi)
    : impl_(std::make_unique<FigureImpl>()) {
    if (!(width_in > 0 && height_in > 0 && dpi > 0) || width_in * dpi > 20000 ||
        height_in * dpi > 20000)
        throw std::runtime_error("plot: figure size " + format_g(width_in) + " x " +
                                 format_g(height_in) + " in at " + format_g(dpi) +
                                 " dpi -- use positive sizes under 20000 pixels");
    impl_->w_in = width_in, impl_->h_in = height_in, impl_->dpi = dpi;
}
Figure::~Figure() = default;

Axes& Figure::subplot(int rows, int cols, int index) {
    FigureImpl& F = *impl_;
    if (rows <= 0 || cols <= 0 || index < 0 || index >= rows * cols)
        throw std::runtime_error("plot: subplot(" + std::to_string(rows) + ", " +
                                 std::to_string(cols) + ", " + std::to_string(index) +
                                 ") -- index counts from 0 to rows * cols - 1");
    if (F.rows == 0) F.rows = rows, F.cols = cols, F.axes.resize(size_t(rows) * cols);
    if (F.rows != rows || F.cols != cols)
        throw std::runtime_error("plot: this figure's grid is " + std::to_string(F.rows) + " x " +
                                 std::to_string(F.cols) +
                                 " -- use the same grid for every subplot");
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

// ---- PNG output ---------------------------------------------------------------------------

std::vector<uint8_t> Figure::png_bytes(bool bbox_tight) {
    const Pixels& p = pixels();
    int x0 = 0, y0 = 0, x1 = p.width, y1 = p.height;
    if (bbox_tight) {  // the drawn content plus 0.1 inch, like bbox_inches='tight'
        int mx0 = p.width, my0 = p.height, mx1 = -1, my1 = -1;
        for (int y = 0; y < p.height; ++y)
            for (int x = 0; x < p.width; ++x) {
                const uint8_t* c = p.at(x, y);
                if (c[0] != 255 || c[1] != 255 || c[2] != 255) {
                    mx0 = std::min(mx0, x), mx1 = std::max(mx1, x);
                    my0 = std::min(my0, y), my1 = std::max(my1, y);
                }
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
    auto fail = [&](const std::string& why) {
        throw std::runtime_error("cannot write figure " + path + ": " + why);
    };
    if (path.empty() || path.back() == '/') fail("the path names no file");
    // A temporary file of this process's own beside the target, renamed into place: a reader
    // never sees half a PNG, and two programs drawing the same figure never share a file.
    try {
        atomic_file::write(path, std::string_view((const char*)png.data(), png.size()));
    } catch (const atomic_file::Error& e) {
        fail(e.what());
    }
}

}  // namespace plot
