// numpy default_rng (SeedSequence -> PCG64 -> ziggurat) and torch 1.13's CPU generator (mt19937
// -> torch's transforms), bit for bit. Long runs of numpy normals go through a bulk drawer (8
// interleaved PCG64 lanes, AVX2 where the CPU has it, and the ziggurat's common case 8 draws at
// a time); tests/test_random.cpp compares it with one draw at a time. Compiled with
// -ffp-contract=off: every a*b+c below rounds twice unless it is written std::fma, which is
// exactly where torch's AVX2 build fused it.
#include "common/random.h"

#include <cmath>
#include <cstring>
#include <utility>

#ifdef __AVX2__
#include <immintrin.h>
#endif

namespace numpy {

// ---- SeedSequence -------------------------------------------------------------------------
namespace {
constexpr uint32_t INIT_A = 0x43b0d7e5, MULT_A = 0x931e8875;
constexpr uint32_t INIT_B = 0x8b51f9dd, MULT_B = 0x58f38ded;
constexpr uint32_t MIX_L = 0xca01f9dd, MIX_R = 0x4973f715;

std::vector<uint32_t> words_of(uint64_t seed) {
    // An int becomes uint32 words, least significant first; 0 is one word [0].
    std::vector<uint32_t> w;
    do {
        w.push_back(static_cast<uint32_t>(seed));
        seed >>= 32;
    } while (seed != 0);
    return w;
}
}  // namespace

SeedSequence::SeedSequence(uint64_t seed) : SeedSequence(words_of(seed)) {}

SeedSequence::SeedSequence(std::vector<uint32_t> entropy) {
    uint32_t hc = INIT_A;  // one running multiplier for all of the mixing
    auto hashmix = [&hc](uint32_t v) {
        v ^= hc;
        hc *= MULT_A;
        v *= hc;
        v ^= v >> 16;
        return v;
    };
    auto mix = [](uint32_t x, uint32_t y) {
        uint32_t r = MIX_L * x - MIX_R * y;
        r ^= r >> 16;
        return r;
    };
    for (int i = 0; i < 4; i++) pool_[i] = hashmix(i < (int)entropy.size() ? entropy[i] : 0);
    for (int s = 0; s < 4; s++)
        for (int d = 0; d < 4; d++)
            if (s != d) pool_[d] = mix(pool_[d], hashmix(pool_[s]));
    for (size_t s = 4; s < entropy.size(); s++)
        for (int d = 0; d < 4; d++) pool_[d] = mix(pool_[d], hashmix(entropy[s]));
}

std::vector<uint32_t> SeedSequence::generate_state32(size_t n) const {
    std::vector<uint32_t> out(n);
    uint32_t hc = INIT_B;
    for (size_t i = 0; i < n; i++) {
        uint32_t v = pool_[i % 4];
        v ^= hc;
        hc *= MULT_B;
        v *= hc;
        v ^= v >> 16;
        out[i] = v;
    }
    return out;
}

std::vector<uint64_t> SeedSequence::generate_state64(size_t n) const {
    std::vector<uint32_t> w = generate_state32(2 * n);
    std::vector<uint64_t> out(n);
    for (size_t k = 0; k < n; k++) out[k] = w[2 * k] | (uint64_t)w[2 * k + 1] << 32;
    return out;
}

// ---- PCG64 (XSL-RR 128/64) ----------------------------------------------------------------
namespace {
using u128 = unsigned __int128;
constexpr u128 PCG_MULT = ((u128)0x2360ED051FC65DA4ULL << 64) | 0x4385DF649FCCF645ULL;
}  // namespace

Generator::Generator(uint64_t seed) : Generator(SeedSequence(seed)) {}

Generator::Generator(const SeedSequence& seq) {
    std::vector<uint64_t> s = seq.generate_state64(4);
    u128 initstate = ((u128)s[0] << 64) | s[1];
    u128 initseq = ((u128)s[2] << 64) | s[3];
    state_ = 0;
    inc_ = (initseq << 1) | 1;
    state_ = state_ * PCG_MULT + inc_;
    state_ += initstate;
    state_ = state_ * PCG_MULT + inc_;
}

uint64_t Generator::random_raw() {
    state_ = state_ * PCG_MULT + inc_;  // advance first, then output from the new state
    uint64_t x = (uint64_t)(state_ >> 64) ^ (uint64_t)state_;
    unsigned rot = (unsigned)(state_ >> 122);
    return (x >> rot) | (x << ((64 - rot) & 63));
}

double Generator::random() { return (double)(random_raw() >> 11) * (1.0 / 9007199254740992.0); }

// ---- ziggurat tables ------------------------------------------------------------------------
// numpy compiles in its 256-layer tables (ziggurat_constants.h); we recompute them from R and
// the layer area v, ulp for ulp. ziggurat_table_hash() below lets tests/test_random.cpp compare
// the result with numpy 1.24's tables.
namespace {
constexpr double ZIG_R = 3.6541528853610087963519472518;
constexpr double ZIG_INV_R = 0.27366123732975827203338247596;

struct Ziggurat {
    uint64_t ki[256];
    double wi[256], fi[256];
    // The same, indexed by the raw's low 9 bits (layer, then sign): the bulk drawer's one lookup.
    // (-w) * r == -(w * r) exactly, so folding numpy's "if (sign) x = -x" into wi changes nothing.
    uint64_t ki_signed[512];
    double wi_signed[512];
    Ziggurat() {
        const double v = 0.0049286732339746519, S = 4503599627370496.0;  // S = 2^52
        double x[256], f[256];
        x[255] = ZIG_R;
        f[255] = std::exp(-0.5 * ZIG_R * ZIG_R);
        x[0] = 0;
        f[0] = 1;
        for (int i = 254; i >= 1; i--) {
            x[i] = std::sqrt(-2.0 * std::log(f[i + 1] + v / x[i + 1]));
            f[i] = std::exp(-0.5 * x[i] * x[i]);
            // numpy's generator of these tables got exp one ulp high here; every entry below
            // inherits it, so we patch the same ulp (the table hash checks the whole result).
            if (i == 38) f[i] = std::nextafter(f[i], INFINITY);
        }
        // Halves occur: round half to even (nearbyint), not half away from zero.
        ki[0] = (uint64_t)std::nearbyint(ZIG_R * f[255] / v * S);
        wi[0] = v / f[255] / S;
        for (int i = 1; i < 256; i++) {
            ki[i] = (uint64_t)std::nearbyint(x[i - 1] / x[i] * S);
            wi[i] = x[i] / S;
        }
        std::memcpy(fi, f, sizeof fi);
        for (int j = 0; j < 512; j++) {
            ki_signed[j] = ki[j & 255];
            wi_signed[j] = (j & 256) ? -wi[j & 255] : wi[j & 255];
        }
    }
};

const Ziggurat& zig() {
    static const Ziggurat z;
    return z;
}
}  // namespace

uint64_t ziggurat_table_hash() {
    const Ziggurat& z = zig();
    uint64_t h = 0xcbf29ce484222325ULL;
    auto eat = [&h](uint64_t word) {  // little-endian bytes of one 64-bit word
        for (int b = 0; b < 8; b++) {
            h ^= (word >> (8 * b)) & 0xFF;
            h *= 0x100000001b3ULL;
        }
    };
    for (int i = 0; i < 256; i++) eat(z.ki[i]);
    for (int i = 0; i < 256; i++) {
        uint64_t bits;
        std::memcpy(&bits, &z.wi[i], 8);
        eat(bits);
    }
    for (int i = 0; i < 256; i++) {
        uint64_t bits;
        std::memcpy(&bits, &z.fi[i], 8);
        eat(bits);
    }
    return h;
}

namespace {
// numpy's random_standard_normal, from its first raw output r on: usually returns x at once
// (inside the layer's rectangle, ~99% of draws), else takes the tail or wedge path, which may
// draw more raws and may reject and start over.
template <class NextRaw>
inline double ziggurat_from(const Ziggurat& z, uint64_t r, NextRaw&& next_raw) {
    auto next_double = [&] { return (double)(next_raw() >> 11) * (1.0 / 9007199254740992.0); };
    for (;;) {
        int idx = r & 0xFF;
        r >>= 8;
        uint64_t sign = r & 1;
        uint64_t rabs = (r >> 1) & 0x000FFFFFFFFFFFFFULL;  // 52 bits
        // if (sign) x = -x, as a multiplication by -1 (exact, keeps -0.0): a branch on a coin
        // flip would be mispredicted half the time. rabs < 2^52 converts exactly as int64.
        static constexpr double SIGNS[2] = {1.0, -1.0};
        double x = (double)(int64_t)rabs * z.wi[idx] * SIGNS[sign];
        if (rabs < z.ki[idx]) return x;  // inside the layer's rectangle: ~99.3% of draws
        if (idx == 0) {
            // The tail beyond R (Marsaglia's exponential rejection); its sign is bit 8 of rabs.
            for (;;) {
                double xx = -ZIG_INV_R * std::log1p(-next_double());
                double yy = -std::log1p(-next_double());
                if (yy + yy > xx * xx) return ((rabs >> 8) & 1) ? -(ZIG_R + xx) : ZIG_R + xx;
            }
        }
        // The wedge between two layers: accept under the density curve.
        if ((z.fi[idx - 1] - z.fi[idx]) * next_double() + z.fi[idx] < std::exp(-0.5 * x * x))
            return x;
        r = next_raw();  // rejected: start over with a fresh raw
    }
}

// One standard normal from a stream of raw 64-bit outputs.
template <class NextRaw>
inline double ziggurat(const Ziggurat& z, NextRaw&& next_raw) {
    return ziggurat_from(z, next_raw(), next_raw);
}

// n steps of the LCG at once: state -> a * state + c * inc. Squaring: O(log n) multiplies.
struct Jump {
    u128 a, c;
};
Jump pcg_jump(uint64_t n) {
    Jump r{1, 0};
    u128 m = PCG_MULT, k = 1;  // 2^i steps: state -> m * state + k * inc
    for (; n != 0; n >>= 1) {
        if (n & 1) r = {r.a * m, r.c * m + k};
        k = k * m + k;  // twice 2^i steps: m * (m * s + k) + k
        m = m * m;
    }
    return r;
}

u128 pcg_advanced(u128 state, u128 inc, uint64_t n) {
    Jump j = pcg_jump(n);
    return j.a * state + j.c * inc;
}

// ---- the bulk drawer -----------------------------------------------------------------------
// Eight interleaved copies of the LCG, copy k at raw positions k, k+8, k+16, ... (each one
// steps 8 at a time: state -> M^8 * state + C_8), so their multiplies can overlap. With AVX2
// the eight run in two 4-lane vectors (a 128-bit multiply from ten 32x32-bit ones), which leaves
// the scalar units to the ziggurat; without AVX2, in scalar registers.
constexpr int LANES = 8;

#ifdef __AVX2__
struct Lanes {
    __m256i lo[2], hi[2];                  // the 8 states, low and high 64 bits
    __m256i m_lo, m_lo_hi32, m_hi, m_hi_hi32, c_lo, c_lo_flipped, c_hi;  // the 8-step map

