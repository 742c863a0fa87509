// gpu-bench: the issue's speed targets on a GPU (cuda/bench/gpu-check.sh builds it with nvcc and
// runs it; `make` builds it for the emulator as gpu-bench-emu, which the tests run with --quick).
//   1. sgemm 4096^3: the warp-tiled kernel (the default) and the register-tiled one vs cuBLAS
//      (cuBLAS is only the yardstick here; it is never in the measured path of chapter 6): its
//      default math mode, in which cublasSgemm computes in fp32 without TF32, and
//      NVIDIA_TF32_OVERRIDE=0 so that nothing turns TF32 on; not CUBLAS_PEDANTIC_MATH, which
//      NVIDIA documents as possibly slower, a softer yardstick. Its GFLOP/s are printed beside
//      ours. Then every block-tile shape of the warp-tiled kernel at every transpose, each
//      result checked against cuBLAS's; then the small grids: chapter 6's weight gradients
//      (split-K against one pass) and the LSTM's backward step product (the few-rows kernel's
//      split of K against one pass)
//   2. fused attention fwd+bwd, B = 8, h = 8, d_k = 64, n = 2048, 4096: TFLOP/s (4 B h n^2 d_k
//      forward, 2.5x that backward), speed-up over the naive path, peak memory ratio, and the
//      two paths' O, dQ, dK against each other; then FlashAttention version 1 (one thread per
//      row) beside version 2 (register tiles, the default), and their results against each other
//   3. LSTM: the gate kernels alone, fused vs unfused (per-op), over n steps of precomputed
//      pre-activations, and their h against each other; and the whole forward both ways
// and at the end one line per target, "met" or "NOT MET" (gpu-check copies them to its summary).
// Every cross-check that fails (a difference over its tolerance, or a NaN or inf in either
// result) prints a line starting "MISMATCH" naming the check, its worst index and both values,
// and gpu-bench then exits 1 after the targets: a wrong result is never a passing run.
// --plant-mismatch (adds 1 to one element of the first checked output; =CHECK, repeatable: of
// the first check whose name starts with CHECK) and --plant-nan (writes
// a NaN there) are for the tests: with either, gpu-bench must fail, naming that check.
#include "cuda/kernels.h"
#include "cuda/launch.h"

#if defined(__CUDACC__)
#include <cublas_v2.h>
#else
#include "cuda/emu/cublas_emulated.h"  // the emulator build, which the tests run with --quick
#endif
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace {

// At exit, as common/program/cli.h's check does for the chapters (this program is built by nvcc
// alone in gpu-check, without common/): results that did not reach stdout (a full disk, an I/O
// error) are an error, exit code 1, not a run that looks passed. Every timed run first writes
// out what is printed so far (time_ms): output that cannot be written stops the benchmark
// there instead of at its end, and a run cut short by gpu-check's time limit keeps its lines.
void check_stdout() {
    errno = 0;
    const bool flushed = std::fflush(stdout) == 0;
    const int err = flushed ? 0 : errno;
    if (flushed && !std::ferror(stdout)) return;
    std::fprintf(stderr, "gpu-bench: error: cannot write output: %s\n",
                 err ? std::strerror(err) : "a write to standard output failed");
    std::_Exit(1);
}

bool g_quick = false;  // --quick: one timed run, no warm-up (the times mean nothing there)

// time_ms: the median of `repeats` timed runs after `warmups` untimed ones; g_last_min_ms is
// the fastest of them (min and median are what the summary lines print).
float g_last_min_ms = 0;
float time_ms(const std::function<void()>& f, int warmups = 2, int repeats = 5) {
    check_stdout();
    if (g_quick) warmups = 0, repeats = 1;
    for (int i = 0; i < warmups; i++)
        f();
    std::vector<cudaEvent_t> ev(repeats + 1);
    for (cudaEvent_t& e : ev)
        CUDA_CHECK(cudaEventCreate(&e));
    CUDA_CHECK(cudaEventRecord(ev[0]));
    for (int i = 0; i < repeats; i++) {
        f();
        CUDA_CHECK(cudaEventRecord(ev[i + 1]));
    }
    CUDA_CHECK(cudaEventSynchronize(ev[repeats]));
    std::vector<float> ms(repeats);
    for (int i = 0; i < repeats; i++)
        CUDA_CHECK(cudaEventElapsedTime(&ms[i], ev[i], ev[i + 1]));
    for (cudaEvent_t& e : ev)
        CUDA_CHECK(cudaEventDestroy(e));
    std::sort(ms.begin(), ms.end());
    g_last_min_ms = ms[0];
    return repeats % 2 ? ms[repeats / 2] : 0.5f * (ms[repeats / 2 - 1] + ms[repeats / 2]);
}

}  // namespace

