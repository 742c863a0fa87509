// Random numbers that match numpy and torch bit for bit, so the article's Monte Carlo means and
// single-seed measurements come out with the same digits. tests/test_random.cpp holds the
// reference values, recorded with numpy 1.24.2 and torch 1.13.1.
//
// numpy (sections 2 and 4 of the article):
//   numpy::Generator g(20260830);        // np.random.default_rng(20260830)
//   double z = g.standard_normal();      // g.standard_normal()
//   g.standard_normal(out, n);           // g.standard_normal(n) / ((rows, cols)): C order
//   double u = g.random();               // g.random()  (53-bit uniform in [0, 1))
//   g.advance(k);                        // g.bit_generator.advance(k): skip k raw outputs
//
// torch (sections 3 and 5): a CPU generator like torch 1.13's default generator.
//   torch_rng::manual_seed(0);                     // torch.manual_seed(0)
//   std::vector<float> x = torch_rng::randn(2 * 10 * 512);   // torch.randn(2, 10, 512), row-major
//   torch_rng::Generator& gen = torch_rng::default_generator();
//   gen.rand(n); gen.randint(0, 50, n); gen.linear_init(W, out, in, b);
//
// The global default generator works like torch's default CPU generator: torch_rng::manual_seed
// reseeds it, and modules (common/nn) draw their initial weights from it in constructor order, so
// building layers in the same order as the Python code gives torch's weights. A process that
// never calls manual_seed starts from 67280421310721, the seed of a fresh torch.Generator()
// (torch's own global generator takes a nondeterministic seed; we keep runs reproducible).
//
// The random-number code is compiled with -ffp-contract=off (see the Makefile): numpy and torch
// round a*b+c twice, except where torch's AVX2 kernel fuses it (written std::fma there).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace numpy {

// np.random.SeedSequence: turns a seed into well-mixed 32-bit words.
class SeedSequence {
public:
    explicit SeedSequence(uint64_t seed);                   // an int seed
    explicit SeedSequence(std::vector<uint32_t> entropy);   // its uint32 words, low word first
    std::vector<uint32_t> generate_state32(size_t n) const;  // generate_state(n, np.uint32)
    std::vector<uint64_t> generate_state64(size_t n) const;  // generate_state(n, np.uint64)

private:
    uint32_t pool_[4];
};

// np.random.default_rng(seed): PCG64 (XSL-RR 128/64) seeded through SeedSequence.
class Generator {
public:
    explicit Generator(uint64_t seed);
    explicit Generator(const SeedSequence& seq);

    uint64_t random_raw();   // bit_generator.random_raw(): one 64-bit PCG64 output
    double random();         // Generator.random(): (next64 >> 11) * 2^-53
    double standard_normal();                      // float64 ziggurat (256 layers)
    void standard_normal(double* out, size_t n);   // n draws in order (C order for arrays)
    std::vector<double> standard_normal(size_t n);

    // bit_generator.advance(delta): as if delta raw outputs had been drawn, in O(log delta).
    void advance(uint64_t delta);

private:
    unsigned __int128 state_, inc_;
};

// FNV-1a-64 over the ziggurat tables (ki, then wi, then fi bit patterns) this build computed.
// numpy 1.24's compiled-in tables hash to 0x2aaf6f8cd4345568.
uint64_t ziggurat_table_hash();

}  // namespace numpy

namespace torch_rng {

// torch's default_rng_seed_val (torch.Generator().initial_seed()): our default generator's seed.
constexpr uint64_t DEFAULT_SEED = 67280421310721ULL;

// torch 1.13's CPUGeneratorImpl: mt19937 plus torch's float transforms.
class Generator {
public:
    explicit Generator(uint64_t seed = DEFAULT_SEED);
    void manual_seed(uint64_t seed);   // low 32 bits seed mt19937; clears the cached normal
    uint64_t initial_seed() const { return seed_; }

    // Which CPU kernel to imitate. torch on x86-64 with AVX2 (the default) fuses uniform_'s
    // u*w+from and uses polynomial logf/sincosf in randn; ATEN_CPU_CAPABILITY=default does not.
    bool avx2 = true;

    uint32_t random32();   // one mt19937 output
    uint64_t random64();   // two outputs, the first is the high half

    std::vector<float> rand(size_t n);                         // torch.rand(n)
    void uniform_(float* x, size_t n, double from, double to); // x.uniform_(from, to)
    std::vector<float> randn(size_t n);                        // torch.randn(n): path chosen by n
    // randn into x: n >= 16 goes through normal_fill, n < 16 through Box-Muller in double.
    void randn(float* x, size_t n);
    // torch.randint(low, high, (n,))
    std::vector<int64_t> randint(int64_t low, int64_t high, size_t n);

    // nn.Linear(in, out, bias) construction: weight (out, in) row-major from kaiming_uniform_
    // (a = sqrt(5)), then bias (out) from U(-1/sqrt(in), 1/sqrt(in)). bias may be nullptr.
    void linear_init(float* weight, int out, int in, float* bias);

private:
    float uniform_float();     // (random32() & 0xFFFFFF) * 2^-24
    double uniform_double();   // (random64() & (2^53 - 1)) * 2^-53
    double normal_double();    // Box-Muller in double with a one-value cache
    void normal_fill(float* x, size_t n);

    uint64_t seed_;
    uint32_t mt_[624];
    int mti_;
    bool has_cached_normal_ = false;
    double cached_normal_ = 0;
};

// The process-wide default generator (torch's default CPU generator).
Generator& default_generator();
void manual_seed(uint64_t seed);   // torch.manual_seed(seed)
std::vector<float> rand(size_t n);
std::vector<float> randn(size_t n);
std::vector<int64_t> randint(int64_t low, int64_t high, size_t n);

}  // namespace torch_rng
