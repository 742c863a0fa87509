// LSTM on the GPU, mirroring common/kernels/lstm.h: torch's gate order (i, f, g, o) and weight
// shapes.
//
//   x: (n, B, d)   W_ih, W_hh: (4d, d)   b: (4d)   h, c: (n + 1, B, d), h[0] = c[0] = 0
//   gates: (n, B, 4d) activated i, f, g, o        xW scratch: (n, B, 4d)   dG scratch: (n, B, 4d)
//
// The input projection of all n steps is one GEMM (parallel); then n sequential steps, each a
// recurrent GEMM  G = xW[t] + h[t-1] W_hh^T  followed by the gate kernel.
// Versions of the gate kernel:
//   fused     one thread per (b, k) reads the 4 pre-activations, applies sigmoid/tanh, updates
//             the cell and writes h, c, gates: one launch, each value read and written once.
//   unfused   the same maths as separate per-op kernels (sigmoid, tanh, multiply, add), the way
//             a framework without fusion runs it: 7 launches and a round trip through global
//             memory per op. Kept to measure what fusion buys (chapter 6, gpu-check).
// Backward: for t = n..1, the fused kernel turns dh (from above and from step t+1) and dc into
// the pre-activation gradients dG[t]; dh for step t-1 is dG[t] W_hh (a GEMM). Weight gradients
// are three GEMMs over all steps at the end, db a column sum.
#include "cuda/kernels.h"
#include "cuda/launch.h"

#include <cmath>

constexpr int LSTM_THREADS = 256;

__device__ __forceinline__ float sigmoidf_(float x) { return 1.0f / (1.0f + expf(-x)); }

// G: (B, 4d) pre-activations without the bias -> gates (B, 4d), h_t, c_t (B, d).
__global__ void lstm_gates_forward_kernel(const float* G, const float* b, const float* c_prev,
                                          float* gates, float* h_t, float* c_t, int B, int d) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;  // (batch row, hidden unit)
    if (idx >= B * d) return;
    int row = idx / d, k = idx % d;
    const float* g_row = G + (long)row * 4 * d;
    float i = sigmoidf_(g_row[k] + b[k]);
    float f = sigmoidf_(g_row[d + k] + b[d + k]);
    float g = tanhf(g_row[2 * d + k] + b[2 * d + k]);
    float o = sigmoidf_(g_row[3 * d + k] + b[3 * d + k]);
    float c = f * c_prev[idx] + i * g;
    c_t[idx] = c;
    h_t[idx] = o * tanhf(c);
    float* gate_row = gates + (long)row * 4 * d;
    gate_row[k] = i, gate_row[d + k] = f, gate_row[2 * d + k] = g, gate_row[3 * d + k] = o;
}

// ---- the unfused per-op kernels ----------------------------------------------------------------
__global__ void add_bias_kernel(const float* G, const float* b, float* out, int rows, int cols) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < rows * cols) out[idx] = G[idx] + b[idx % cols];
}
// gates[:, 0:4d] <- sigmoid, except the g quarter [2d, 3d) <- tanh; one op per launch.
__global__ void activation_kernel(float* gates, int rows, int d, int first, int count, bool tanh_) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= rows * count) return;
    float& v = gates[(long)(idx / count) * 4 * d + first + idx % count];
    v = tanh_ ? tanhf(v) : sigmoidf_(v);
}
// out = a[quarter qa] * b (elementwise over (rows, d)), with a and/or b strided gate quarters.
__global__ void mul_kernel(const float* a, int lda, const float* b, int ldb, float* out, int rows,
                           int d) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= rows * d) return;
    int row = idx / d, k = idx % d;
    out[idx] = a[(long)row * lda + k] * b[(long)row * ldb + k];
}
__global__ void add_kernel(const float* a, const float* b, float* out, int count) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < count) out[idx] = a[idx] + b[idx];
}
__global__ void tanh_kernel(const float* a, float* out, int count) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < count) out[idx] = tanhf(a[idx]);
}

void lstm_gates_forward_cuda(const float* G, const float* b, const float* c_prev, float* gates,
                             float* h_t, float* c_t, int B, int d, bool fused, float* tmp) {
    if (fused) {
        launch_kernel(lstm_gates_forward_kernel, dim3(ceil_div(long(B) * d, LSTM_THREADS)),
                      dim3(LSTM_THREADS), 0, G, b, c_prev, gates, h_t, c_t, B, d);
        return;
    }
    const int rows = B, n4 = B * 4 * d, nd = B * d;
    const dim3 block(LSTM_THREADS);
    launch_kernel(add_bias_kernel, dim3(ceil_div(n4, LSTM_THREADS)), block, 0, G, b, gates, rows,
                  4 * d);
    launch_kernel(activation_kernel, dim3(ceil_div(rows * 2 * d, LSTM_THREADS)), block, 0, gates,
                  rows, d, 0, 2 * d, false);  // i, f
    launch_kernel(activation_kernel, dim3(ceil_div(nd, LSTM_THREADS)), block, 0, gates, rows, d,
                  2 * d, d, true);  // g
    launch_kernel(activation_kernel, dim3(ceil_div(nd, LSTM_THREADS)), block, 0, gates, rows, d,
                  3 * d, d, false);  // o
    const dim3 grid(ceil_div(nd, LSTM_THREADS));
    launch_kernel(mul_kernel, grid, block, 0, gates + d, 4 * d, c_prev, d, c_t, rows, d);  // f*c
    launch_kernel(mul_kernel, grid, block, 0, gates, 4 * d, gates + 2 * d, 4 * d, tmp, rows,
                  d);                                                                     // i*g
    launch_kernel(add_kernel, grid, block, 0, c_t, tmp, c_t, nd);                        // c
    launch_kernel(tanh_kernel, grid, block, 0, c_t, tmp, nd);
    launch_kernel(mul_kernel, grid, block, 0, gates + 3 * d, 4 * d, tmp, d, h_t, rows, d);  // h
}

