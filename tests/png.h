// PNG files decoded for the tests: the figures compared pixel by pixel, a rendered plot read back.
// stb_image is compiled once, in tests/png.cpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace testutil {

struct Decoded {
    int w = 0, h = 0;          // w = h = 0: the bytes were not a PNG stb_image could decode
    std::vector<uint8_t> rgb;  // (h, w, 3)
    const uint8_t* at(int x, int y) const { return &rgb[(size_t(y) * w + x) * 3]; }
};

Decoded decode_png(const void* bytes, size_t size);

}  // namespace testutil