    Lanes(u128 first_state, u128 inc) {  // first_state: the state whose output is raw 0
        Jump j = pcg_jump(LANES);
        u128 c = j.c * inc;
        uint64_t m0 = (uint64_t)j.a, m1 = (uint64_t)(j.a >> 64), c0 = (uint64_t)c;
        m_lo = _mm256_set1_epi64x((long long)m0);
        m_lo_hi32 = _mm256_set1_epi64x((long long)(m0 >> 32));
        m_hi = _mm256_set1_epi64x((long long)m1);
        m_hi_hi32 = _mm256_set1_epi64x((long long)(m1 >> 32));
        c_lo = _mm256_set1_epi64x((long long)c0);
        c_lo_flipped = _mm256_set1_epi64x((long long)(c0 ^ 0x8000000000000000ULL));
        c_hi = _mm256_set1_epi64x((long long)(uint64_t)(c >> 64));
        alignas(32) uint64_t lo64[LANES], hi64[LANES];
        u128 s = first_state;
        for (int k = 0; k < LANES; k++) {
            lo64[k] = (uint64_t)s;
            hi64[k] = (uint64_t)(s >> 64);
            s = s * PCG_MULT + inc;
        }
        for (int h = 0; h < 2; h++) {
            lo[h] = _mm256_load_si256((const __m256i*)(lo64 + 4 * h));
            hi[h] = _mm256_load_si256((const __m256i*)(hi64 + 4 * h));
        }
    }

