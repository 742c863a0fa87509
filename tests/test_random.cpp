// common/random: every vector of the project's rng reference (numpy 1.24.2, torch 1.13.1 on
// x86-64 with AVX2, glibc 2.36), copied here so the tests never read anything outside tests/.
// float64 values are compared exactly (they were printed with 17 significant digits); float32
// values by their IEEE bit pattern.
#include <cmath>
#include <cstring>

#include "common/random.h"
#include "tests/util.h"

namespace {
uint32_t bits(float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
}
void check_bits(const std::vector<float>& got, size_t offset, const std::vector<uint32_t>& ref,
                const char* what) {
    REQUIRE(got.size() >= offset + ref.size());
    for (size_t i = 0; i < ref.size(); i++) {
        INFO(what << "[" << offset + i << "] = " << got[offset + i]);
        CHECK(bits(got[offset + i]) == ref[i]);
    }
}
}  // namespace

TEST_CASE("random: numpy SeedSequence words") {
    using numpy::SeedSequence;
    CHECK(SeedSequence(20260830).generate_state64(4) ==
          std::vector<uint64_t>{0xe02e0627b7a364dbULL, 0x18010731d5582b74ULL,
                                0x68a743cec62b98a3ULL, 0x378710e7f78de8b1ULL});
    CHECK(SeedSequence(20260830).generate_state32(8) ==
          std::vector<uint32_t>{0xb7a364db, 0xe02e0627, 0xd5582b74, 0x18010731, 0xc62b98a3,
                                0x68a743ce, 0xf78de8b1, 0x378710e7});
    CHECK(SeedSequence(0).generate_state32(4) ==
          std::vector<uint32_t>{0xb0f478be, 0xdb2cd7e7, 0x2c71ba49, 0xabf4641a});
    // 2**100 + 12345 has the entropy words [12345, 0, 0, 16].
    CHECK(SeedSequence(std::vector<uint32_t>{12345, 0, 0, 16}).generate_state32(4) ==
          std::vector<uint32_t>{0xa490589e, 0x02259a9f, 0x5d4ad6bb, 0x201e30e5});
}

TEST_CASE("random: numpy PCG64 raw output and random()") {
    numpy::Generator g(20260830);
    const uint64_t raw[8] = {0x29a83bf6394adbc8ULL, 0x78f4ebf6a2d6579dULL, 0x5906a6895581a2a5ULL,
                             0xc04a332eac0629b8ULL, 0x28f45cc928b3dc9fULL, 0x5b1d6356f439c853ULL,
                             0xb9457da2e2931a34ULL, 0x7125232522932575ULL};
    for (uint64_t r : raw) CHECK(g.random_raw() == r);

    numpy::Generator h(20260830);
    const double u[8] = {0.16272330056498718, 0.47248720904721009, 0.34775772908097347,
                         0.75113220109417311, 0.15997867499454743, 0.35591717598820261,
                         0.72371659495054208, 0.44197292000405897};
    for (double v : u) CHECK(h.random() == v);
}

TEST_CASE("random: numpy ziggurat tables hash to numpy's compiled-in tables") {
    // FNV-1a-64 over ki, wi, fi of numpy 1.24.2 (ziggurat_constants.h). A libm whose exp/log is
    // not correctly rounded at these 254 points would fail here before any draw is wrong.
    CHECK(numpy::ziggurat_table_hash() == 0x2aaf6f8cd4345568ULL);
}

TEST_CASE("random: numpy standard_normal") {
    const std::vector<double> ref_20260830 = {
        -0.6347998722750795,    -1.3563623602826085,  1.4071541458333658,   -0.017696481920721745,
        0.49081386142279326,    1.0439117001695464,   0.79230466612829809,  -0.7829285238518322,
        -0.081252511283607165,  -0.71534016958382773, -0.23820207340192126, 1.3107113500019985,
        -0.0036269898697380868, -1.6836143102603383,  -0.030467735720928965, -0.89411782344626334};
    const std::vector<double> ref_7 = {
        0.0012301533574825742, 0.29874553750846988,  -0.27413785536221758,  -0.89059183875727421,
        -0.45467078517172255,  -0.99164655499646237, 0.060143602597438485,  1.3402152455545335,
        -0.49220651855132963,  -0.62047489981994042, 0.48984205018519822,   0.35688700816006075,
        0.10541424899789856,   -0.93046804470820466, -0.029251822463273489, 0.69530319445828781};
    CHECK(numpy::Generator(20260830).standard_normal(16) == ref_20260830);
    CHECK(numpy::Generator(7).standard_normal(16) == ref_7);

    // A tail sample (idx 0 branch). log(1 - u) instead of log1p(-u) gives -3.8126363289814735.
    std::vector<double> x = numpy::Generator(42).standard_normal(113983);
    CHECK(x.back() == -3.812636328981474);
}

