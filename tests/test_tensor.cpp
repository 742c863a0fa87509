// common/tensor + ops: forward values on hand-computed cases, and every op's backward against
// central finite differences.
#include <algorithm>
#include <cmath>
#include <functional>

#include "chapters/1-self-attention/attention.h"
#include "common/kernels/parallel.h"
#include "common/tensor.h"
#include "tests/util.h"

namespace {

// A small deterministic generator for test inputs (the numpy/torch ones are tested elsewhere).
struct Lcg {
    uint64_t s;
    float next(float lo, float hi) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        return lo + (hi - lo) * float((s >> 40) & 0xFFFFFF) / float(1 << 24);
    }
};

Tensor random_tensor(const Shape& shape, uint64_t seed, float lo = -1, float hi = 1) {
    Lcg g{seed};
    std::vector<float> v(size_t(numel_of(shape)));
    for (float& x : v) x = g.next(lo, hi);
    return Tensor::from(v, shape).requires_grad_();
}

// Checks d(loss)/d(input) from backward() against (f(x + eps) - f(x - eps)) / (2 eps) for every
// element of every input. The loss is sum(op(inputs) * R) with a fixed random R, so every
// output element matters with its own weight.
// Tolerance: the inputs are O(1) and float32 keeps ~7 digits; with eps = 1e-2 the central
// difference's truncation error is O(eps^2) ~ 1e-4 and its rounding error ~ 1e-7 * |loss| / eps
// ~ 1e-4 for losses of size ~10, so atol 2e-3 + rtol 1e-2 separates right from wrong gradients
// (a wrong backward is off by O(1)).
void gradcheck(std::vector<Tensor> inputs, const std::function<Tensor(std::vector<Tensor>&)>& op,
               const char* name, float eps = 1e-2f, double atol = 2e-3, double rtol = 1e-2) {
    Tensor probe = op(inputs);
    Tensor R = random_tensor(probe.shape(), 99);
    R.requires_grad_(false);
    auto loss_of = [&]() { return sum(op(inputs) * R); };
    for (Tensor& t : inputs) t.zero_grad();
    loss_of().backward();
    for (size_t k = 0; k < inputs.size(); k++) {
        Tensor& x = inputs[k];
        if (!x.requires_grad()) continue;
        Tensor analytic = x.grad();
        REQUIRE_MESSAGE(analytic.defined(), name << ": input " << k << " got no gradient");
        NoGradGuard ng;
        std::vector<float> numeric = testutil::central_difference(
            x.data(), size_t(x.numel()), eps, [&] { return loss_of().item(); });
        std::string what = std::string(name) + " d/dinput" + std::to_string(k);
        CHECK(testutil::allclose(analytic.to_vector(), numeric, atol, rtol, what.c_str()));
    }
}

}  // namespace

TEST_CASE("tensor: creation, shapes and printing of shapes") {
    Tensor t = Tensor::from({1, 2, 3, 4, 5, 6}, {2, 3});
    CHECK(t.size(0) == 2);
    CHECK(t.size(-1) == 3);
    CHECK(t.at({1, 2}) == 6);
    CHECK(shape_str({2, 10, 512}) == "(2, 10, 512)");
    CHECK(shape_str({5}) == "(5,)");
    CHECK(shape_str({}) == "()");
    CHECK_THROWS_WITH_AS(Tensor::from({1, 2, 3}, {2, 2}), doctest::Contains("(2, 2)"),
                         std::invalid_argument);
}