    // XSL-RR of 4 states. Shifts by 64 give 0 in AVX2, so rot = 0 needs no special case.
    static __m256i output(__m256i lo, __m256i hi) {
        __m256i x = _mm256_xor_si256(hi, lo);
        __m256i rot = _mm256_srli_epi64(hi, 58);
        __m256i left = _mm256_sub_epi64(_mm256_set1_epi64x(64), rot);
        return _mm256_or_si256(_mm256_srlv_epi64(x, rot), _mm256_sllv_epi64(x, left));
    }

    // state = M8 * state + C8 (mod 2^128) for 4 lanes, from 32x32 -> 64-bit products.
    void step(int h) {
        const __m256i mask32 = _mm256_set1_epi64x(0xFFFFFFFFLL);
        __m256i l = lo[h], l_hi32 = _mm256_srli_epi64(l, 32);
        __m256i u = hi[h], u_hi32 = _mm256_srli_epi64(u, 32);
        // l * m_lo as 128 bits: four partial products
        __m256i p00 = _mm256_mul_epu32(l, m_lo), p01 = _mm256_mul_epu32(l, m_lo_hi32);
        __m256i p10 = _mm256_mul_epu32(l_hi32, m_lo), p11 = _mm256_mul_epu32(l_hi32, m_lo_hi32);
        __m256i low = _mm256_add_epi64(p00, _mm256_slli_epi64(_mm256_add_epi64(p01, p10), 32));
        __m256i mid = _mm256_add_epi64(_mm256_srli_epi64(p00, 32),
                                       _mm256_add_epi64(_mm256_and_si256(p01, mask32),
                                                        _mm256_and_si256(p10, mask32)));
        __m256i high = _mm256_add_epi64(
            _mm256_add_epi64(p11, _mm256_srli_epi64(mid, 32)),
            _mm256_add_epi64(_mm256_srli_epi64(p01, 32), _mm256_srli_epi64(p10, 32)));
        // the low 64 bits of l * m_hi and of u * m_lo land in the high word
        __m256i cross_hi32 = _mm256_add_epi64(
            _mm256_add_epi64(_mm256_mul_epu32(l, m_hi_hi32), _mm256_mul_epu32(l_hi32, m_hi)),
            _mm256_add_epi64(_mm256_mul_epu32(u, m_lo_hi32), _mm256_mul_epu32(u_hi32, m_lo)));
        __m256i cross = _mm256_add_epi64(
            _mm256_add_epi64(_mm256_mul_epu32(l, m_hi), _mm256_mul_epu32(u, m_lo)),
            _mm256_slli_epi64(cross_hi32, 32));
        high = _mm256_add_epi64(high, _mm256_add_epi64(cross, c_hi));
        // + C8, carrying out of the low word when the sum wraps (unsigned compare via sign flip)
        low = _mm256_add_epi64(low, c_lo);
        __m256i flipped =
            _mm256_xor_si256(low, _mm256_set1_epi64x((long long)0x8000000000000000ULL));
        high = _mm256_sub_epi64(high, _mm256_cmpgt_epi64(c_lo_flipped, flipped));
        lo[h] = low;
        hi[h] = high;
    }