TEST_CASE("random: numpy standard_normal over 10^6 draws (tail and wedge paths)") {
    // Recorded with numpy 1.24.2: x = default_rng(seed).standard_normal(10**6); the sum is a
    // left-to-right float64 sum; "tail" counts |x| > R (ziggurat tail draws, idx 0 branch).
    struct Ref {
        uint64_t seed;
        double sum;
        int tail;
        double min;
        int argmin;
        double max;
        int argmax;
        std::vector<std::pair<int, double>> samples;
        double last, next_random;
    };
    const Ref refs[] = {
        {20260830, -1502.2363241743139, 276, -4.6289571616482394, 9836, 4.6833966933976994, 320914,
         {{1805, 4.1359021561188074}, {9063, -4.0808098831438269}, {10383, -3.8224759802794512},
          {995705, -3.8246027587449736}, {998570, -4.1829060963308615}},
         0.55682701374483634, 0.87402955170250585},
        {42, 97.502497893760832, 279, -4.9282384807851214, 198627, 5.0072352319089966, 42665,
         {{5627, -4.3891145848648367}, {8091, 4.0258240427272645}, {11589, 4.1512413970396009},
          {13755, -3.8878043416196642}, {978256, -3.818493106228193},
          {993470, -4.1765945085702025}},
         0.87678992578576553, 0.91232118773328563},
    };
    const double R = 3.6541528853610087963519472518;
    for (const Ref& ref : refs) {
        INFO("seed " << ref.seed);
        numpy::Generator g(ref.seed);
        std::vector<double> x = g.standard_normal(1000000);
        double sum = 0;
        int tail = 0, argmin = 0, argmax = 0;
        for (int i = 0; i < (int)x.size(); i++) {
            sum += x[i];
            tail += std::fabs(x[i]) > R;
            if (x[i] < x[argmin]) argmin = i;
            if (x[i] > x[argmax]) argmax = i;
        }
        CHECK(sum == ref.sum);
        CHECK(tail == ref.tail);
        CHECK(x[argmin] == ref.min);
        CHECK(argmin == ref.argmin);
        CHECK(x[argmax] == ref.max);
        CHECK(argmax == ref.argmax);
        for (auto [i, v] : ref.samples) CHECK(x[i] == v);
        CHECK(x.back() == ref.last);
        CHECK(g.random() == ref.next_random);  // the stream position after 10^6 normals
    }
}

// ---- bulk numpy draws: the same stream as one draw at a time --------------------------------
namespace {
std::vector<double> one_at_a_time(uint64_t seed, size_t n, uint64_t* next_raw = nullptr) {
    numpy::Generator g(seed);
    std::vector<double> x(n);
    for (double& v : x) v = g.standard_normal();
    if (next_raw) *next_raw = g.random_raw();
    return x;
}
}  // namespace

TEST_CASE("random: numpy advance(n) is n raw draws") {
    for (uint64_t n : {0ULL, 1ULL, 2ULL, 7ULL, 8ULL, 9ULL, 1000ULL, 123457ULL}) {
        numpy::Generator a(20260830), b(20260830);
        a.advance(n);
        for (uint64_t i = 0; i < n; i++) b.random_raw();
        INFO("n = " << n);
        CHECK(a.random_raw() == b.random_raw());
        CHECK(a.standard_normal() == b.standard_normal());
    }
    // Jumps compose: 2^40 + 12345 in two steps or one.
    numpy::Generator a(7), b(7);
    a.advance(1ULL << 40);
    a.advance(12345);
    b.advance((1ULL << 40) + 12345);
    CHECK(a.random_raw() == b.random_raw());
}

TEST_CASE("random: numpy bulk standard_normal(out, n) equals one draw at a time") {
    // Sizes below, at and above the bulk drawer's threshold (1024) and its 512-raw blocks, in
    // a chain of calls that must continue each other exactly.
    const std::vector<size_t> sizes = {1, 7, 8, 9, 1023, 1024, 1025,
                                       511, 512, 513, 4096, 100003, 1};
    size_t total = 0;
    for (size_t n : sizes) total += n;
    for (uint64_t seed : {20260830ULL, 42ULL, 0ULL}) {
        INFO("seed " << seed);
        uint64_t ref_next;
        std::vector<double> ref = one_at_a_time(seed, total, &ref_next);
        numpy::Generator g(seed);
        std::vector<double> got(total);
        size_t at = 0;
        for (size_t n : sizes) {
            g.standard_normal(got.data() + at, n);
            at += n;
        }
        CHECK(got == ref);
        CHECK(g.random_raw() == ref_next);
    }
}