TEST_CASE("tensor: forward values on hand-computed cases") {
    Tensor A = Tensor::from({{1, 2}, {3, 4}});
    Tensor B = Tensor::from({{5, 6}, {7, 8}});
    CHECK(matmul(A, B).to_vector() == std::vector<float>{19, 22, 43, 50});
    CHECK(transpose(A, 0, 1).to_vector() == std::vector<float>{1, 3, 2, 4});
    CHECK((A + Tensor::from({10, 20}, {2})).to_vector() == std::vector<float>{11, 22, 13, 24});
    CHECK((A * Tensor::from({2, 3}, {2, 1})).to_vector() == std::vector<float>{2, 4, 9, 12});
    CHECK((1.0f - A).to_vector() == std::vector<float>{0, -1, -2, -3});
    CHECK(sum(A).item() == 10);
    CHECK(sum(A, 0).to_vector() == std::vector<float>{4, 6});
    CHECK(mean(A, -1, true).shape() == Shape{2, 1});
    CHECK(max(A).item() == 4);
    CHECK(norm(Tensor::from({3, 4}, {2})).item() == doctest::Approx(5));
    // softmax([0, ln 3]) = [1/4, 3/4]
    Tensor p = softmax(Tensor::from({0.0f, std::log(3.0f)}, {1, 2}), -1);
    CHECK(p.data()[0] == doctest::Approx(0.25));
    CHECK(p.data()[1] == doctest::Approx(0.75));
    // layer_norm([1, 2, 3]) = [-1, 0, 1] * sqrt(3/2) (biased variance 2/3)
    Tensor ln = layer_norm(Tensor::from({1, 2, 3}, {3}), Tensor(), Tensor());
    CHECK(ln.data()[0] == doctest::Approx(-std::sqrt(1.5)).epsilon(1e-4));
    CHECK(ln.data()[1] == doctest::Approx(0).epsilon(1e-6));
    // cross_entropy of uniform logits over 4 classes = ln 4
    CHECK(cross_entropy(Tensor::zeros({2, 4}), {1, 3}).item() == doctest::Approx(std::log(4.0)));
    // masked_fill with the causal mask: exactly 0 weight above the diagonal
    Tensor w = softmax(masked_fill(Tensor::zeros({3, 3}), causal_mask(3), -INFINITY), -1);
    CHECK(w.to_vector() == std::vector<float>{1, 0, 0, 0.5f, 0.5f, 0, w.at({2, 0}), w.at({2, 0}),
                                              w.at({2, 0})});
    CHECK(index_select(A, {1, 1, 0}).to_vector() == std::vector<float>{3, 4, 3, 4, 1, 2});
    Tensor pe = Tensor::arange(6);
    CHECK(slice(reshape(pe, {1, 6}), 1, 0, -1, 2).to_vector() == std::vector<float>{0, 2, 4});
    CHECK(slice(reshape(pe, {1, 6}), 1, 1, -1, 2).to_vector() == std::vector<float>{1, 3, 5});
    CHECK(concat({A, B}, 1).to_vector() == std::vector<float>{1, 2, 5, 6, 3, 4, 7, 8});
    Tensor z = Tensor::zeros({2, 4});
    slice_assign(z, 1, 1, 2, Tensor::ones({2, 2}));
    CHECK(z.to_vector() == std::vector<float>{0, 1, 0, 1, 0, 1, 0, 1});
    // Batched matmul broadcasts leading dims: (2, 1, 2, 2) @ (3, 2, 2) -> (2, 3, 2, 2)
    Tensor big = matmul(reshape(concat({A, B}, 0), {2, 1, 2, 2}),
                        reshape(concat({A, A, B}, 0), {3, 2, 2}));
    CHECK(big.shape() == Shape{2, 3, 2, 2});
    CHECK(big.at({1, 2, 0, 0}) == 5 * 5 + 6 * 7);
}