    void next8(uint64_t* dst) {  // the next 8 raw outputs, in order
        _mm256_storeu_si256((__m256i*)dst, output(lo[0], hi[0]));
        _mm256_storeu_si256((__m256i*)(dst + 4), output(lo[1], hi[1]));
        step(0);
        step(1);
    }
};
#else
// PCG64's output function (XSL-RR) of an already advanced state; the AVX2 lanes have their own.
inline uint64_t pcg_output(u128 state) {
    uint64_t x = (uint64_t)(state >> 64) ^ (uint64_t)state;
    unsigned rot = (unsigned)(state >> 122);
    return (x >> rot) | (x << ((64 - rot) & 63));
}

struct Lanes {
    u128 s[LANES], m, c;
    Lanes(u128 first_state, u128 inc) {
        Jump j = pcg_jump(LANES);
        m = j.a;
        c = j.c * inc;
        for (int k = 0; k < LANES; k++) {
            s[k] = first_state;
            first_state = first_state * PCG_MULT + inc;
        }
    }
    void next8(uint64_t* dst) {
        for (int k = 0; k < LANES; k++) {
            dst[k] = pcg_output(s[k]);
            s[k] = s[k] * m + c;
        }
    }
};
#endif

// numpy's standard normals from a PCG64 state on. Raws come in blocks of B; the next block is
// made 8 raws at a time while the current one is turned into normals 8 at a time (the two kinds
// of work overlap in the CPU).
class NormalDrawer {
public:
    NormalDrawer(u128 state, u128 inc) : lanes_(state * PCG_MULT + inc, inc) {
        for (size_t g = 0; g < B; g += LANES) lanes_.next8(cur_ + g);
    }

