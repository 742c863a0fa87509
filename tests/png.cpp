#include "tests/png.h"

#define STBI_ONLY_PNG
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#include <stb_image.h>

namespace testutil {

Decoded decode_png(const void* bytes, size_t size) {
    Decoded d;
    int w = 0, h = 0, comp = 0;
    unsigned char* p = stbi_load_from_memory(static_cast<const unsigned char*>(bytes), (int)size,
                                             &w, &h, &comp, 3);
    if (p == nullptr) return d;
    d.w = w, d.h = h;
    d.rgb.assign(p, p + size_t(w) * h * 3);
    stbi_image_free(p);
    return d;
}

}  // namespace testutil