TEST_CASE("random: numpy bulk standard_normal over 10^7 draws, in one call and in uneven calls") {
    const size_t n = 10000000;
    for (uint64_t seed : {20260830ULL, 42ULL, 7ULL}) {
        INFO("seed " << seed);
        uint64_t ref_next;
        std::vector<double> ref = one_at_a_time(seed, n, &ref_next);
        numpy::Generator g(seed);
        std::vector<double> got(n);
        g.standard_normal(got.data(), n);
        CHECK(got == ref);
        CHECK(g.random_raw() == ref_next);
        // In uneven calls (not multiples of anything, one below the bulk threshold), continuing
        // each other.
        numpy::Generator h(seed);
        std::vector<double> again(n);
        size_t at = 0;
        for (size_t len : {65537UL, 3UL, 1000003UL, 1023UL, 131071UL, 4999999UL}) {
            h.standard_normal(again.data() + at, len);
            at += len;
        }
        h.standard_normal(again.data() + at, n - at);
        CHECK(again == ref);
        CHECK(h.random_raw() == ref_next);
    }
}

TEST_CASE("random: numpy bulk calls that end on tail or wedge draws continue the stream") {
    // Seed 20260830's draw 9836 is a tail draw (-4.63: beyond R, the idx 0 branch: at least three
    // raws); wedge draws (two raws or more) come about once in a hundred. Splitting 12000 draws
    // into two bulk calls at every draw from 9700 to 10299 ends the first call on each of the
    // multi-raw draws there: the second must start on the raw after the last one it took.
    const uint64_t seed = 20260830;
    const size_t n = 12000;
    uint64_t ref_next;
    const std::vector<double> ref = one_at_a_time(seed, n, &ref_next);
    REQUIRE(ref[9836] == -4.6289571616482394);
    for (size_t split = 9700; split < 10300; split++) {
        INFO("split " << split);
        numpy::Generator g(seed);
        std::vector<double> got(n);
        g.standard_normal(got.data(), split);
        g.standard_normal(got.data() + split, n - split);
        CHECK(got == ref);
        CHECK(g.random_raw() == ref_next);
        // The same with a few one-at-a-time draws (below the bulk threshold) between the two.
        numpy::Generator h(seed);
        std::vector<double> again(n);
        h.standard_normal(again.data(), split - 5);
        h.standard_normal(again.data() + split - 5, 5);
        h.standard_normal(again.data() + split, n - split);
        CHECK(again == ref);
        CHECK(h.random_raw() == ref_next);
    }
}

TEST_CASE("random: torch rand after manual_seed") {
    torch_rng::Generator gen(0);
    check_bits(gen.rand(5), 0, {0x3efe1558, 0x3f44aa2f, 0x3db533a8, 0x3e073300, 0x3e9d6686},
               "rand(5)");
}

TEST_CASE("random: torch randn, both paths and the Box-Muller cache") {
    torch_rng::Generator gen(1);
    // n = 20 >= 16: normal_fill, which recomputes the last 16 from fresh uniforms.
    check_bits(gen.randn(20), 0,
               {0xbfc346ba, 0xbf400f31, 0xbf276b4b, 0xbfce0399, 0x3f5d9e04, 0x3e7a4504, 0xbf29b48f,
                0x3f4eabc1, 0x3ee0d72a, 0x3f95e9e8, 0x3fe23b0f, 0xbdc34d17, 0x3d7a7df6, 0xbf1e2480,
                0xbf4c4e4e, 0xbe06c83c, 0xbf4c668d, 0x3eabe4df, 0x3e8cf884, 0x3fdbafce},
               "randn(20)");
    // n = 3 < 16: double Box-Muller; the third value leaves a sample in the cache.
    check_bits(gen.randn(3), 0, {0xbfc94d18, 0xbdfc6952, 0x4065913c}, "randn(3)");
    check_bits(gen.randn(1), 0, {0xbfea67b7}, "randn(1) from the cache");
}

TEST_CASE("random: torch randn(8, 32, 64) then randint") {
    torch_rng::Generator gen(1);
    std::vector<float> x = gen.randn(8 * 32 * 64);
    check_bits(x, 0,
               {0xbfc346ba, 0xbf400f31, 0xbf276b4b, 0xbfce0399, 0xbdcd2473, 0xbf1bf3ce, 0xbf7ad25b,
                0xbfcdf6de},
               "x[:8]");
    check_bits(x, x.size() - 8,
               {0x3e65e30a, 0x3e346e44, 0x3f280a48, 0xbf7c80d4, 0xbe01480c, 0x3ed360d3, 0x3f0a56ff,
                0x3fe5e0be},
               "x[-8:]");
    std::vector<int64_t> k = gen.randint(0, 50, 8 * 32);
    std::vector<int64_t> first16(k.begin(), k.begin() + 16);
    CHECK(first16 ==
          std::vector<int64_t>{6, 31, 43, 30, 33, 45, 48, 13, 36, 24, 37, 7, 11, 36, 28, 6});

    torch_rng::Generator g9(9);  // range >= 2^32: 64-bit draws
    CHECK(g9.randint(-7, 1LL << 33, 6) ==
          std::vector<int64_t>{1409399836, 3189310780, 1169676603, 3641363236, 2215916168,
                               482178144});
}

