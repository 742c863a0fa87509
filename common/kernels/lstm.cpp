// LSTM forward and backward (see lstm.h for the contract). Per step t, torch's equations:
//   i = sigmoid(x_t W_ii^T + h_{t-1} W_hi^T + b_i)      input gate
//   f = sigmoid(...f rows...)                          forget gate
//   g = tanh(...g rows...)                             candidate cell
//   o = sigmoid(...o rows...)                          output gate
//   c_t = f * c_{t-1} + i * g,      h_t = o * tanh(c_t)
// The x_t W_ih^T part does not depend on the previous step, so all n steps are one big GEMM.
// What is left per step is a (B, d) x (d, 4d) product: n of them in a chain that cannot run in
// parallel, which is the "sequential operations O(n)" row of the article's table.
#include "common/kernels/lstm.h"

#include "common/kernels/exp_fast.h"
#include "common/kernels/gemm.h"
#include "common/kernels/parallel.h"
#include "common/memory.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>
#include <stdexcept>
#include <string>
#include <utility>

namespace {

// Written with exp_fast so the gate loops vectorise.
inline float sigmoid(float z) { return 1.0f / (1.0f + exp_fast(-z)); }
inline float tanh_fast(float z) { return 1.0f - 2.0f / (exp_fast(2.0f * z) + 1.0f); }

// The chain of n steps runs inside one parallel region: thread t owns hidden units
// [k0, k1) (their four gate columns, their h and c) and the threads meet once per step, when
// h_t (forward) or dgates_t (backward) is complete. The meeting point spins briefly and then
// yields the core: on a busy machine a partner that the OS has parked gets the CPU back
// instead of watching us spin (OpenMP's own barrier spins much longer).
class StepBarrier {
public:
    explicit StepBarrier(int threads) : threads_(threads) {}
    void wait() {
        if (threads_ == 1) return;
        const int gen = generation_.load(std::memory_order_acquire);
        if (arrived_.fetch_add(1, std::memory_order_acq_rel) == threads_ - 1) {
            arrived_.store(0, std::memory_order_relaxed);
            generation_.fetch_add(1, std::memory_order_release);
            return;
        }
        for (int spins = 0; generation_.load(std::memory_order_acquire) == gen; spins++)
            if (spins > 2000) std::this_thread::yield();
    }

private:
    const int threads_;
    std::atomic<int> arrived_{0}, generation_{0};
};

// Threads for the chain: one per core while each has at least 64 hidden units and the step's
// product is big enough to split (B * 4d * d multiply-adds).
int chain_threads(int B, int d) {
    if (omp_in_parallel() || (double)B * 4 * d * d < 2e6) return 1;
    return std::max(1, std::min(omp_get_max_threads(), d / 64));
}

// Each thread's share of W_hh, packed once into sgemm's panel layout (sgemm_pack_b) so the n
// step products stream it contiguously and pack nothing: the forward's op(B) is W_hh^T
// restricted to the thread's units in each gate, (d, k1 - k0) four times; the backward's is
// W_hh's columns k0..k1, (4d, k1 - k0). Both are 4 d * chunk floats per thread.
int chunk_of(int d, int T) { return (d + T - 1) / T; }
long packed_w_hh_floats(int d, int T) {
    return std::max(4 * sgemm_packed_b_floats(d, chunk_of(d, T)),
                    sgemm_packed_b_floats(4 * d, chunk_of(d, T)));
}

// What both directions of the chain share: T threads, the barrier where they meet once per
// step, and each thread's packed share of W_hh. units() and packed() are called by a thread of
// the parallel region and answer for that thread.
struct Chain {
    const int T;
    const long per_thread;
    mem::Buffer<float> W_hh_packed;
    StepBarrier barrier;

