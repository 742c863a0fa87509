// The article's four tokens and its hand-picked weights (in practice they are learned): what
// main.cpp prints the attention of, and what the web page (web/) computes on.
#pragma once
#include "common/tensor.h"

struct Tokens {
    Tensor X;              // (n, d_model): one row per token
    Tensor W_Q, W_K, W_V;  // (d_model, d_k), d_model = d_k = 4
};

inline Tokens article_tokens() {
    return {Tensor::from({{0, 0, 1, 0}, {1, 1, 1, 0}, {1, 1, 0, 1}, {0, 0, 0, 1}}),
            Tensor::from({{0, -1, -1, -1}, {-1, 1, 1, -1}, {0, -1, 1, 1}, {0, -1, -1, 0}}),
            Tensor::from({{0, -1, 0, 1}, {1, -1, 0, 1}, {1, 1, -1, -1}, {0, 1, 1, 0}}),
            Tensor::from({{1, 0, 2, 0}, {0, 2, 0, 1}, {2, 1, 0, 0}, {0, 0, 1, 2}})};
}