TEST_CASE("tensor: wrong shapes throw a message naming the op and both shapes") {
    Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({4, 5});
    CHECK_THROWS_WITH_AS(matmul(a, b), doctest::Contains("matmul: shapes (2, 3) and (4, 5)"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(a + b, doctest::Contains("add: shapes (2, 3) and (4, 5)"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(reshape(a, {4}), doctest::Contains("reshape"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(linear(a, b), doctest::Contains("(4, 5)"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(cross_entropy(a, {0, 7}), doctest::Contains("target 7"),
                         std::invalid_argument);
    CHECK_THROWS_AS(softmax(a, 0), std::invalid_argument);
    CHECK_THROWS_AS(Tensor().shape(), std::invalid_argument);
}

TEST_CASE("autograd: elementwise ops with broadcasting") {
    Tensor a = random_tensor({2, 3, 4}, 1), b = random_tensor({3, 4}, 2),
           c = random_tensor({2, 1, 4}, 3);
    Tensor pos = random_tensor({2, 3}, 4, 0.5f, 2.0f), away = random_tensor({3, 4}, 5, 0.2f, 1.0f);
    gradcheck({a, b}, [](auto& v) { return v[0] + v[1]; }, "add");
    gradcheck({a, c}, [](auto& v) { return v[0] - v[1]; }, "sub");
    gradcheck({a, c}, [](auto& v) { return v[0] * v[1]; }, "mul");
    gradcheck({a, pos}, [](auto& v) { return v[0] / reshape(v[1], {2, 3, 1}); }, "div");
    gradcheck({b, away}, [](auto& v) { return v[0] * 2.0f + 1.0f - v[1] / 4.0f; }, "scalar ops");
    gradcheck({b}, [](auto& v) { return -v[0]; }, "neg");
    // Kinks (relu and abs at 0) are avoided: the inputs sit at |x| >= 0.2.
    gradcheck({away}, [](auto& v) { return relu(v[0] - 0.6f) + abs(v[0] - 0.5f); }, "relu, abs",
              1e-3f, 2e-3, 2e-2);
    gradcheck({b}, [](auto& v) { return exp(v[0]) + sin(v[0]) + cos(v[0]); }, "exp sin cos");
    gradcheck({pos}, [](auto& v) { return log(v[0]) + sqrt(v[0]) + pow(v[0], 3.0f); },
              "log sqrt pow");
    gradcheck({b}, [](auto& v) { return tanh(v[0] * 2.0f) + sigmoid(v[0] * 3.0f); },
              "tanh sigmoid");
    Tensor t = Tensor::from({-20, -1, 0, 0.5f, 20}, {5});
    CHECK(testutil::allclose(tanh(t).to_vector(),
                             {-1.0f, std::tanh(-1.0f), 0.0f, std::tanh(0.5f), 1.0f}, 0, 1e-7));
    CHECK(testutil::allclose(sigmoid(t).to_vector(),
                             {1 / (1 + std::exp(20.0f)), 1 / (1 + std::exp(1.0f)), 0.5f,
                              1 / (1 + std::exp(-0.5f)), 1 / (1 + std::exp(-20.0f))},
                             0, 1e-7));
}

namespace {

// One step of torch.nn.LSTM written in the ops above (torch's equations, its gate order i, f,
// g, o), for the fused op to be held to: x_t (B, d), h and c (B, d).
void lstm_step(const Tensor& x_t, const Tensor& W_ih, const Tensor& W_hh, const Tensor& b,
               Tensor& h, Tensor& c) {
    const int64_t d = x_t.size(1);
    Tensor gates = linear(x_t, W_ih, b) + linear(h, W_hh);  // (B, 4d)
    Tensor i = sigmoid(slice(gates, 1, 0, d)), f = sigmoid(slice(gates, 1, d, 2 * d));
    Tensor g = tanh(slice(gates, 1, 2 * d, 3 * d)), o = sigmoid(slice(gates, 1, 3 * d, 4 * d));
    c = f * c + i * g;
    h = o * tanh(c);
}

}  // namespace

TEST_CASE("autograd: lstm, the fused op against its steps in plain ops, and its backward") {
    const int64_t n = 5, B = 3, d = 4;
    Tensor x = random_tensor({n, B, d}, 21), W_ih = random_tensor({4 * d, d}, 22),
           W_hh = random_tensor({4 * d, d}, 23), b = random_tensor({4 * d}, 24);
    gradcheck({x, W_ih, W_hh, b}, [](auto& v) { return lstm(v[0], v[1], v[2], v[3]); }, "lstm");

    // The same sequence step by step: the outputs, and every gradient through a weighted sum.
    auto stepwise = [&](const Tensor& xs) {
        Tensor h = Tensor::zeros({B, d}), c = Tensor::zeros({B, d});
        std::vector<Tensor> hs;
        for (int64_t t = 0; t < n; t++) {
            lstm_step(select(xs, t), W_ih, W_hh, b, h, c);
            hs.push_back(unsqueeze(h, 0));
        }
        return concat(hs, 0);  // (n, B, d)
    };
    Tensor R = random_tensor({n, B, d}, 25);
    R.requires_grad_(false);
    std::vector<std::vector<float>> grads[2];
    Tensor outs[2];
    for (int k = 0; k < 2; k++) {
        for (Tensor* t : {&x, &W_ih, &W_hh, &b}) t->zero_grad();
        outs[k] = k == 0 ? lstm(x, W_ih, W_hh, b) : stepwise(x);
        sum(outs[k] * R).backward();
        for (Tensor* t : {&x, &W_ih, &W_hh, &b}) grads[k].push_back(t->grad().to_vector());
    }
    // The fused kernel's sigmoid and tanh use exp_fast (a few ulps from std::exp), and its sums
    // run in another order: agreement to 1e-5 on O(1) values.
    CHECK(testutil::allclose(outs[0].to_vector(), outs[1].to_vector(), 1e-5, 1e-5, "h"));
    for (size_t i = 0; i < 4; i++)
        CHECK(testutil::allclose(grads[0][i], grads[1][i], 1e-5, 1e-5, "gradient"));
    CHECK_THROWS_WITH_AS(lstm(x, W_hh, W_ih, reshape(b, {2, 8})), doctest::Contains("b (16)"),
                         std::invalid_argument);
    CHECK_THROWS_AS(lstm(reshape(x, {n * B, d}), W_ih, W_hh, b), std::invalid_argument);
}

TEST_CASE("autograd: matmul, linear and shape ops") {
    Tensor A = random_tensor({3, 5}, 11), B = random_tensor({5, 4}, 12);
    Tensor A3 = random_tensor({2, 3, 5}, 13), B3 = random_tensor({2, 5, 4}, 14);
    Tensor Bb = random_tensor({1, 5, 4}, 15);
    gradcheck({A, B}, [](auto& v) { return matmul(v[0], v[1]); }, "matmul 2d");
    gradcheck({A3, B}, [](auto& v) { return matmul(v[0], v[1]); }, "matmul batch @ 2d");
    gradcheck({A3, B3}, [](auto& v) { return matmul(v[0], v[1]); }, "matmul batched");
    gradcheck({A3, Bb}, [](auto& v) { return matmul(v[0], v[1]); }, "matmul broadcast batch");
    Tensor x = random_tensor({2, 3, 5}, 16), W = random_tensor({4, 5}, 17),
           b = random_tensor({4}, 18);
    gradcheck({x, W, b}, [](auto& v) { return linear(v[0], v[1], v[2]); }, "linear");
    gradcheck({x, W}, [](auto& v) { return linear(v[0], v[1]); }, "linear without bias");
    gradcheck({x}, [](auto& v) { return reshape(v[0], {5, -1}); }, "reshape");
    gradcheck({x}, [](auto& v) { return transpose(v[0], -2, -1); }, "transpose");
    gradcheck({x}, [](auto& v) { return permute(v[0], {2, 0, 1}); }, "permute");
    gradcheck({x}, [](auto& v) { return unsqueeze(v[0], 1); }, "unsqueeze");
    gradcheck({x}, [](auto& v) { return index_select(v[0], {1, 0, 1}); }, "index_select");
    // select is a view: part i of its input's storage, and its gradient goes to that part
    gradcheck({x}, [](auto& v) { return select(v[0], 1) * select(v[0], 0); }, "select");
    CHECK(select(x, 1).data() == x.data() + 15);
    CHECK(select(select(x, 1), 2).data() == x.data() + 25);
    CHECK(select(reshape(select(x, 1), {5, 3}), 1).to_vector() ==
          std::vector<float>(x.data() + 18, x.data() + 21));
    gradcheck(
        {W},
        [](auto& v) {
            return embedding(v[0], {3, 1, 3, 0, 2, 3}, {2, 3});
        },
        "embedding");
    gradcheck({x}, [](auto& v) { return slice(v[0], -1, 1, -1, 2); }, "slice");
    gradcheck({A, A3}, [](auto& v) { return concat({unsqueeze(v[0], 0), v[1]}, 0); }, "concat");
}

// Gradients accumulate: a tensor used twice, as both operands of one op or by several ops, gets
// the terms of every use, an intermediate's included (its buffer is released every pass).
TEST_CASE("autograd: a tensor used twice, by one op or by several, gets every term") {
    Tensor S = random_tensor({4, 4}, 31), S3 = random_tensor({2, 4, 4}, 32);
    gradcheck({S3}, [](auto& v) { return v[0] * v[0]; }, "a * a");
    gradcheck({S3}, [](auto& v) { return relu(v[0]) + v[0]; }, "relu(a) + a");
    gradcheck({S}, [](auto& v) { return matmul(v[0], v[0]); }, "x @ x");
    gradcheck({S3}, [](auto& v) { return matmul(v[0], v[0]); }, "batched x @ x");
    gradcheck({S}, [](auto& v) { return linear(v[0], v[0]); }, "linear(x, x)");
    gradcheck({S3}, [](auto& v) { return permute(v[0], {0, 2, 1}) + v[0]; }, "permute + a");
    gradcheck(
        {S3},
        [](auto& v) {
            Tensor h = v[0] * 2.0f;  // an intermediate: its gradient is released every pass
            return layer_norm(h, Tensor(), Tensor()) + matmul(h, h) + h;
        },
        "an intermediate used three times");
}

TEST_CASE("tensor: layer_norm's rows summed side by side give each row's own bits") {
    // layer_norm takes the statistics of 8 rows at once (their columns side by side), the rows
    // past the last 8 one at a time: each row must come out as it does alone.
    for (int64_t D : {64, 37}) {
        const Tensor x = random_tensor({9, D}, 21, -3, 5), w = random_tensor({D}, 22),
                     b = random_tensor({D}, 23);
        const std::vector<float> all = layer_norm(x, w, b).to_vector();
        for (int64_t r = 0; r < 9; r++) {
            CAPTURE(D);
            CAPTURE(r);
            const Tensor row = Tensor::from({x.data() + r * D, x.data() + (r + 1) * D}, {1, D});
            CHECK(layer_norm(row, w, b).to_vector() ==
                  std::vector<float>(all.begin() + r * D, all.begin() + (r + 1) * D));
        }
    }
}

TEST_CASE("autograd: softmax, masking, reductions, layer_norm, cross_entropy") {
    Tensor s = random_tensor({2, 4, 4}, 21, -2, 2);
    gradcheck({s}, [](auto& v) { return softmax(v[0], -1); }, "softmax");
    gradcheck({s}, [](auto& v) { return log_softmax(v[0], -1); }, "log_softmax");
    gradcheck(
        {s}, [](auto& v) { return softmax(masked_fill(v[0], causal_mask(4), -INFINITY), -1); },
        "masked softmax");
    gradcheck(
        {s}, [](auto& v) { return sum(v[0], 1, true) + mean(v[0], -1, true); }, "sum/mean dim");
    gradcheck({s}, [](auto& v) { return sum(v[0]) * mean(v[0]); }, "sum/mean all");
    gradcheck({s}, [](auto& v) { return max(v[0]) + norm(v[0]); }, "max, norm");
    Tensor x = random_tensor({3, 6}, 22, -2, 2), g = random_tensor({6}, 23, 0.5f, 1.5f),
           b = random_tensor({6}, 24);
    gradcheck({x, g, b}, [](auto& v) { return layer_norm(v[0], v[1], v[2]); }, "layer_norm");
    Tensor logits = random_tensor({5, 7}, 25, -2, 2);
    gradcheck({logits}, [](auto& v) { return cross_entropy(v[0], {0, 6, 3, -100, 3}); },
              "cross_entropy (one ignored row)");
}

TEST_CASE("autograd: a reused node accumulates, and a second backward after zero_grad matches") {
    Tensor a = Tensor::from({1.0f, -2.0f, 3.0f}, {3}).requires_grad_();
    Tensor b = a + a;                  // b is used twice below, a twice here
    Tensor loss = sum(b * b);          // d/da = 2 * 2b * ... = 8a
    loss.backward();
    CHECK(a.grad().to_vector() == std::vector<float>{8, -16, 24});
    loss.backward();                   // without zero_grad the gradients add up
    CHECK(a.grad().to_vector() == std::vector<float>{16, -32, 48});
    a.zero_grad();
    loss.backward();                   // after zero_grad: the first result again
    CHECK(a.grad().to_vector() == std::vector<float>{8, -16, 24});
    {
        NoGradGuard ng;
        CHECK_FALSE((a * 2.0f).requires_grad());
    }
    CHECK((a * 2.0f).requires_grad());
}

TEST_CASE("autograd: a gradient a backward writes whole is right in memory that held garbage") {
    // Where a backward writes every element of an input's gradient, the new buffer is not zero
    // filled but stored into (TensorImpl::grad_data(fresh)). Blocks of 1 MiB and up are reused
    // (common/memory.h): filled with NaN and freed before the backward, they are what its new
    // gradients get, and a backward that added into one would give NaN where zeros give numbers.
    const int64_t n = 256 * 1024;  // floats: 1 MiB, every big tensor below
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);  // a thread that spins in wait costs more than these loops
    auto gradients = [&](float garbage) {
        Tensor x = random_tensor({256, 1024}, 1), w = random_tensor({1024}, 2),
               b = random_tensor({1024}, 3), B = random_tensor({4, 64, 64}, 4),
               W = random_tensor({64, 64}, 5), W2 = random_tensor({64, 64}, 6);
        Tensor mask = Tensor::zeros({1024}), R = random_tensor({4096, 64}, 7);
        for (int64_t j = 0; j < 1024; j += 3) mask.data()[j] = 1;
        Tensor h = relu(layer_norm(x, w, b)) * x / 3.0f;       // unary, same shapes, a scalar
        h = softmax(masked_fill(h, mask, 0.5f), -1);           // a mask broadcast over rows
        h = permute(reshape(h, {4, 64, 1024}), {0, 2, 1});     // (4, 1024, 64)
        h = reshape(matmul(h, B), {4096, 64});                 // batched products
        h = linear(matmul(h, W2), W);                          // a flat product, a linear
        Tensor loss = sum(h * R);
        {
            std::vector<mem::Buffer<float>> blocks;
            for (int k = 0; k < 16; k++) {
                blocks.emplace_back(size_t(n), mem::uninit);
                std::fill(blocks.back().data(), blocks.back().data() + n, garbage);
            }
        }  // freed: kept for reuse
        loss.backward();
        std::vector<float> out;
        for (const Tensor* t : {&x, &w, &b, &B, &W, &W2})
            for (float g : t->grad().to_vector()) out.push_back(g);
        return out;
    };
    const std::vector<float> clean = gradients(0.0f), dirty = gradients(NAN);
    CHECK(std::all_of(clean.begin(), clean.end(), [](float g) { return std::isfinite(g); }));
    CHECK(dirty == clean);
    omp_set_num_threads(threads);
}

TEST_CASE("autograd: a reshape shares its input's gradient only where that is the whole of it") {
    // Tensor::backward hands a view's gradient buffer to its input when the input is an
    // intermediate with no other use; with another use, or a leaf input, the terms are added.
    Tensor a = Tensor::from({1.0f, -2.0f, 3.0f, 0.5f}, {4}).requires_grad_();
    Tensor b = a * 3.0f;                                       // one use: the reshape
    Tensor loss = sum(reshape(b, {2, 2}) * reshape(b, {2, 2}));  // two reshapes of b: 18 a
    loss.backward();
    CHECK(a.grad().to_vector() == std::vector<float>{18, -36, 54, 9});
    Tensor c = a * 2.0f;  // used by a reshape and directly: 2c + 1 per element, times 2
    Tensor loss2 = sum(reshape(c, {2, 2})) + sum(c * c);
    a.zero_grad();
    loss2.backward();
    CHECK(a.grad().to_vector() == std::vector<float>{10, -14, 26, 6});
    Tensor d = a * 1.0f;  // a chain of views over one intermediate, then a second pass
    Tensor loss3 = sum(reshape(reshape(d, {2, 2}), {4}) * 4.0f);
    a.zero_grad();
    loss3.backward();
    loss3.backward();  // the intermediates start again from zero; the leaf accumulates
    CHECK(a.grad().to_vector() == std::vector<float>{8, 8, 8, 8});
    Tensor w = Tensor::from({1.0f, 2.0f}, {2}).requires_grad_();  // a leaf under a reshape
    sum(reshape(w, {1, 2}) * 5.0f).backward();
    sum(reshape(w, {2, 1}) * 1.0f).backward();
    CHECK(w.grad().to_vector() == std::vector<float>{6, 6});
}