// dh = dh_out[t] + dh_rec (B, d); dc_next (B, d) in, dc_prev out (may alias);
// gates_t (B, 4d), c_t, c_prev (B, d) -> dG (B, 4d) pre-activation gradients.
__global__ void lstm_gates_backward_kernel(const float* dh_out, const float* dh_rec,
                                           float* dc, const float* gates_t, const float* c_t,
                                           const float* c_prev, float* dG, int B, int d) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * d) return;
    int row = idx / d, k = idx % d;
    const float* gate_row = gates_t + (long)row * 4 * d;
    float i = gate_row[k], f = gate_row[d + k], g = gate_row[2 * d + k], o = gate_row[3 * d + k];
    float dh = dh_out[idx] + dh_rec[idx];
    float tc = tanhf(c_t[idx]);
    float dct = dc[idx] + dh * o * (1.0f - tc * tc);  // through h = o * tanh(c)
    float* dg_row = dG + (long)row * 4 * d;
    dg_row[k] = dct * g * i * (1.0f - i);              // d(pre i)
    dg_row[d + k] = dct * c_prev[idx] * f * (1.0f - f);  // d(pre f)
    dg_row[2 * d + k] = dct * i * (1.0f - g * g);      // d(pre g)
    dg_row[3 * d + k] = dh * tc * o * (1.0f - o);      // d(pre o)
    dc[idx] = dct * f;                                 // to c[t-1]
}

void lstm_forward_cuda(const float* x, const float* W_ih, const float* W_hh, const float* b,
                       int n, int B, int d, float* h, float* c, float* gates, bool fused) {
    const long step = (long)B * d, step4 = (long)B * 4 * d;
    CUDA_CHECK(cudaMemset(h, 0, sizeof(float) * step));  // h[0] = 0
    CUDA_CHECK(cudaMemset(c, 0, sizeof(float) * step));  // c[0] = 0
    if (n <= 0) return;
    gpu::Buffer<float> xW((size_t)n * step4);  // (n, B, 4d) = x W_ih^T for every step at once
    gpu::Buffer<float> tmp(fused ? 0 : (size_t)step);
    sgemm_cuda(false, true, n * B, 4 * d, d, 1.0f, x, d, W_ih, d, 0.0f, xW.data(), 4 * d);
    for (int t = 1; t <= n; t++) {
        float* G = xW.data() + (t - 1) * step4;  // (B, 4d): += h[t-1] W_hh^T, in place
        sgemm_cuda(false, true, B, 4 * d, d, 1.0f, h + (t - 1) * step, d, W_hh, d, 1.0f, G, 4 * d);
        lstm_gates_forward_cuda(G, b, c + (t - 1) * step, gates + (t - 1) * step4, h + t * step,
                                c + t * step, B, d, fused, tmp.data());
    }
}

void lstm_backward_cuda(const float* x, const float* W_ih, const float* W_hh, const float* h,
                        const float* c, const float* gates, const float* dh_out, int n, int B,
                        int d, float* dx, float* dW_ih, float* dW_hh, float* db) {
    const long step = (long)B * d, step4 = (long)B * 4 * d;
    if (n <= 0) {
        CUDA_CHECK(cudaMemset(dW_ih, 0, sizeof(float) * 4 * d * d));
        CUDA_CHECK(cudaMemset(dW_hh, 0, sizeof(float) * 4 * d * d));
        CUDA_CHECK(cudaMemset(db, 0, sizeof(float) * 4 * d));
        return;
    }
    gpu::Buffer<float> dG((size_t)n * step4);  // (n, B, 4d)
    gpu::Buffer<float> dh_rec((size_t)step);   // (B, d) dh arriving from step t + 1
    gpu::Buffer<float> dc((size_t)step);       // (B, d) dc arriving from step t + 1
    CUDA_CHECK(cudaMemset(dh_rec.data(), 0, sizeof(float) * step));
    CUDA_CHECK(cudaMemset(dc.data(), 0, sizeof(float) * step));
    for (int t = n; t >= 1; t--) {
        float* dG_t = dG.data() + (t - 1) * step4;
        launch_kernel(lstm_gates_backward_kernel, dim3(ceil_div(step, LSTM_THREADS)),
                      dim3(LSTM_THREADS), 0, dh_out + (t - 1) * step, dh_rec.data(), dc.data(),
                      gates + (t - 1) * step4, c + t * step, c + (t - 1) * step, dG_t, B, d);
        // dh[t-1] from the recurrence: dG[t] (B, 4d) @ W_hh (4d, d)
        sgemm_cuda(false, false, B, d, 4 * d, 1.0f, dG_t, 4 * d, W_hh, d, 0.0f, dh_rec.data(), d);
    }
    // All steps at once: dx = dG W_ih, dW_ih = dG^T x, dW_hh = dG^T h[0..n-1], db = sum dG.
    sgemm_cuda(false, false, n * B, d, 4 * d, 1.0f, dG.data(), 4 * d, W_ih, d, 0.0f, dx, d);
    sgemm_cuda(true, false, 4 * d, d, n * B, 1.0f, dG.data(), 4 * d, x, d, 0.0f, dW_ih, d);
    sgemm_cuda(true, false, 4 * d, d, n * B, 1.0f, dG.data(), 4 * d, h, d, 0.0f, dW_hh, d);
    column_sum_cuda(dG.data(), db, n * B, 4 * d);
}
