// The FLOPs of one training step of chapter 7's encoder-decoder (bench-translate), counted from
// the shapes the step runs: a batch of B sentences padded to S source and T target positions,
// padding included (the step computes on it too).
//
// Products: each GEMM 2 M N K, forward and backward. A Linear (rows, in) -> (rows, out) is
// 2 rows in out; attention's Q K^T and P V are each 2 B n_q n_k d_model (the heads together:
// h d_head = d_model). Backward multiplies twice as much as forward: a product's two inputs
// both need a gradient, each one GEMM of the product's size. (torch's aten mm, addmm and bmm
// on the same model and shapes count the same: B = 64, S = 10, T = 7 is 772,448,256.)
//
// Elementwise: the rest of the step, counted apart, at the FLOPs per element each op spends,
// forward + backward, as common/ops.cpp and common/optim.cpp compute them (an exp or a square
// root is one): an estimate of a share small next to the products, not an exact count.
#pragma once
#include <cstdint>

namespace bench {

struct StepFlops {
    double products = 0;     // GEMMs and attention's two products
    double elementwise = 0;  // layer norms, adds, softmax, loss, Adam ...
};

// FLOPs per element, forward + backward.
constexpr double LAYER_NORM = 8 + 14;  // mean, variance, scale, shift; the backward's row sums
constexpr double ADD = 1 + 2;          // a residual, the positions, a scale: each input's += g
constexpr double BIAS = 1 + 1;
constexpr double RELU = 1 + 2;
constexpr double SOFTMAX = 5 + 5;      // max, exp, sum, divide; dot, subtract, scale, add
constexpr double SCALE = 1 + 2;        // the scores / sqrt(d_head)
constexpr double LOSS = 7 + 3;         // cross-entropy over the logits
constexpr double ADAM = 14;            // per parameter

// B sentences, S source and T target positions; the model's width d, heads, layers (encoder
// blocks = decoder blocks), target vocabulary and parameter count.
inline StepFlops step_flops(int64_t B, int64_t S, int64_t T, int64_t d, int64_t heads,
                            int64_t layers, int64_t tgt_vocab, int64_t params) {
    const double Rs = double(B * S), Rt = double(B * T);  // rows (tokens) on each side
    const double D = double(d);
    auto linear = [&](double rows, double in, double out) { return 2 * rows * in * out; };
    auto attention = [&](double nq, double nk) { return 2 * (2 * double(B) * nq * nk * D); };
    // the scores' elements: scaled, softmax taken
    auto scores = [&](double nq, double nk) {
        return double(B * heads) * nq * nk * (SCALE + SOFTMAX);
    };
    auto ffn = [&](double rows) {
        return rows * 4 * D * (BIAS + RELU) + rows * D * BIAS;
    };
    StepFlops f;
    const double enc = linear(Rs, D, 3 * D) + linear(Rs, D, D) + attention(double(S), double(S)) +
                       linear(Rs, D, 4 * D) + linear(Rs, 4 * D, D);
    const double dec = linear(Rt, D, 3 * D) + linear(Rt, D, D) + attention(double(T), double(T)) +
                       linear(Rt, D, D) + linear(Rs, D, 2 * D) + linear(Rt, D, D) +
                       attention(double(T), double(S)) + linear(Rt, D, 4 * D) +
                       linear(Rt, 4 * D, D);
    const double forward = double(layers) * (enc + dec) + linear(Rt, D, double(tgt_vocab));
    f.products = 3 * forward;

    f.elementwise =
        (Rs + Rt) * D * 2 * ADD +                                             // embeddings
        double(layers) * (Rs * D * 2 * (LAYER_NORM + ADD) + scores(double(S), double(S)) +
                          ffn(Rs)) +
        double(layers) * (Rt * D * 3 * (LAYER_NORM + ADD) + scores(double(T), double(T)) +
                          scores(double(T), double(S)) + ffn(Rt)) +
        (Rs + Rt) * D * LAYER_NORM + Rt * double(tgt_vocab) * (BIAS + LOSS) +
        double(params) * ADAM;
    return f;
}

}  // namespace bench