    uint64_t position() const { return base_ + p_; }  // raws consumed

    // n draws into out, in order.
    void fill(double* out, size_t n) {
        const Ziggurat& z = zig();
        size_t c = 0;
        while (c < n) {
            if (p_ == B) next_block();
            // Fast path: 8 raws at a time while all 8 are inside their rectangles.
            size_t p = p_, g = g_;
            Lanes lanes = lanes_;
            bool outside = false;  // some raw of the group needs the slow path
            while (p + 8 <= B && c + 8 <= n) {
                if (g < B) {
                    lanes.next8(nxt_ + g);
                    g += LANES;
                }
#pragma GCC unroll 8
                for (int k = 0; k < 8; k++) {
                    uint64_t r = cur_[p + k];
                    unsigned j = r & 0x1FF;                            // layer, sign
                    uint64_t rabs = (r >> 9) & 0x000FFFFFFFFFFFFFULL;  // 52 bits
                    out[c + k] = (double)(int64_t)rabs * z.wi_signed[j];
                    outside |= rabs >= z.ki_signed[j];
                }
                if (outside) break;
                p += 8;
                c += 8;
            }
            lanes_ = lanes;
            g_ = g;
            if (outside) {
                // The draws before the first outside raw are done; that one takes the slow path.
                int k = 0;
                while (((cur_[p + k] >> 9) & 0x000FFFFFFFFFFFFFULL) <
                       z.ki_signed[cur_[p + k] & 0x1FF])
                    k++;
                c += k;
                p_ = p + k + 1;
                out[c++] = slow(cur_[p + k]);
                continue;
            }
            p_ = p;
            // Near the end of the block or of n: one draw the general way.
            if (c < n && p_ < B) {
                uint64_t r = cur_[p_++];
                out[c++] = slow(r);
            }
        }
    }

private:
    static constexpr size_t B = 512;

    void next_block() {
        for (; g_ < B; g_ += LANES) lanes_.next8(nxt_ + g_);
        std::swap(cur_, nxt_);
        base_ += B;
        p_ = 0;
        g_ = 0;
    }
    uint64_t next_raw() {
        if (p_ == B) next_block();
        return cur_[p_++];
    }
    __attribute__((noinline)) double slow(uint64_t r) {
        return ziggurat_from(zig(), r, [this] { return next_raw(); });
    }

    Lanes lanes_;                       // makes the raws of the block after nxt_'s filled part
    alignas(64) uint64_t blocks_[2][B];
    uint64_t* cur_ = blocks_[0];        // raws base_ .. base_ + B - 1
    uint64_t* nxt_ = blocks_[1];        // the next B raws, filled up to g_
    size_t p_ = 0, g_ = 0;              // next raw of cur_ to read; raws of nxt_ made so far
    uint64_t base_ = 0;                 // raws before cur_'s first
};
}  // namespace

double Generator::standard_normal() {
    return ziggurat(zig(), [this] { return random_raw(); });
}

void Generator::advance(uint64_t delta) { state_ = pcg_advanced(state_, inc_, delta); }

void Generator::standard_normal(double* out, size_t n) {
    if (n >= 1024) {  // the bulk drawer makes 1024 raws ahead: worth it for longer runs only
        NormalDrawer d(state_, inc_);
        d.fill(out, n);
        advance(d.position());
        return;
    }
    const Ziggurat& z = zig();
    for (size_t i = 0; i < n; i++) out[i] = ziggurat(z, [this] { return random_raw(); });
}

std::vector<double> Generator::standard_normal(size_t n) {
    std::vector<double> out(n);
    standard_normal(out.data(), n);
    return out;
}

}  // namespace numpy