// p[i] = s * (a value in [-1, 1] in steps of 0.001), a different sequence for every seed, so
// that operands filled with different seeds are independent (a swapped operand shows).
__global__ void fill(float* p, long n, float s, unsigned seed) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long h = (unsigned long long)i * 2654435761ull + seed * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    p[i] = s * float(long(h % 2001) - 1000) / 1000.0f;
}
namespace {

unsigned g_next_seed = 1;  // every filled() buffer its own sequence
gpu::Buffer<float> filled(size_t n, float s) {
    gpu::Buffer<float> b(n);
    launch_kernel(fill, dim3(ceil_div(long(n), 256)), dim3(256), 0, b.data(), long(n), s,
                  g_next_seed++);
    return b;
}

// The issue's targets, one line each, printed together at the end (gpu-check's summary).
std::vector<std::string> g_targets;

void target(const std::string& what, double value, double at_least) {
    char line[256];
    std::snprintf(line, sizeof line, "target %s: %.2f, at least %.3g: %s", what.c_str(), value,
                  at_least, value >= at_least ? "met" : "NOT MET");
    g_targets.push_back(line);
}

// The cross-checks. check() copies a result and its reference (both n floats on the device)
// back and fails when any element differs by more than tol * max |reference|, or when either
// holds a NaN or inf (std::fmax would drop a NaN: it is looked for first). A failure prints one
// line, "MISMATCH <check>: ...", with the worst index and both values, and gpu-bench exits 1.
enum class Plant { none, mismatch, nan };
Plant g_plant = Plant::none;  // --plant-mismatch / --plant-nan: into the first check's result
std::vector<std::string> g_plant_in;  // or into the first check each of these names begins
int g_failed_checks = 0;
std::string g_first_failure;

struct Checked {
    double worst = 0, scale = 0;  // max |a - b|, max |b|
    bool ok = true;
};

void fail_check(const std::string& line) {
    std::printf("%s\n", line.c_str());
    if (g_failed_checks++ == 0) g_first_failure = line;
}

Checked check_host(const std::string& what, std::vector<float> x, const std::vector<float>& y,
                   double tol) {
    const size_t n = x.size();
    auto planted_here = [&] {
        if (g_plant_in.empty()) return true;
        for (size_t k = 0; k < g_plant_in.size(); k++)
            if (what.rfind(g_plant_in[k], 0) == 0) {
                g_plant_in.erase(g_plant_in.begin() + long(k));
                return true;
            }
        return false;
    };
    if (g_plant != Plant::none && n > 0 && planted_here()) {  // as a wrong kernel would
        const size_t at = n / 3;
        x[at] = g_plant == Plant::nan ? std::nanf("") : x[at] + 1.0f;
        if (g_plant_in.empty()) g_plant = Plant::none;
    }
    Checked c;
    size_t worst_at = 0, bad_at = n;
    for (size_t i = 0; i < n; i++) {
        if (!std::isfinite(x[i]) || !std::isfinite(y[i])) {
            if (bad_at == n) bad_at = i;
            continue;
        }
        const double d = std::fabs(double(x[i]) - y[i]);
        if (d > c.worst) c.worst = d, worst_at = i;
        c.scale = std::fmax(c.scale, std::fabs(double(y[i])));
    }
    char line[512];
    if (bad_at < n) {
        c.ok = false, c.worst = INFINITY;
        std::snprintf(line, sizeof line,
                      "MISMATCH %s: not finite at index %zu: %.9g, reference %.9g", what.c_str(),
                      bad_at, double(x[bad_at]), double(y[bad_at]));
        fail_check(line);
    } else if (c.worst > tol * c.scale) {
        c.ok = false;
        std::snprintf(line, sizeof line,
                      "MISMATCH %s: worst at index %zu: %.9g, reference %.9g (|diff| %.3g over "
                      "the tolerance %.3g = %.0e * max |reference| %.3g)",
                      what.c_str(), worst_at, double(x[worst_at]), double(y[worst_at]), c.worst,
                      tol * c.scale, tol, c.scale);
        fail_check(line);
    }
    return c;
}

Checked check(const std::string& what, const float* a, const float* b, size_t n, double tol) {
    std::vector<float> x(n), y(n);
    CUDA_CHECK(cudaMemcpy(x.data(), a, n * 4, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(y.data(), b, n * 4, cudaMemcpyDeviceToHost));
    return check_host(what, std::move(x), y, tol);
}

const char* names_of(int k) {
    static const char* const names[] = {"O", "dQ", "dK", "dV"};
    return names[k];
}

// Fused attention at one large n (B = 1, h = 2, d_k = 64), causal or not, against a double
// reference for the last head: 64 query rows, whole (O, L, dQ), and 64 key rows, whole (dK,
// dV). Every row's softmax statistics are recomputed in double on the host (all cores), so
// nothing of the GPU's result enters the reference.
void sampled_reference_check(int n, bool causal) {
    const int B = 1, h = 2, d_k = 64, rows = 64;
    const size_t sz = size_t(B) * h * n * d_k;
    auto Q = filled(sz, 1), K = filled(sz, 1), V = filled(sz, 1), dO = filled(sz, 1);
    gpu::Buffer<float> O(sz), dQ(sz), dK(sz), dV(sz), L(size_t(B) * h * n);
    attention_fused_forward_cuda(Q.data(), K.data(), V.data(), O.data(), L.data(), B, h, n, d_k,
                                 causal);
    attention_fused_backward_cuda(Q.data(), K.data(), V.data(), O.data(), L.data(), dO.data(),
                                  dQ.data(), dK.data(), dV.data(), B, h, n, d_k, causal);
    const size_t head = size_t(h - 1) * n * d_k, per_head = size_t(n) * d_k;
    auto host = [&](const gpu::Buffer<float>& b, size_t off, size_t count) {
        std::vector<float> x(count);
        CUDA_CHECK(cudaMemcpy(x.data(), b.data() + off, count * 4, cudaMemcpyDeviceToHost));
        return x;
    };
    // The last head of Q, K, V, dO (n, d_k); the GPU's O, dQ, dK, dV, L of that head.
    const auto q = host(Q, head, per_head), k = host(K, head, per_head),
               v = host(V, head, per_head), dout = host(dO, head, per_head);
    const auto o_gpu = host(O, head, per_head), dq_gpu = host(dQ, head, per_head),
               dk_gpu = host(dK, head, per_head), dv_gpu = host(dV, head, per_head),
               l_gpu = host(L, size_t(h - 1) * n, n);
    const double scale = 1.0 / std::sqrt(double(d_k));
    auto dot = [&](const std::vector<float>& a, int i, const std::vector<float>& b, int j) {
        double s = 0;
        for (int d = 0; d < d_k; d++)
            s += double(a[size_t(i) * d_k + d]) * b[size_t(j) * d_k + d];
        return s;
    };
    // Every row i: L_i (natural log), O_i and D_i = dO_i . O_i, in double.
    std::vector<double> Lr(n), Dr(n), Or(per_head);
    {
        auto rows_from = [&](int r0, int step) {
            std::vector<double> s(n);
            for (int i = r0; i < n; i += step) {
                const int end = causal ? i + 1 : n;
                double m = -INFINITY;
                for (int j = 0; j < end; j++)
                    m = std::max(m, s[j] = scale * dot(q, i, k, j));
                double l = 0;
                std::vector<double> o(d_k, 0.0);
                for (int j = 0; j < end; j++) {
                    const double p = std::exp(s[j] - m);
                    l += p;
                    for (int d = 0; d < d_k; d++)
                        o[d] += p * v[size_t(j) * d_k + d];
                }
                Lr[i] = m + std::log(l);
                double D = 0;
                for (int d = 0; d < d_k; d++) {
                    Or[size_t(i) * d_k + d] = o[d] / l;
                    D += double(dout[size_t(i) * d_k + d]) * (o[d] / l);
                }
                Dr[i] = D;
            }
        };
        const int workers = std::max(1, std::min(64, int(std::thread::hardware_concurrency())));
        std::vector<std::thread> pool;
        for (int w = 0; w < workers; w++)
            pool.emplace_back(rows_from, w, workers);
        for (auto& t : pool)
            t.join();
    }
    // The sampled rows, spread over the whole length (first and last included).
    std::vector<int> sample(rows);
    for (int r = 0; r < rows; r++)
        sample[r] = int((long(n - 1) * r) / (rows - 1));
    std::vector<float> o_ref, o_got, l_ref, l_got, dq_ref, dq_got, dk_ref, dk_got, dv_ref, dv_got;
    for (int i : sample) {  // query rows: O_i, L_i, dQ_i = scale sum_j dS_ij K_j
        std::vector<double> dq(d_k, 0.0);
        for (int j = 0; j < (causal ? i + 1 : n); j++) {
            const double p = std::exp(scale * dot(q, i, k, j) - Lr[i]);
            const double ds = p * (dot(dout, i, v, j) - Dr[i]);
            for (int d = 0; d < d_k; d++)
                dq[d] += scale * ds * k[size_t(j) * d_k + d];
        }
        for (int d = 0; d < d_k; d++) {
            o_ref.push_back(float(Or[size_t(i) * d_k + d]));
            o_got.push_back(o_gpu[size_t(i) * d_k + d]);
            dq_ref.push_back(float(dq[d]));
            dq_got.push_back(dq_gpu[size_t(i) * d_k + d]);
        }
        l_ref.push_back(float(Lr[i]));
        l_got.push_back(l_gpu[i]);
    }
    for (int j : sample) {  // key rows: dV_j = sum_i P_ij dO_i, dK_j = scale sum_i dS_ij Q_i
        std::vector<double> dk(d_k, 0.0), dv(d_k, 0.0);
        for (int i = causal ? j : 0; i < n; i++) {
            const double p = std::exp(scale * dot(q, i, k, j) - Lr[i]);
            const double ds = p * (dot(dout, i, v, j) - Dr[i]);
            for (int d = 0; d < d_k; d++) {
                dv[d] += p * dout[size_t(i) * d_k + d];
                dk[d] += scale * ds * q[size_t(i) * d_k + d];
            }
        }
        for (int d = 0; d < d_k; d++) {
            dk_ref.push_back(float(dk[d]));
            dk_got.push_back(dk_gpu[size_t(j) * d_k + d]);
            dv_ref.push_back(float(dv[d]));
            dv_got.push_back(dv_gpu[size_t(j) * d_k + d]);
        }
    }
    const std::string what = std::string("attention n=") + std::to_string(n) +
                             (causal ? " causal" : "") + " sampled rows vs double";
    std::printf("%s (64 query and 64 key rows of head %d):", what.c_str(), h - 1);
    const struct {
        const char* name;
        std::vector<float>& got;
        std::vector<float>& ref;
    } parts[] = {{"O", o_got, o_ref},
                 {"L", l_got, l_ref},
                 {"dQ", dq_got, dq_ref},
                 {"dK", dk_got, dk_ref},
                 {"dV", dv_got, dv_ref}};
    for (const auto& part : parts) {
        const Checked c = check_host(what + " " + part.name, part.got, part.ref, 2e-3);
        std::printf(" max |%s diff| = %.2g (max |%s| = %.3g)%s", part.name, c.worst, part.name,
                    c.scale, c.ok ? "" : " (MISMATCH)");
    }
    std::printf("\n");
}

// A device buffer's first `count` floats from `off` on, on the host.
std::vector<float> to_host(const gpu::Buffer<float>& b, size_t off, size_t count) {
    std::vector<float> x(count);
    CUDA_CHECK(cudaMemcpy(x.data(), b.data() + off, count * 4, cudaMemcpyDeviceToHost));
    return x;
}

// The LSTM's h (n steps of (B, d), from step 1), in double on the host (all cores), as
// cuda/lstm.cu defines it: h_0 = c_0 = 0; each step's pre-activations (B, 4d) the bias plus
// pre(t, row, j) (x_t W_ih^T + h_{t-1} W_hh^T for the whole forward, given for the gates alone),
// in the order i, f, g, o; c = f c + i g, h = o tanh(c). An independent reference: nothing of
// the GPU's result enters it.
template <class Pre>
std::vector<float> lstm_h_reference(int n, int B, int d, const std::vector<float>& b, Pre pre) {
    const size_t step = size_t(B) * d;
    std::vector<double> h((size_t(n) + 1) * step, 0.0), c(step, 0.0), G(4 * step);
    const int workers = std::max(1, std::min(64, int(std::thread::hardware_concurrency())));
    for (int t = 1; t <= n; t++) {
        const double* h_prev = h.data() + size_t(t - 1) * step;
        auto rows = [&](int w) {
            for (size_t r = size_t(w); r < 4 * step; r += size_t(workers))
                G[r] = b[r % (4 * size_t(d))] + pre(t, int(r / (4 * size_t(d))),
                                                    int(r % (4 * size_t(d))), h_prev);
        };
        std::vector<std::thread> pool;
        for (int w = 0; w < workers; w++)
            pool.emplace_back(rows, w);
        for (auto& th : pool)
            th.join();
        for (int row = 0; row < B; row++)
            for (int k = 0; k < d; k++) {
                const double* g = G.data() + size_t(row) * 4 * d;
                auto sigmoid = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
                const double i = sigmoid(g[k]), f = sigmoid(g[d + k]), gg = std::tanh(g[2 * d + k]),
                             o = sigmoid(g[3 * d + k]);
                double& cc = c[size_t(row) * d + k];
                cc = f * cc + i * gg;
                h[size_t(t) * step + size_t(row) * d + k] = o * std::tanh(cc);
            }
    }
    return std::vector<float>(h.begin() + long(step), h.end());
}

}  // namespace

// --quick: every section at small sizes, for the emulator build the tests run (it checks this
// program's shapes, strides and comparisons; its times mean nothing there).
int main(int argc, char** argv) try {
    std::atexit(check_stdout);
    bool quick = false;
    for (int i = 1; i < argc; i++) {  // before any device work: --help, or a one-line refusal
        const char* a = argv[i];
        if (!std::strcmp(a, "--help") || !std::strcmp(a, "-h")) {
            std::printf(
                "usage: gpu-bench [--quick] [--plant-mismatch | --plant-nan]\nthe speed targets "
                "on the GPU: sgemm, fused attention, LSTM gates; every result cross-checked (exit "
                "1 on a mismatch)\n  --quick           every section at small sizes\n"
                "  --plant-mismatch  add 1 to one element of the first checked result (a test: "
                "gpu-bench must fail)\n  --plant-nan       write a NaN there instead\n"
                "  --plant-mismatch=CHECK, --plant-nan=CHECK  the same in the first check whose "
                "name begins with CHECK (repeatable)\n");
            return 0;
        }
        if (!std::strcmp(a, "--quick")) {
            quick = true;
        } else if ((!std::strncmp(a, "--plant-mismatch", 16) && (!a[16] || a[16] == '=')) ||
                   (!std::strncmp(a, "--plant-nan", 11) && (!a[11] || a[11] == '='))) {
            const Plant p = !std::strncmp(a, "--plant-nan", 11) ? Plant::nan : Plant::mismatch;
            if (const char* eq = std::strchr(a, '=')) {
                if (!eq[1] || (g_plant != Plant::none && g_plant_in.empty())) {
                    std::fprintf(stderr, "gpu-bench: error: %.*s=CHECK needs a check's name, "
                                 "and cannot be mixed with the plain form\n",
                                 int(eq - a), a);
                    return 2;
                }
                g_plant_in.push_back(eq + 1);
            } else if (!g_plant_in.empty()) {
                std::fprintf(stderr, "gpu-bench: error: %s cannot be mixed with its =CHECK form\n",
                             a);
                return 2;
            }
            if (g_plant != Plant::none && g_plant != p) {
                std::fprintf(stderr,
                             "gpu-bench: error: --plant-mismatch and --plant-nan "
                             "exclude each other: give one\n");
                return 2;
            }
            g_plant = p;
        } else {
            std::string shown;  // control bytes as '?', so the line stays one line
            for (const char* c = a; *c && shown.size() < 40; c++)
                shown += (unsigned char)*c < 0x20 || *c == 0x7f ? '?' : *c;
            std::fprintf(stderr,
                         "gpu-bench: error: unexpected argument '%s': the options are --quick, "
                         "--plant-mismatch and --plant-nan (see --help)\n",
                         shown.c_str());
            return 2;
        }
    }
    g_quick = quick;
    // Before the CUDA libraries start: no TF32 anywhere (gpu-check sets it too).
    setenv("NVIDIA_TF32_OVERRIDE", "0", 1);
    int devices = 0;
    const cudaError_t e = cudaGetDeviceCount(&devices);
    if (e != cudaSuccess || devices == 0) {
        std::fprintf(stderr, "gpu-bench: no CUDA device visible (%s)\n",
                     e != cudaSuccess ? cudaGetErrorString(e) : "device count 0");
        return 1;
    }
    {  // 1. sgemm
        const int N = quick ? 136 : 4096;
        auto A = filled(size_t(N) * N, 1), B = filled(size_t(N) * N, 1);
        gpu::Buffer<float> C(size_t(N) * N), C_ref(size_t(N) * N);
        // A failed cuBLAS call would otherwise show up as nonsense timings and mismatches.
        auto cublas_check = [](cublasStatus_t status, const char* call) {
            if (status != CUBLAS_STATUS_SUCCESS)
                throw std::runtime_error(std::string(call) + " failed: cuBLAS status " +
                                         std::to_string(int(status)));
        };
        cublasHandle_t handle;
        cublas_check(cublasCreate(&handle), "cublasCreate");
        cublas_check(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
        std::printf(
            "cuBLAS yardstick: cublasSgemm, CUBLAS_DEFAULT_MATH (fp32, no TF32), "
            "NVIDIA_TF32_OVERRIDE=%s\n",
            std::getenv("NVIDIA_TF32_OVERRIDE"));
        const float one = 1, zero = 0;
        // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLAS gets B first.
        auto cublas_run = [&](bool ta, bool tb, float* out) {
            cublas_check(
                cublasSgemm(handle, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                            N, N, N, &one, B.data(), N, A.data(), N, &zero, out, N),
                "cublasSgemm");
        };
        auto ours_run = [&](bool ta, bool tb, SgemmVersion v,
                            SgemmTile tile = SgemmTile::automatic, float* out = nullptr) {
            sgemm_cuda(ta, tb, N, N, N, 1.0f, A.data(), N, B.data(), N, 0.0f,
                       out ? out : C.data(), N, 1, 0, 0, 0, v, tile);
        };
        const double tflop = 2.0 * N * N * N / 1e12;
        // Each timed version's result is kept and checked against cuBLAS's after the table of
        // tile shapes (whose first check is the one the --plant options spoil).
        gpu::Buffer<float> C_warp(size_t(N) * N), C_reg(size_t(N) * N), C_tiled(size_t(N) * N);
        float warp = time_ms([&] {
            ours_run(false, false, SgemmVersion::warp_tiled, SgemmTile::automatic, C_warp.data());
        });
        float reg = time_ms([&] {
            ours_run(false, false, SgemmVersion::register_tiled, SgemmTile::automatic,
                     C_reg.data());
        });
        float tiled = time_ms([&] {
            ours_run(false, false, SgemmVersion::tiled, SgemmTile::automatic, C_tiled.data());
        });
        float cublas = time_ms([&] { cublas_run(false, false, C_ref.data()); });
        std::printf(
            "sgemm %d^3: warp-tiled %.2f ms (%.0f GFLOP/s), register-tiled %.2f ms "
            "(%.0f GFLOP/s), shared-tiled %.2f ms, cuBLAS %.2f ms (%.0f GFLOP/s): "
            "warp-tiled/cuBLAS speed = %.2fx (target >= 0.85x), register-tiled/cuBLAS "
            "= %.2fx\n",
            N, warp, tflop / warp * 1e6, reg, tflop / reg * 1e6, tiled, cublas,
            tflop / cublas * 1e6, cublas / warp, cublas / reg);
        target("sgemm " + std::to_string(N) + "^3 warp-tiled (default tile) / cuBLAS speed",
               cublas / warp, 0.85);
        // Every block-tile shape of the warp-tiled kernel at the four transposes (attention
        // uses NT for Q K^T and TN for P^T dO), each beside cuBLAS, and each result against
        // cuBLAS's: the same products in a different order of additions, so only rounding
        // may differ. The fastest shape is the one to make the default on this GPU.
        const struct {
            SgemmTile tile;
            const char* name;
        } tiles[] = {{SgemmTile::b128x128t8x8, "128x128, 8x8 (default)"},
                     {SgemmTile::b128x64t8x8, "128x64, 8x8 (N <= 64)"},
                     {SgemmTile::b128x128t8x16, "128x128, 8x16"},
                     {SgemmTile::b128x256t8x16, "128x256, 8x16"},
                     {SgemmTile::b256x128t16x8, "256x128, 16x8"}};
        float cublas_ms[4];
        std::vector<gpu::Buffer<float>> refs;  // cuBLAS's result for each transpose pair
        for (int t = 0; t < 4; t++) {
            const bool ta = t & 2, tb = t & 1;
            refs.emplace_back(size_t(N) * N);
            cublas_ms[t] = time_ms([&] { cublas_run(ta, tb, refs[t].data()); });
        }
        std::printf(
            "sgemm %d^3 speed / cuBLAS (cuBLAS: NN %.2f ms %.0f GFLOP/s, NT %.2f ms "
            "%.0f, TN %.2f ms %.0f, TT %.2f ms %.0f)\n",
            N, cublas_ms[0], tflop / cublas_ms[0] * 1e6, cublas_ms[1], tflop / cublas_ms[1] * 1e6,
            cublas_ms[2], tflop / cublas_ms[2] * 1e6, cublas_ms[3], tflop / cublas_ms[3] * 1e6);
        double best = 0;
        const char* best_name = "";
        for (const auto& row : tiles) {
            const SgemmTile tile = row.tile;  // a plain name: clang 14 cannot capture a binding
            const char* name = row.name;
            std::printf("  %-22s", name);
            for (int t = 0; t < 4; t++) {
                const bool ta = t & 2, tb = t & 1;
                float w = time_ms([&] { ours_run(ta, tb, SgemmVersion::warp_tiled, tile); });
                const std::string what = std::string("sgemm ") + std::to_string(N) + "^3 " + name +
                                         " " + (ta ? 'T' : 'N') + (tb ? 'T' : 'N') + " vs cuBLAS";
                const Checked c = check(what, C.data(), refs[t].data(), size_t(N) * N, 1e-4);
                std::printf("  %c%c %.2fx (%.0f GFLOP/s)%s", ta ? 'T' : 'N', tb ? 'T' : 'N',
                            cublas_ms[t] / w, tflop / w * 1e6, c.ok ? "" : " (MISMATCH)");
                if (t == 0 && cublas_ms[t] / w > best) best = cublas_ms[t] / w, best_name = name;
            }
            std::printf("\n");
        }
        target(std::string("sgemm NN, the fastest tile shape (") + best_name + ") / cuBLAS speed",
               best, 0.85);
        // The versions timed first, each against cuBLAS's NN result (checked before the line is
        // printed, so that a MISMATCH line starts a line of its own).
        {
            const std::pair<const char*, const float*> timed[] = {
                {"warp-tiled (default)", C_warp.data()},
                {"register-tiled", C_reg.data()},
                {"shared-tiled", C_tiled.data()}};
            Checked c[3];
            for (int k = 0; k < 3; k++)
                c[k] = check("sgemm " + std::to_string(N) + "^3 " + timed[k].first +
                                 " NN vs cuBLAS",
                             timed[k].second, C_ref.data(), size_t(N) * N, 1e-4);
            std::printf("sgemm %d^3 NN vs cuBLAS:", N);
            for (int k = 0; k < 3; k++)
                std::printf(" %s max |diff| = %.2g (max |C| = %.3g)%s", timed[k].first,
                            c[k].worst, c[k].scale, c[k].ok ? "" : " (MISMATCH)");
            std::printf("\n");
        }
        // The small grids: fewer tiles than SMs. The weight gradients of chapter 6's attention
        // layer (B = 8, n = 16384, d = 512: C^T = dY^T X, K = B n) by split-K (the default)
        // and in one pass (an explicit tile), and the LSTM's backward step dG_t W_hh (B = 8,
        // d = 512) by the few-rows kernel with its split of K and without; cuBLAS beside both,
        // each result checked against cuBLAS's.
        auto small_grid = [&](const char* what, bool ta, bool tb, int M, int Nn, int K,
                              SgemmTile one_pass, int repeat) {
            auto X = filled(size_t(M) * K, 1), Y = filled(size_t(K) * Nn, 1);
            gpu::Buffer<float> out(size_t(M) * Nn), ref(size_t(M) * Nn);
            const int lda = ta ? M : K, ldb = tb ? K : Nn;
            auto ours = [&](SgemmTile tile) {
                sgemm_cuda(ta, tb, M, Nn, K, 1.0f, X.data(), lda, Y.data(), ldb, 0.0f, out.data(),
                           Nn, 1, 0, 0, 0, SgemmVersion::warp_tiled, tile);
            };
            // One call's time, from `repeat` calls in a row (the LSTM's steps are short).
            auto per_call = [&](const std::function<void()>& f) {
                auto calls = [&] {
                    for (int r = 0; r < repeat; r++)
                        f();
                };
                return time_ms(calls) / repeat;
            };
            const float t_cublas = per_call([&] {
                cublas_check(cublasSgemm(handle, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                         ta ? CUBLAS_OP_T : CUBLAS_OP_N, Nn, M, K, &one, Y.data(),
                                         ldb, X.data(), lda, &zero, ref.data(), Nn),
                             "cublasSgemm");
            });
            const float t_one = per_call([&] { ours(one_pass); });
            const std::string name = std::string("sgemm ") + what;
            const Checked c1 =
                check(name + " one pass vs cuBLAS", out.data(), ref.data(), size_t(M) * Nn, 1e-4);
            const float t_split = per_call([&] { ours(SgemmTile::automatic); });
            const Checked c2 =
                check(name + " default vs cuBLAS", out.data(), ref.data(), size_t(M) * Nn, 1e-4);
            const double gflop = 2.0 * M * Nn * double(K) / 1e9;
            const int slices = sgemm_k_splits(ta, tb, M, Nn, K);
            std::printf(
                "  %s (%c%c %d x %d, K = %d): default %.3f ms (%.0f GFLOP/s, %d slices "
                "of K), one pass %.3f ms (%.0f GFLOP/s), cuBLAS %.3f ms (%.0f GFLOP/s): "
                "the split is %.2fx the one pass%s\n",
                what, ta ? 'T' : 'N', tb ? 'T' : 'N', M, Nn, K, t_split, gflop / t_split * 1e3,
                slices, t_one, gflop / t_one * 1e3, t_cublas, gflop / t_cublas * 1e3,
                t_one / t_split, c1.ok && c2.ok ? "" : " (MISMATCH)");
        };
        std::printf("sgemm on small grids (fewer tiles than SMs):\n");
        const int rows = quick ? 1024 : 8 * 16384, d = quick ? 72 : 512;
        small_grid("dW_proj = dY^T O", true, false, d, d, rows, SgemmTile::b128x128t8x8, 1);
        small_grid("dW_qkv = dQKV^T X", true, false, 3 * d, d, rows, SgemmTile::b128x128t8x8, 1);
        const int lstm_d = quick ? 256 : 512;
        small_grid("LSTM step dG_t W_hh", false, false, 8, lstm_d, 4 * lstm_d,
                   SgemmTile::few_rows_one_pass, quick ? 2 : 256);
        cublasDestroy(handle);
    }
    {  // 2. attention
        const int B = quick ? 2 : 8, h = quick ? 2 : 8, d_k = 64;
        const std::vector<int> ns = quick ? std::vector<int>{40, 72} : std::vector<int>{2048, 4096};
        for (int n : ns) {
            size_t sz = size_t(B) * h * n * d_k;
            auto Q = filled(sz, 1), K = filled(sz, 1), V = filled(sz, 1), dO = filled(sz, 1);
            gpu::Buffer<float> O(sz), dQ(sz), dK(sz), dV(sz), L(size_t(B) * h * n);
            gpu::reset_peak();
            size_t base = gpu::current_bytes();
            float fused = time_ms([&] {
                attention_fused_forward_cuda(Q.data(), K.data(), V.data(), O.data(), L.data(), B, h,
                                             n, d_k, false);
                attention_fused_backward_cuda(Q.data(), K.data(), V.data(), O.data(), L.data(),
                                              dO.data(), dQ.data(), dK.data(), dV.data(), B, h, n,
                                              d_k, false);
            });
            double fused_peak = double(gpu::peak_bytes());
            double flops = 4.0 * B * h * double(n) * n * d_k * 3.5;
            float naive = -1;
            double naive_peak = 0;
            const float fused_min = g_last_min_ms;
            // The two paths must agree at these sizes too: keep the fused results.
            gpu::Buffer<float> O_f(sz), dQ_f(sz), dK_f(sz), dV_f(sz);
            CUDA_CHECK(cudaMemcpy(O_f.data(), O.data(), sz * 4, cudaMemcpyDeviceToDevice));
            CUDA_CHECK(cudaMemcpy(dQ_f.data(), dQ.data(), sz * 4, cudaMemcpyDeviceToDevice));
            CUDA_CHECK(cudaMemcpy(dK_f.data(), dK.data(), sz * 4, cudaMemcpyDeviceToDevice));
            CUDA_CHECK(cudaMemcpy(dV_f.data(), dV.data(), sz * 4, cudaMemcpyDeviceToDevice));
            const char* names[] = {"O", "dQ", "dK", "dV"};
            const float* fused_out[] = {O_f.data(), dQ_f.data(), dK_f.data(), dV_f.data()};
            const float* last_out[] = {O.data(), dQ.data(), dK.data(), dV.data()};
            try {
                gpu::reset_peak();
                gpu::Buffer<float> P(size_t(B) * h * n * n);
                naive = time_ms([&] {
                    attention_naive_forward_cuda(Q.data(), K.data(), V.data(), O.data(), P.data(),
                                                 B, h, n, d_k, false);
                    attention_naive_backward_cuda(Q.data(), K.data(), V.data(), P.data(), dO.data(),
                                                  dQ.data(), dK.data(), dV.data(), B, h, n, d_k,
                                                  false);
                });
                naive_peak = double(gpu::peak_bytes());
            } catch (const std::bad_alloc&) {
            }
            const float naive_min = g_last_min_ms;
            if (naive >= 0) {
                std::printf("attention n=%d fused vs naive:", n);
                for (int k = 0; k < 4; k++) {
                    const Checked c = check(
                        "attention n=" + std::to_string(n) + " " + names[k] + ", fused vs naive",
                        fused_out[k], last_out[k], sz, 1e-3);
                    std::printf(" max |%s diff| = %.2g (max |%s| = %.3g)%s", names[k], c.worst,
                                names[k], c.scale, c.ok ? "" : " (MISMATCH)");
                }
                std::printf("\n");
            }
            std::printf(
                "attention fwd+bwd n=%d: fused %.2f ms (min %.2f; %.1f TFLOP/s, target >= 20), "
                "naive %.2f ms (min %.2f): speed-up %.2fx (target >= 1.5x at 4096), peak %.0f MB "
                "vs %.0f MB: %.1fx less (target >= 8x)  [inputs %.0f MB]\n",
                n, fused, fused_min, flops / fused / 1e9, naive, naive_min, naive / fused,
                fused_peak / 1048576, naive_peak / 1048576, naive_peak / fused_peak,
                double(base) / 1048576);
            const std::string at = " at n=" + std::to_string(n);
            target("fused attention fwd+bwd TFLOP/s" + at, flops / fused / 1e9, 20);
            if (naive >= 0) {
                target("fused attention peak memory, naive / fused" + at, naive_peak / fused_peak,
                       8);
                if (n == ns.back())
                    target("fused attention speed-up over naive" + at, naive / fused, 1.5);
            }
            // Where the time goes, for tuning: each kernel alone (the backward reuses the
            // forward's O and L), and the naive path's products alone, without the softmax
            // and the memory traffic of P.
            float fwd = time_ms([&] {
                attention_fused_forward_cuda(Q.data(), K.data(), V.data(), O.data(), L.data(), B, h,
                                             n, d_k, false);
            });
            float bwd = time_ms([&] {
                attention_fused_backward_cuda(Q.data(), K.data(), V.data(), O.data(), L.data(),
                                              dO.data(), dQ.data(), dK.data(), dV.data(), B, h, n,
                                              d_k, false);
            });
            std::printf("  fused forward %.2f ms (%.1f TFLOP/s), backward %.2f ms (%.1f TFLOP/s)",
                        fwd, flops / 3.5 / fwd / 1e9, bwd, flops * 2.5 / 3.5 / bwd / 1e9);
            try {
                gpu::Buffer<float> P(size_t(B) * h * n * n);
                const long qkv = long(n) * d_k, pp = long(n) * n;
                // The six products of the naive forward and backward (S, P V; dV, dP, dQ, dK).
                float products = time_ms([&] {
                    sgemm_cuda(false, true, n, n, d_k, 1.0f, Q.data(), d_k, K.data(), d_k, 0.0f,
                               P.data(), n, B * h, qkv, qkv, pp);
                    sgemm_cuda(false, false, n, d_k, n, 1.0f, P.data(), n, V.data(), d_k, 0.0f,
                               O.data(), d_k, B * h, pp, qkv, qkv);
                    sgemm_cuda(true, false, n, d_k, n, 1.0f, P.data(), n, dO.data(), d_k, 0.0f,
                               dV.data(), d_k, B * h, pp, qkv, qkv);
                    sgemm_cuda(false, true, n, n, d_k, 1.0f, dO.data(), d_k, V.data(), d_k, 0.0f,
                               P.data(), n, B * h, qkv, qkv, pp);
                    sgemm_cuda(false, false, n, d_k, n, 1.0f, P.data(), n, K.data(), d_k, 0.0f,
                               dQ.data(), d_k, B * h, pp, qkv, qkv);
                    sgemm_cuda(true, false, n, d_k, n, 1.0f, P.data(), n, Q.data(), d_k, 0.0f,
                               dK.data(), d_k, B * h, pp, qkv, qkv);
                });
                std::printf("; naive's 6 products alone %.2f ms (%.1f TFLOP/s)", products,
                            flops * 3.0 / 3.5 / products / 1e9);
            } catch (const std::bad_alloc&) {
            }
            std::printf("\n");
            // The teaching ladder's first step, FlashAttention version 1 (one thread per row),
            // beside version 2 (the default, register tiles): what the register tiles buy. The
            // last run leaves version 1's results, checked against version 2's.
            const FlashVersion v1 = FlashVersion::simple;
            float fwd1 = time_ms([&] {
                attention_fused_forward_cuda(Q.data(), K.data(), V.data(), O.data(), L.data(), B, h,
                                             n, d_k, false, v1);
            });
            float bwd1 = time_ms([&] {
                attention_fused_backward_cuda(Q.data(), K.data(), V.data(), O.data(), L.data(),
                                              dO.data(), dQ.data(), dK.data(), dV.data(), B, h, n,
                                              d_k, false, v1);
            });
            float both1 = time_ms([&] {
                attention_fused_forward_cuda(Q.data(), K.data(), V.data(), O.data(), L.data(), B, h,
                                             n, d_k, false, v1);
                attention_fused_backward_cuda(Q.data(), K.data(), V.data(), O.data(), L.data(),
                                              dO.data(), dQ.data(), dK.data(), dV.data(), B, h, n,
                                              d_k, false, v1);
            });
            std::printf(
                "  FlashAttention version 1 (one thread per row): forward %.2f ms "
                "(%.1f TFLOP/s), backward %.2f ms, fwd+bwd %.2f ms (%.1f TFLOP/s); "
                "version 2 (register tiles) is %.2fx faster forward, %.2fx backward, "
                "%.2fx in all;",
                fwd1, flops / 3.5 / fwd1 / 1e9, bwd1, both1, flops / both1 / 1e9, fwd1 / fwd,
                bwd1 / bwd, both1 / fused);
            for (int k = 0; k < 4; k++) {
                const Checked c = check("attention n=" + std::to_string(n) + " " + names[k] +
                                            ", FlashAttention version 1 vs version 2",
                                        last_out[k], fused_out[k], sz, 1e-3);
                std::printf(" max |%s diff| = %.2g%s", names[k], c.worst,
                            c.ok ? "" : " (MISMATCH)");
            }
            std::printf(" (against version 2)\n");
        }
        // The other head widths the kernels are compiled for, and the causal mask, beside
        // d_k = 64: timed, and checked against the naive path.
        const int n = ns.back();
        const struct {
            int d_k;
            bool causal;
        } others[] = {{32, false}, {128, false}, {64, true}};
        for (const auto& o : others) {
            const int dk = o.d_k;
            const bool causal = o.causal;
            const size_t sz = size_t(B) * h * n * dk;
            auto Q = filled(sz, 1), K = filled(sz, 1), V = filled(sz, 1), dO = filled(sz, 1);
            gpu::Buffer<float> O(sz), dQ(sz), dK(sz), dV(sz), L(size_t(B) * h * n);
            gpu::Buffer<float> O_f(sz), dQ_f(sz), dK_f(sz), dV_f(sz);
            const float fused = time_ms([&] {
                attention_fused_forward_cuda(Q.data(), K.data(), V.data(), O_f.data(), L.data(), B,
                                             h, n, dk, causal);
                attention_fused_backward_cuda(Q.data(), K.data(), V.data(), O_f.data(), L.data(),
                                              dO.data(), dQ_f.data(), dK_f.data(), dV_f.data(), B,
                                              h, n, dk, causal);
            });
            const float fused_min = g_last_min_ms;
            const double flops = 4.0 * B * h * double(n) * n * dk * 3.5 * (causal ? 0.5 : 1.0);
            const std::string what = "attention d_k=" + std::to_string(dk) +
                                     (causal ? " causal" : "") + " n=" + std::to_string(n);
            std::printf("%s: fused fwd+bwd %.2f ms (min %.2f; %.1f TFLOP/s)", what.c_str(), fused,
                        fused_min, flops / fused / 1e9);
            try {
                gpu::Buffer<float> P(size_t(B) * h * n * n);
                const float naive = time_ms([&] {
                    attention_naive_forward_cuda(Q.data(), K.data(), V.data(), O.data(), P.data(),
                                                 B, h, n, dk, causal);
                    attention_naive_backward_cuda(Q.data(), K.data(), V.data(), P.data(), dO.data(),
                                                  dQ.data(), dK.data(), dV.data(), B, h, n, dk,
                                                  causal);
                });
                std::printf(", naive %.2f ms (min %.2f): speed-up %.2fx;", naive, g_last_min_ms,
                            naive / fused);
                const float* f_out[] = {O_f.data(), dQ_f.data(), dK_f.data(), dV_f.data()};
                const float* n_out[] = {O.data(), dQ.data(), dK.data(), dV.data()};
                for (int k = 0; k < 4; k++) {
                    const Checked c = check(what + " " + names_of(k) + ", fused vs naive", f_out[k],
                                            n_out[k], sz, 1e-3);
                    std::printf(" max |%s diff| = %.2g%s", names_of(k), c.worst,
                                c.ok ? "" : " (MISMATCH)");
                }
            } catch (const std::bad_alloc&) {
                std::printf(", naive: does not fit");
            }
            std::printf("\n");
        }
        // Correctness at chapter 6's largest GPU size, causal and not, against a
        // double-precision reference: 64 query rows (O, L, dQ) and 64 key rows (dK, dV) of the
        // last head, each whole.
        for (bool causal : {false, true})
            sampled_reference_check(quick ? 200 : 16384, causal);
    }
    {  // 3. LSTM gates
        const int n = quick ? 5 : 256, B = quick ? 2 : 8, d = quick ? 24 : 512;
        auto x = filled(size_t(n) * B * d, 1), Wi = filled(size_t(4) * d * d, 0.04f),
             Wh = filled(size_t(4) * d * d, 0.04f), b = filled(size_t(4) * d, 0.04f);
        gpu::Buffer<float> hb(size_t(n + 1) * B * d), cb(size_t(n + 1) * B * d),
            g(size_t(n) * B * 4 * d);
        float fused = time_ms([&] {
            lstm_forward_cuda(x.data(), Wi.data(), Wh.data(), b.data(), n, B, d, hb.data(),
                              cb.data(), g.data(), true);
        });
        gpu::Buffer<float> h_fused(size_t(n + 1) * B * d);
        CUDA_CHECK(
            cudaMemcpy(h_fused.data(), hb.data(), h_fused.size() * 4, cudaMemcpyDeviceToDevice));
        float unfused = time_ms([&] {
            lstm_forward_cuda(x.data(), Wi.data(), Wh.data(), b.data(), n, B, d, hb.data(),
                              cb.data(), g.data(), false);
        });
        const Checked ch =
            check("LSTM forward h, unfused vs fused gates", hb.data() + size_t(B) * d,
                  h_fused.data() + size_t(B) * d, size_t(n) * B * d, 1e-5);
        std::printf("LSTM fused vs unfused gates: max |h diff| = %.2g (max |h| = %.3g)%s\n",
                    ch.worst, ch.scale, ch.ok ? "" : " (MISMATCH)");
        {  // Both against the host's double reference.
            const size_t step_bd = size_t(B) * d;
            const auto xh = to_host(x, 0, x.size()), wih = to_host(Wi, 0, Wi.size()),
                       whh = to_host(Wh, 0, Wh.size()), bh = to_host(b, 0, b.size());
            const std::vector<float> ref = lstm_h_reference(
                n, B, d, bh, [&](int t, int row, int j, const double* h_prev) {
                    const float* xr = xh.data() + (size_t(t - 1) * B + row) * d;
                    const float* wi = wih.data() + size_t(j) * d;
                    const float* wh = whh.data() + size_t(j) * d;
                    const double* hr = h_prev + size_t(row) * d;
                    double s = 0;
                    for (int k = 0; k < d; k++)
                        s += double(xr[k]) * wi[k] + hr[k] * wh[k];
                    return s;
                });
            const Checked cf = check_host("LSTM forward h, fused gates vs double",
                                          to_host(h_fused, step_bd, size_t(n) * step_bd), ref,
                                          1e-4),
                          cu = check_host("LSTM forward h, unfused gates vs double",
                                          to_host(hb, step_bd, size_t(n) * step_bd), ref, 1e-4);
            std::printf("LSTM forward h vs a double reference: fused max |h diff| = %.2g%s, "
                        "unfused %.2g%s\n",
                        cf.worst, cf.ok ? "" : " (MISMATCH)", cu.worst,
                        cu.ok ? "" : " (MISMATCH)");
        }
        std::printf(
            "LSTM forward n=%d B=%d d=%d, GEMMs included: fused gates %.2f ms, "
            "unfused %.2f ms (%.2fx)\n",
            n, B, d, fused, unfused, unfused / fused);
        // The target (>= 5x) is about the gate kernels, so they are timed on their own: the n
        // steps' gates on precomputed pre-activations G (the same kernels and memory traffic
        // as in the forward), each step's c from the step before, no GEMM. (Not (unfused - GEMMs)
        // / (fused - GEMMs): a difference of noisy totals can come out near 0 or below.)
        const size_t step = size_t(B) * d;
        auto G = filled(size_t(n) * 4 * step, 1);
        gpu::Buffer<float> hg((n + 1) * step), cg((n + 1) * step), gg(size_t(n) * 4 * step),
            tmp(step), h_gates_fused((n + 1) * step);
        CUDA_CHECK(cudaMemset(cg.data(), 0, step * sizeof(float)));
        auto gates_only = [&](bool fused_gates) {
            for (int t = 1; t <= n; t++)
                lstm_gates_forward_cuda(G.data() + (t - 1) * 4 * step, b.data(),
                                        cg.data() + (t - 1) * step, gg.data() + (t - 1) * 4 * step,
                                        hg.data() + t * step, cg.data() + t * step, B, d,
                                        fused_gates, tmp.data());
        };
        const float gates_fused = time_ms([&] { gates_only(true); });
        CUDA_CHECK(cudaMemcpy(h_gates_fused.data(), hg.data(), (n + 1) * step * 4,
                              cudaMemcpyDeviceToDevice));
        const float gates_unfused = time_ms([&] { gates_only(false); });
        const Checked cg_ = check("LSTM gates alone h, unfused vs fused", hg.data() + step,
                                  h_gates_fused.data() + step, n * step, 1e-5);
        {  // Both against the host's double reference, from the same pre-activations G.
            const auto gh = to_host(G, 0, G.size()), bh = to_host(b, 0, b.size());
            const std::vector<float> ref = lstm_h_reference(
                n, B, d, bh, [&](int t, int row, int j, const double*) {
                    return double(gh[size_t(t - 1) * 4 * step + size_t(row) * 4 * d + j]);
                });
            const Checked cf = check_host("LSTM gates alone h, fused vs double",
                                          to_host(h_gates_fused, step, n * step), ref, 1e-4),
                          cu = check_host("LSTM gates alone h, unfused vs double",
                                          to_host(hg, step, n * step), ref, 1e-4);
            std::printf("LSTM gates alone h vs a double reference: fused max |h diff| = %.2g%s, "
                        "unfused %.2g%s\n",
                        cf.worst, cf.ok ? "" : " (MISMATCH)", cu.worst,
                        cu.ok ? "" : " (MISMATCH)");
        }
        std::printf(
            "LSTM gates alone, n=%d steps: fused %.3f ms (%.2f us a step), unfused %.3f "
            "ms (%.2f us a step, 9 kernels): fused %.2fx faster (target >= 5x); max |h "
            "diff| = %.2g%s\n",
            n, gates_fused, gates_fused * 1e3 / n, gates_unfused, gates_unfused * 1e3 / n,
            gates_unfused / gates_fused, cg_.worst, cg_.ok ? "" : " (MISMATCH)");
        target("LSTM gates alone, unfused / fused time", gates_unfused / gates_fused, 5);
    }
    std::printf("\n");
    for (const std::string& line : g_targets)
        std::printf("%s\n", line.c_str());
    if (g_failed_checks > 0) {
        std::printf("gpu-bench: FAILED: %d cross-check(s) failed; the first: %s\n", g_failed_checks,
                    g_first_failure.c_str());
        std::fprintf(stderr, "gpu-bench: FAILED: %d cross-check(s) failed; the first: %s\n",
                     g_failed_checks, g_first_failure.c_str());
    }
    // A name that matched no check is a wrong argument (exit 2), after what was found.
    if (!g_plant_in.empty()) {
        std::fprintf(stderr, "gpu-bench: error: no check's name begins with '%s' (planted)\n",
                     g_plant_in.front().c_str());
        return 2;
    }
    return g_failed_checks > 0 ? 1 : 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "gpu-bench: %s\n", e.what());
    return 1;
}