TEST_CASE("random: torch nn.Linear initialisation and uniform_") {
    torch_rng::Generator gen(0);
    std::vector<float> W(192 * 64);
    gen.linear_init(W.data(), 192, 64, nullptr);  // bound exactly 0.125f: not FMA-sensitive
    check_bits(W, 0,
               {0xba755400, 0x3d89545e, 0xbdd2b316, 0xbdbc6680, 0xbd4532f4, 0x3d094bec, 0xbb224f40,
                0x3dcaface},
               "Linear(64, 192).weight[0, :8]");

    gen.manual_seed(0);
    std::vector<float> W2(30 * 100), b2(30);
    gen.linear_init(W2.data(), 30, 100, b2.data());  // FMA-sensitive bound
    check_bits(W2, 0,
               {0xba444333, 0x3d5bba30, 0xbda88f45, 0xbd96b867, 0xbd1dc25d, 0x3cdbacad, 0xbb01d900,
                0x3da2623f},
               "Linear(100, 30).weight[0, :8]");
    check_bits(b2, 0,
               {0xbcc6197a, 0xbc1e7b27, 0xbd3ccc1d, 0x3d91c960, 0x3d6b122d, 0xbdb4bfc3, 0xbc23e3f3,
                0x3d09b680},
               "Linear(100, 30).bias[:8]");

    gen.manual_seed(3);
    std::vector<float> u(8);
    gen.uniform_(u.data(), 8, -0.123456789, 0.3);
    check_bits(u, 0,
               {0xbdf9245b, 0xbda1491c, 0xbb1e4284, 0xbde57695, 0x3d9c29c1, 0xbdc8b44c, 0x3e5046ca,
                0x3e441020},
               "uniform_(-0.123456789, 0.3)");
}

TEST_CASE("random: torch non-AVX2 kernels (ATEN_CPU_CAPABILITY=default)") {
    torch_rng::Generator gen(1);
    gen.avx2 = false;
    std::vector<float> x = gen.randn(8 * 32 * 64);
    check_bits(x, 0,
               {0xbfc346ba, 0xbf400f31, 0xbf276b4b, 0xbfce039a, 0xbdcd2473, 0xbf1bf3ce, 0xbf7ad25b,
                0xbfcdf6de},
               "x[:8]");
    check_bits(x, x.size() - 8,
               {0x3e65e30a, 0x3e346e51, 0x3f280a48, 0xbf7c80d4, 0xbe01480c, 0x3ed360d3, 0x3f0a5702,
                0x3fe5e0be},
               "x[-8:]");

    gen.manual_seed(0);
    std::vector<float> W(30 * 100), b(30);
    gen.linear_init(W.data(), 30, 100, b.data());
    check_bits(W, 0,
               {0xba444300, 0x3d5bba32, 0xbda88f45, 0xbd96b866, 0xbd1dc25d, 0x3cdbacac, 0xbb01d900,
                0x3da2623f},
               "Linear(100, 30).weight[0, :8]");

    gen.manual_seed(3);
    std::vector<float> u(8);
    gen.uniform_(u.data(), 8, -0.123456789, 0.3);
    check_bits(u, 0,
               {0xbdf9245b, 0xbda1491c, 0xbb1e4280, 0xbde57695, 0x3d9c29c0, 0xbdc8b44c, 0x3e5046cb,
                0x3e44101f},
               "uniform_(-0.123456789, 0.3)");
}

TEST_CASE("random: torch default generator") {
    // torch.Generator() starts from 67280421310721; our process-wide generator does too (torch's
    // own global one is seeded nondeterministically, which a reproducible program cannot use).
    // Recorded: g = torch.Generator(); torch.rand(3, generator=g) (bit patterns).
    torch_rng::Generator fresh;
    CHECK(fresh.initial_seed() == 67280421310721ULL);
    check_bits(fresh.rand(3), 0, {0x3e88daec, 0x3f5f5e04, 0x3eabaafa}, "torch.Generator() rand(3)");

    // manual_seed on the global generator restarts its stream and clears the normal cache.
    torch_rng::manual_seed(1);
    torch_rng::randn(3);  // leaves a cached sample
    torch_rng::manual_seed(1);
    std::vector<float> a = torch_rng::randn(3);
    torch_rng::Generator ref(1);
    CHECK(a == ref.randn(3));
}