    Chain(int B, int d)
        : T(chain_threads(B, d)), per_thread(packed_w_hh_floats(d, T)),
          W_hh_packed((size_t)T * per_thread, mem::uninit), barrier(T) {}
    std::pair<int, int> units(int d) const {  // my hidden units [k0, k1)
        const int t = omp_get_thread_num();
        return {(int)((long)d * t / T), (int)((long)d * (t + 1) / T)};
    }
    float* packed() { return W_hh_packed.data() + omp_get_thread_num() * per_thread; }
};

// C (+)= A @ op(B) for one thread's share of the step product: `groups` packed operands of
// N columns (the forward's four gates; the backward's one), group g at Wp + g * group_floats
// and writing columns g * c_group.. of C. The share is read once per step and is as big as a
// core's L2 (2 MB at d = 512 with 2 threads): walked in the same order every step, each panel
// would have left the cache by the time it came round again (least recently used goes first),
// and every step would read its whole share from L3. Walked forwards on even steps and
// backwards on odd ones, a step starts with the panels the last one ended with, which are
// still cached. Panel by panel, one call each: every C tile is
// computed as the one call over all panels computes it, so the results are the same bit for
// bit.
void step_product(int t, int groups, int M, int N, int K, const float* A, int lda, const float* Wp,
                  long group_floats, float beta, float* C, long c_group, int ldc) {
    const int NR = sgemm_panel_width(), panels = (N + NR - 1) / NR;
    const long panel_stride = (long)K * NR;
    for (int s = 0; s < groups * panels; s++) {
        const int u = t % 2 == 0 ? s : groups * panels - 1 - s;
        const int g = u / panels, p = u % panels;
        sgemm_packed_b(false, M, std::min(NR, N - p * NR), K, 1.0f, A, lda,
                       Wp + g * group_floats + p * panel_stride, panel_stride, beta,
                       C + g * c_group + p * NR, ldc);
    }
}

}  // namespace

void lstm_forward(const float* x, const float* W_ih, const float* W_hh, const float* b, int n,
                  int B, int d, float* h, float* c, float* gates) {
    const long Bd = (long)B * d, B4d = 4L * B * d;
    // h[0] = c[0] = 0
    for (long k = 0; k < Bd; k++) h[k] = c[k] = 0.0f;

    // gates = x W_ih^T for all n steps at once: (n*B, d) x (d, 4d) -> (n, B, 4d); b is added
    // step by step in the chain
    sgemm(false, true, n * B, 4 * d, d, 1.0f, x, d, W_ih, d, 0.0f, gates, 4 * d);

    Chain chain(B, d);
#pragma omp parallel num_threads(chain.T)
    {
        const std::pair<int, int> mine = chain.units(d);
        const int k0 = mine.first, k1 = mine.second;  // clang < 16 cannot capture a binding
        // op(B) of gate q = W_hh^T's columns q d + k0 .. q d + k1, i.e. rows of W_hh
        float* const Wp = chain.packed();
        const long gate_floats = sgemm_packed_b_floats(d, k1 - k0);
        for (int q = 0; q < 4; q++)
            sgemm_pack_b(true, d, k1 - k0, W_hh + (long)(q * d + k0) * d, d, Wp + q * gate_floats);
        for (int t = 0; t < n; t++) {
            float* a = gates + t * B4d;        // (B, 4d) pre-activations, then activations
            const float* h_prev = h + t * Bd;  // (B, d)
            const float* c_prev = c + t * Bd;  // (B, d)
            float* h_t = h + (t + 1) * Bd;     // (B, d)
            float* c_t = c + (t + 1) * Bd;     // (B, d)
            // a = (x_t W_ih^T + b) + h_{t-1} W_hh^T for my units' columns of each gate, in that
            // order. b is added here, where the step reads these columns anyway, rather than in
            // a pass over all n steps' gates after the GEMM (64 MB read and written at n = 1024).
            for (int r = 0; r < B; r++)
                for (int q = 0; q < 4; q++) {
                    float* aq = a + (long)r * 4 * d + q * d;
#pragma omp simd
                    for (int k = k0; k < k1; k++) aq[k] += b[q * d + k];
                }
            // the sequential part
            step_product(t, 4, B, k1 - k0, d, h_prev, d, Wp, gate_floats, 1.0f, a + k0, d,
                         4 * d);
            // fused gates and cell update for my units, one vectorised pass
            for (int r = 0; r < B; r++) {
                float* ar = a + (long)r * 4 * d;
#pragma omp simd
                for (int k = k0; k < k1; k++) {
                    const float i = sigmoid(ar[k]);
                    const float f = sigmoid(ar[d + k]);
                    const float g = tanh_fast(ar[2 * d + k]);
                    const float o = sigmoid(ar[3 * d + k]);
                    ar[k] = i, ar[d + k] = f, ar[2 * d + k] = g, ar[3 * d + k] = o;
                    const float cell = f * c_prev[(long)r * d + k] + i * g;
                    c_t[(long)r * d + k] = cell;
                    h_t[(long)r * d + k] = o * tanh_fast(cell);
                }
            }
            chain.barrier.wait();  // h_t complete: the next step's product reads all of it
        }
    }
}

