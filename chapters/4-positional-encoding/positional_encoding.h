// Section 4's listing: the sinusoidal positional encoding of the paper.
//
//   PE[pos, 2i] = sin(pos / 10000^(2i/d)),   PE[pos, 2i+1] = cos(pos / 10000^(2i/d))
//
// The wavelength grows with the dimension: the first dimensions turn fast and tell neighbours
// apart, the last ones turn slowly and place a token in the whole sentence (the article's clock
// hands). Added to the token vectors, it gives every position its own input. Section 5's
// encoder-decoder adds it to both embeddings.
#pragma once
#include <cmath>
#include <cstdint>

#include "common/tensor.h"

// def positional_encoding(n, d):
//     pos = torch.arange(n).unsqueeze(1).float()
//     i = torch.arange(d).unsqueeze(0).float()
//     angle = pos / torch.pow(10000.0, (2 * (i // 2)) / d)
//     pe = torch.zeros(n, d)
//     pe[:, 0::2] = torch.sin(angle[:, 0::2])
//     pe[:, 1::2] = torch.cos(angle[:, 1::2])
//     return pe
//
// Element by element, in float32 as torch computes it. (n, d)
inline Tensor positional_encoding(int64_t n, int64_t d) {
    Tensor pe = Tensor::zeros({n, d});
    for (int64_t pos = 0; pos < n; pos++)
        for (int64_t i = 0; i < d; i++) {
            const float expo = float(2 * (i / 2)) / float(d);               // (2 * (i // 2)) / d
            const float angle = float(pos) / std::pow(10000.0f, expo);       // pos / 10000^expo
            pe.data()[pos * d + i] = i % 2 == 0 ? std::sin(angle) : std::cos(angle);  // 0::2, 1::2
        }
    return pe;
}