namespace torch_rng {

// ---- mt19937 ------------------------------------------------------------------------------
Generator::Generator(uint64_t seed) { manual_seed(seed); }

void Generator::manual_seed(uint64_t seed) {
    seed_ = seed;
    mt_[0] = static_cast<uint32_t>(seed);
    for (int j = 1; j < 624; j++) mt_[j] = 1812433253u * (mt_[j - 1] ^ (mt_[j - 1] >> 30)) + j;
    mti_ = 624;  // twist on the first draw
    has_cached_normal_ = false;
}

uint32_t Generator::random32() {
    if (mti_ >= 624) {
        for (int k = 0; k < 624; k++) {
            uint32_t y = (mt_[k] & 0x80000000u) | (mt_[(k + 1) % 624] & 0x7fffffffu);
            mt_[k] = mt_[(k + 397) % 624] ^ (y >> 1) ^ ((y & 1) ? 0x9908b0dfu : 0u);
        }
        mti_ = 0;
    }
    uint32_t y = mt_[mti_++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

uint64_t Generator::random64() {
    uint64_t hi = random32();
    uint64_t lo = random32();
    return hi << 32 | lo;
}

// ---- uniform --------------------------------------------------------------------------------
float Generator::uniform_float() {
    // torch takes the LOW 24 bits (numpy takes the high bits).
    return (float)(random32() & 0xFFFFFFu) * (1.0f / 16777216.0f);
}

double Generator::uniform_double() {
    return (double)(random64() & ((1ULL << 53) - 1)) * (1.0 / 9007199254740992.0);
}

void Generator::uniform_(float* x, size_t n, double from_d, double to_d) {
    const float from = (float)from_d, to = (float)to_d;
    const float w = to - from;
    for (size_t i = 0; i < n; i++) {
        float u = uniform_float();
        // torch's AVX2 build compiled u*w+from into one fused multiply-add.
        x[i] = avx2 ? std::fma(u, w, from) : u * w + from;
    }
}

std::vector<float> Generator::rand(size_t n) {
    std::vector<float> x(n);
    uniform_(x.data(), n, 0.0, 1.0);
    return x;
}

// ---- normal: float32 AVX2 math (Cephes polynomials as in torch's avx_mathfun.h) ----------------
namespace {
float from_bits(uint32_t b) {
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}
uint32_t to_bits(float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
}

// log(x) for x in (0, 1], one lane of torch's log256_ps.
float avx2_logf(float x) {
    static const float SQRTHF = from_bits(0x3F3504F3);
    static const float P[9] = {from_bits(0x3D9021BB), from_bits(0xBDEBD1B8), from_bits(0x3DEF251A),
                               from_bits(0xBDFE5D4F), from_bits(0x3E11E9BF), from_bits(0xBE2AAE50),
                               from_bits(0x3E4CCEAC), from_bits(0xBE7FFFFC), from_bits(0x3EAAAAAA)};
    static const float Q1 = from_bits(0xB95E8083), Q2 = from_bits(0x3F318000);
    uint32_t b = to_bits(x);
    float e = (float)((int)(b >> 23) - 127) + 1.0f;
    float m = from_bits((b & 0x807FFFFFu) | 0x3F000000u);  // mantissa in [0.5, 1)
    float t = 0.0f;
    if (m < SQRTHF) {
        e = e - 1.0f;
        t = m;
    }
    x = (m - 1.0f) + t;
    float z = x * x;
    float y = P[0];
    for (int k = 1; k < 9; k++) y = std::fma(y, x, P[k]);
    y = y * x;
    y = std::fma(y, z, e * Q1);
    y = y - z * 0.5f;
    x = x + y;
    x = x + e * Q2;
    return x;
}

// sin and cos of a >= 0, one lane of torch's sincos256_ps.
void avx2_sincosf(float a, float& sin_out, float& cos_out) {
    static const float FOPI = from_bits(0x3FA2F983);
    static const float DP1 = from_bits(0x3F490000), DP2 = from_bits(0x397DA000),
                       DP3 = from_bits(0x33222169);
    static const float C0 = from_bits(0x37CCF5CE), C1 = from_bits(0xBAB6061A),
                       C2 = from_bits(0x3D2AAAA5);
    static const float S0 = from_bits(0xB94CA1F9), S1 = from_bits(0x3C08839E),
                       S2 = from_bits(0xBE2AAAA3);
    int j = (int)(a * FOPI);  // truncating, like _mm256_cvttps_epi32
    j = (j + 1) & ~1;
    float y = (float)j;
    a = std::fma(y, -DP1, a);  // a - y*pi/4 in three exact-ish pieces
    a = std::fma(y, -DP2, a);
    a = std::fma(y, -DP3, a);
    float z = a * a;
    float c = std::fma(std::fma(C0, z, C1), z, C2);
    c = c * z;
    c = std::fma(c, z, -(z * 0.5f));
    c = c + 1.0f;
    float s = std::fma(std::fma(S0, z, S1), z, S2);
    s = s * z;
    s = std::fma(s, a, a);
    float sn = (j & 2) == 0 ? s : c;
    float cs = (j & 2) == 0 ? c : s;
    if ((j & 4) != 0) sn = from_bits(to_bits(sn) ^ 0x80000000u);
    if (((j - 2) & 4) == 0) cs = from_bits(to_bits(cs) ^ 0x80000000u);
    sin_out = sn;
    cos_out = cs;
}

// Box-Muller on 16 uniforms: d[j] and d[j+8] become a pair of normals (torch's normal_fill_16).
void transform16(float* d, bool avx2) {
    const float TWO_PI = (float)(2.0 * M_PI);
    for (int j = 0; j < 8; j++) {
        const float u1 = 1.0f - d[j];
        const float u2 = d[j + 8];
        if (avx2) {
            const float rad = std::sqrt(-2.0f * avx2_logf(u1));
            float s, c;
            avx2_sincosf(TWO_PI * u2, s, c);
            d[j] = rad * c;
            d[j + 8] = rad * s;
        } else {
            const float rad = std::sqrt(-2.0f * std::log(u1));
            const float th = (float)((2.0 * M_PI) * (double)u2);
            d[j] = rad * std::cos(th);
            d[j + 8] = rad * std::sin(th);
        }
    }
}

}  // namespace

void Generator::normal_fill(float* x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = uniform_float();  // n uniforms first
    for (size_t i = 0; i + 16 <= n; i += 16) transform16(x + i, avx2);
    if (n % 16 != 0) {
        // The last 16 slots overlap a finished block: torch overwrites them with fresh uniforms.
        float* p = x + n - 16;
        for (int k = 0; k < 16; k++) p[k] = uniform_float();
        transform16(p, avx2);
    }
}

double Generator::normal_double() {
    if (has_cached_normal_) {
        has_cached_normal_ = false;
        return cached_normal_;
    }
    const double u1 = uniform_double();
    const double u2 = uniform_double();
    const double r = std::sqrt(-2.0 * std::log(1.0 - u2));
    const double theta = (2.0 * M_PI) * u1;
    cached_normal_ = r * std::sin(theta);  // the other half of the pair waits for the next call
    has_cached_normal_ = true;
    return r * std::cos(theta);
}

void Generator::randn(float* x, size_t n) {
    if (n >= 16) {
        normal_fill(x, n);
    } else {
        for (size_t i = 0; i < n; i++) x[i] = (float)normal_double();
    }
}

std::vector<float> Generator::randn(size_t n) {
    std::vector<float> x(n);
    randn(x.data(), n);
    return x;
}

std::vector<int64_t> Generator::randint(int64_t low, int64_t high, size_t n) {
    const uint64_t range = (uint64_t)high - (uint64_t)low;
    std::vector<int64_t> out(n);
    for (size_t i = 0; i < n; i++) {
        uint64_t v = range >= (1ULL << 32) ? random64() : random32();
        out[i] = (int64_t)(v % range + (uint64_t)low);  // biased modulo, as torch does
    }
    return out;
}

void Generator::linear_init(float* weight, int out, int in, float* bias) {
    // kaiming_uniform_(weight, a=sqrt(5)) in Python doubles, in this order.
    const double a = std::sqrt(5.0);
    const double gain = std::sqrt(2.0 / (1.0 + a * a));
    const double bound_w = std::sqrt(3.0) * (gain / std::sqrt((double)in));
    uniform_(weight, (size_t)out * in, -bound_w, bound_w);
    if (bias) {
        const double bound_b = 1.0 / std::sqrt((double)in);
        uniform_(bias, out, -bound_b, bound_b);
    }
}

// ---- the default generator ------------------------------------------------------------------
Generator& default_generator() {
    static Generator gen(DEFAULT_SEED);
    return gen;
}
void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }
std::vector<float> rand(size_t n) { return default_generator().rand(n); }
std::vector<float> randn(size_t n) { return default_generator().randn(n); }
std::vector<int64_t> randint(int64_t low, int64_t high, size_t n) {
    return default_generator().randint(low, high, n);
}

}  // namespace torch_rng