void lstm_backward(const float* x, const float* W_ih, const float* W_hh, const float* h,
                   const float* c, const float* gates, const float* dh_out, int n, int B, int d,
                   float* dx, float* dW_ih, float* dW_hh, float* db) {
    const long Bd = (long)B * d, B4d = 4L * B * d;
    // (n, B, 4d): the gradient of the gates' pre-activations
    mem::Buffer<float> dgates((size_t)n * B4d, mem::uninit);
    mem::Buffer<float> dh_next(Bd);              // (B, d) gradient reaching h_t from step t+1
    mem::Buffer<float> dc_next(Bd);              // (B, d) gradient reaching c_t from step t+1

    // Backpropagation through time: walk the chain backwards, one step at a time.
    Chain chain(B, d);
#pragma omp parallel num_threads(chain.T)
    {
        const std::pair<int, int> mine = chain.units(d);
        const int k0 = mine.first, k1 = mine.second;  // clang < 16 cannot capture a binding
        // op(B) = W_hh's columns k0..k1: (4d, k1 - k0)
        float* const Wp = chain.packed();
        sgemm_pack_b(false, 4 * d, k1 - k0, W_hh + k0, d, Wp);
        for (int t = n - 1; t >= 0; t--) {
            const float* a = gates + t * B4d;  // (B, 4d) activated i, f, g, o
            const float* c_prev = c + t * Bd;  // (B, d)
            const float* c_t = c + (t + 1) * Bd;
            const float* dh_t = dh_out + t * Bd;
            float* da = dgates.data() + t * B4d;  // (B, 4d)
            for (int r = 0; r < B; r++)
#pragma omp simd
                for (int k = k0; k < k1; k++) {
                    const long rk = (long)r * d + k, r4 = (long)r * 4 * d;
                    const float i = a[r4 + k], f = a[r4 + d + k], g = a[r4 + 2 * d + k],
                                o = a[r4 + 3 * d + k];
                    const float tanh_c = tanh_fast(c_t[rk]);
                    const float dh = dh_t[rk] + dh_next[rk];
                    const float dc = dc_next[rk] + dh * o * (1.0f - tanh_c * tanh_c);
                    // through the nonlinearities: sigmoid' = s(1-s), tanh' = 1-t^2
                    da[r4 + k] = dc * g * i * (1.0f - i);
                    da[r4 + d + k] = dc * c_prev[rk] * f * (1.0f - f);
                    da[r4 + 2 * d + k] = dc * i * (1.0f - g * g);
                    da[r4 + 3 * d + k] = dh * tanh_c * o * (1.0f - o);
                    dc_next[rk] = dc * f;
                }
            chain.barrier.wait();  // dgates_t complete: every unit's dh_{t-1} reads all of it
            // dh_{t-1} = dgates_t W_hh for my units: (B, 4d) x (4d, k1 - k0)
            step_product(t, 1, B, k1 - k0, 4 * d, da, 4 * d, Wp, 0, 0.0f, dh_next.data() + k0,
                         0, d);
        }
    }

    // Everything that does not feed the chain is again one GEMM over all steps:
    const int nB = n * B;
    // dx = dgates W_ih: (n*B, 4d) x (4d, d)
    sgemm(false, false, nB, d, 4 * d, 1.0f, dgates.data(), 4 * d, W_ih, d, 0.0f, dx, d);
    // dW_ih = dgates^T x: (4d, n*B) x (n*B, d);  dW_hh = dgates^T h[0:n]
    sgemm(true, false, 4 * d, d, nB, 1.0f, dgates.data(), 4 * d, x, d, 0.0f, dW_ih, d);
    sgemm(true, false, 4 * d, d, nB, 1.0f, dgates.data(), 4 * d, h, d, 0.0f, dW_hh, d);
    // db = sum of dgates over steps and batch: each db[k] added up from row 0 down, the
    // columns split between the threads in blocks of 64 (dgates is 64 MB at n = 1024: too much
    // for one thread to read alone).
    constexpr int DB_COLS = 64;
#pragma omp parallel for schedule(static) if ((long)n * B4d >= (1 << 16))
    for (int k0 = 0; k0 < 4 * d; k0 += DB_COLS) {
        const int k1 = std::min(4 * d, k0 + DB_COLS);
        for (int k = k0; k < k1; k++) db[k] = 0.0f;
        for (long row = 0; row < nB; row++)
#pragma omp simd
            for (int k = k0; k < k1; k++) db[k] += dgates[row * 4 * d + k];
    }
}

size_t lstm_workspace_bytes(int B, int d) {
    const int T = chain_threads(B, d);
    return (size_t)T * packed_w_hh_floats(d, T) * sizeof(float);
}
