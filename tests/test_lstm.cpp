// common/kernels/lstm: the backward against finite differences of the forward, and the chain on
// several threads. The forward and backward against torch's equations written plainly
// (chapters/6-cost/reference.h): tests/test_chapter6_reference.cpp.
#include "common/kernels/lstm.h"
#include "common/kernels/parallel.h"
#include "tests/util.h"

#include <cmath>
#include <random>
#include <vector>

namespace {

using Vec = std::vector<float>;

Vec random_vec(size_t size, std::mt19937& rng, float scale) {
    std::normal_distribution<float> N(0.0f, scale);
    Vec v(size);
    for (auto& x : v) x = N(rng);
    return v;
}

struct Lstm {
    int n, B, d;
    Vec x, W_ih, W_hh, b;
    Lstm(int n_, int B_, int d_, std::mt19937& rng)
        : n(n_), B(B_), d(d_), x(random_vec((size_t)n * B * d, rng, 1.0f)),
          W_ih(random_vec((size_t)4 * d * d, rng, 0.5f)),
          W_hh(random_vec((size_t)4 * d * d, rng, 0.5f)), b(random_vec((size_t)4 * d, rng, 0.5f)) {}
    // h (n + 1, B, d), c, gates from the library
    void forward(Vec& h, Vec& c, Vec& gates) const {
        h.assign((size_t)(n + 1) * B * d, 7.0f);  // garbage: h[0] must be set to 0
        c.assign(h.size(), 7.0f);
        gates.assign((size_t)n * B * 4 * d, 0.0f);
        lstm_forward(x.data(), W_ih.data(), W_hh.data(), b.data(), n, B, d, h.data(), c.data(),
                     gates.data());
    }
};

}  // namespace

TEST_CASE("lstm: backward agrees with finite differences") {
    std::mt19937 rng(12);
    const int n = 4, B = 2, d = 3;
    Lstm net(n, B, d, rng);
    const Vec G = random_vec((size_t)n * B * d, rng, 1.0f);  // loss = sum(h[1..n] * G)
    auto loss = [&]() {
        Vec h, c, gates;
        net.forward(h, c, gates);
        double s = 0;
        for (size_t k = 0; k < G.size(); k++) s += (double)h[(size_t)B * d + k] * G[k];
        return s;
    };
    Vec h, c, gates;
    net.forward(h, c, gates);
    Vec dx(net.x.size(), 5.0f), dW_ih(net.W_ih.size(), 5.0f), dW_hh(net.W_hh.size(), 5.0f),
        db(net.b.size(), 5.0f);  // garbage: outputs are overwritten
    lstm_backward(net.x.data(), net.W_ih.data(), net.W_hh.data(), h.data(), c.data(),
                  gates.data(), G.data(), n, B, d, dx.data(), dW_ih.data(), dW_hh.data(),
                  db.data());
    struct Wrt {
        Vec* X;
        const Vec* dX;
        const char* name;
    };
    const float eps = 1e-2f;
    for (auto [X, dX, name] : {Wrt{&net.x, &dx, "dx"}, Wrt{&net.W_ih, &dW_ih, "dW_ih"},
                               Wrt{&net.W_hh, &dW_hh, "dW_hh"}, Wrt{&net.b, &db, "db"}}) {
        Vec numeric = testutil::central_difference(X->data(), X->size(), eps, loss);
        // float32 forward, eps = 1e-2: truncation ~eps^2 and rounding ~1e-7/eps.
        CHECK(testutil::allclose(*dX, numeric, 2e-3, 2e-3, name));
    }
}

TEST_CASE("lstm: the chain on 2 or 3 threads gives the same numbers as on one") {
    // B = 8 with d >= 256 is big enough that the chain splits the hidden units between threads:
    // 128 or 256 units each (d = 256, 512), shares that are not whole K slices of sgemm (640 on
    // 2 threads: 320 units each), and 3 threads (768: 256 each, the third sharing a core on a
    // 2-core machine).
    if (!parallel::OPENMP)
        MESSAGE("an OPENMP=0 build has one thread: all runs use it, and must repeat bit for bit");
    const int saved = omp_get_max_threads();
    for (int d : {256, 512, 640, 768}) {
        std::mt19937 rng(13);
        const int n = 6, B = 8;
        Lstm net(n, B, d, rng);
        for (auto& w : net.W_ih) w *= 0.1f;
        for (auto& w : net.W_hh) w *= 0.1f;
        const Vec G = random_vec((size_t)n * B * d, rng, 1.0f);
        Vec out[3][5];
        for (int run = 0; run < 3; run++) {
            omp_set_num_threads(run + 1);
            Vec h, c, gates;
            net.forward(h, c, gates);
            Vec dx(net.x.size()), dW_ih(net.W_ih.size()), dW_hh(net.W_hh.size()),
                db(net.b.size());
            lstm_backward(net.x.data(), net.W_ih.data(), net.W_hh.data(), h.data(), c.data(),
                          gates.data(), G.data(), n, B, d, dx.data(), dW_ih.data(),
                          dW_hh.data(), db.data());
            out[run][0] = h, out[run][1] = dx, out[run][2] = dW_ih, out[run][3] = dW_hh,
            out[run][4] = db;
        }
        const char* names[5] = {"h", "dx", "dW_ih", "dW_hh", "db"};
        for (int run = 1; run < 3; run++)
            for (int k = 0; k < 5; k++) {  // each value is computed in the same order every way
                CAPTURE(d);
                CAPTURE(run + 1);
                CHECK(testutil::allclose(out[run][k], out[0][k], 0.0, 0.0, names[k]));
            }
    }
    omp_set_num_threads(saved);
}
