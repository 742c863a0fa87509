// Section 6's layers (see layers.h): the attention layer's forward in the order of section 3's
// listing and its backward in reverse, the LSTM layer around common/lstm's kernels, and what
// each holds at its peak.
#include "chapters/6-cost/layers.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/attention.h"
#include "common/gemm.h"
#include "common/lstm.h"

namespace {

// Below this many floats a parallel copy costs more than it saves.
constexpr double PARALLEL_MIN_WORK = 1 << 18;

}  // namespace

const char* method_name(Method m) {
    switch (m) {
        case Method::naive: return "어텐션(단순 구현)";
        case Method::fused: return "어텐션(퓨전 커널)";
        case Method::lstm: return "LSTM";
    }
    return "?";
}

// ------------------------------------------------------------------------------------------
// The attention layer: section 3's forward (projection in, heads split, attention, heads
// concatenated, projection out), then the same steps in reverse for the backward.
// ------------------------------------------------------------------------------------------

AttentionLayer::AttentionLayer(int d_model_, int n_heads_, bool fused_, bool causal_)
    : d_model(d_model_), n_heads(n_heads_), fused(fused_), causal(causal_),
      W_qkv((size_t)3 * d_model_ * d_model_), W_o((size_t)d_model_ * d_model_),
      dW_qkv((size_t)3 * d_model_ * d_model_), dW_o((size_t)d_model_ * d_model_) {
    if (d_model <= 0 || n_heads <= 0 || d_model % n_heads != 0)
        throw std::invalid_argument("d_model = " + std::to_string(d_model) +
                                    " must be a positive multiple of n_heads = " +
                                    std::to_string(n_heads));
}

mem::Buffer<float> AttentionLayer::forward(const float* x, int B, int n) {
    const int D = d_model, h = n_heads, d_k = D / h;
    const long u = (long)B * n * D;  // floats in one (B, n, d_model) tensor
    x_ = x, B_ = B, n_ = n;

    // qkv = self.qkv(x).reshape(B, N, 3, self.h, self.d_head).permute(2, 0, 3, 1, 4):
    // x W_qkv^T as one (B*n, D) x (D, 3D) product, then the heads split out by a copy
    {
        mem::Buffer<float> qkv((size_t)3 * u, mem::uninit);  // (B, n, 3, h, d_k)
        sgemm(false, true, B * n, 3 * D, D, 1.0f, x, D, W_qkv.data(), D, 0.0f, qkv.data(), 3 * D);
        QKV_ = mem::Buffer<float>((size_t)3 * u, mem::uninit);  // (3, B, h, n, d_k)
#pragma omp parallel for collapse(2) schedule(static) if (u > PARALLEL_MIN_WORK)
        for (int b = 0; b < B; b++)
            for (int i = 0; i < n; i++)
                for (int s = 0; s < 3; s++)
                    for (int hh = 0; hh < h; hh++)
                        std::copy_n(qkv.data() + (((long)b * n + i) * 3 + s) * D + hh * d_k, d_k,
                                    QKV_.data() + ((((long)s * B + b) * h + hh) * n + i) * d_k);
    }  // qkv freed here
    const float* Q = QKV_.data();          // (B, h, n, d_k)
    const float* K = QKV_.data() + u;      // (B, h, n, d_k)
    const float* V = QKV_.data() + 2 * u;  // (B, h, n, d_k)

    // o, a = scaled_dot_product_attention(q, k, v): the naive kernel keeps P = a, the fused one
    // keeps only each row's logsumexp L
    mem::Buffer<float> O(u, mem::uninit);  // (B, h, n, d_k)
    if (fused) {
        L_ = mem::Buffer<float>((size_t)B * h * n, mem::uninit);  // (B, h, n)
        attention_fused_forward(Q, K, V, O.data(), L_.data(), B, h, n, d_k, causal);
    } else {
        P_ = mem::Buffer<float>((size_t)B * h * n * n, mem::uninit);  // (B, h, n, n)
        attention_naive_forward(Q, K, V, O.data(), P_.data(), B, h, n, d_k, causal);
    }

    // o = o.transpose(1, 2).reshape(B, N, D): the concat
    concat_ = mem::Buffer<float>(u, mem::uninit);  // (B, n, D)
#pragma omp parallel for collapse(2) schedule(static) if (u > PARALLEL_MIN_WORK)
    for (int b = 0; b < B; b++)
        for (int i = 0; i < n; i++)
            for (int hh = 0; hh < h; hh++)
                std::copy_n(O.data() + (((long)b * h + hh) * n + i) * d_k, d_k,
                            concat_.data() + ((long)b * n + i) * D + hh * d_k);
    if (fused) O_ = std::move(O);  // the fused backward reads O; the naive one does not

    // return self.proj(o): y = concat W_o^T
    mem::Buffer<float> y(u, mem::uninit);  // (B, n, D)
    sgemm(false, true, B * n, D, D, 1.0f, concat_.data(), D, W_o.data(), D, 0.0f, y.data(), D);
    return y;
}

mem::Buffer<float> AttentionLayer::backward(const float* dy) {
    if (!x_) throw std::logic_error("AttentionLayer::backward called before forward");
    const int B = B_, n = n_, D = d_model, h = n_heads, d_k = D / h;
    const long u = (long)B * n * D;

    // y = concat W_o^T:  dW_o = dy^T concat,  dconcat = dy W_o
    sgemm(true, false, D, D, B * n, 1.0f, dy, D, concat_.data(), D, 0.0f, dW_o.data(), D);
    mem::Buffer<float> dO(u, mem::uninit);  // (B, h, n, d_k)
    {
        mem::Buffer<float> dconcat(u, mem::uninit);  // (B, n, D)
        sgemm(false, false, B * n, D, D, 1.0f, dy, D, W_o.data(), D, 0.0f, dconcat.data(), D);
        concat_ = {};
#pragma omp parallel for collapse(2) schedule(static) if (u > PARALLEL_MIN_WORK)
        for (int b = 0; b < B; b++)
            for (int hh = 0; hh < h; hh++)
                for (int i = 0; i < n; i++)
                    std::copy_n(dconcat.data() + ((long)b * n + i) * D + hh * d_k, d_k,
                                dO.data() + (((long)b * h + hh) * n + i) * d_k);
    }

    mem::Buffer<float> dQKV((size_t)3 * u, mem::uninit);  // (3, B, h, n, d_k)
    const float *Q = QKV_.data(), *K = Q + u, *V = Q + 2 * u;
    float *dQ = dQKV.data(), *dK = dQ + u, *dV = dQ + 2 * u;
    if (fused)
        attention_fused_backward(Q, K, V, O_.data(), L_.data(), dO.data(), dQ, dK, dV, B, h, n,
                                 d_k, causal);
    else
        attention_naive_backward(Q, K, V, P_.data(), dO.data(), dQ, dK, dV, B, h, n, d_k, causal);
    P_ = {}, L_ = {}, O_ = {}, QKV_ = {}, dO = {};

    // back to (B, n, 3, h, d_k), then qkv = x W_qkv^T:  dW_qkv = dqkv^T x,  dx = dqkv W_qkv
    mem::Buffer<float> dqkv((size_t)3 * u, mem::uninit);  // (B, n, 3D)
#pragma omp parallel for collapse(2) schedule(static) if (u > PARALLEL_MIN_WORK)
    for (int b = 0; b < B; b++)
        for (int i = 0; i < n; i++)
            for (int s = 0; s < 3; s++)
                for (int hh = 0; hh < h; hh++)
                    std::copy_n(dQKV.data() + ((((long)s * B + b) * h + hh) * n + i) * d_k, d_k,
                                dqkv.data() + (((long)b * n + i) * 3 + s) * D + hh * d_k);
    dQKV = {};
    sgemm(true, false, 3 * D, D, B * n, 1.0f, dqkv.data(), 3 * D, x_, D, 0.0f, dW_qkv.data(), D);
    mem::Buffer<float> dx(u, mem::uninit);  // (B, n, D)
    sgemm(false, false, B * n, D, 3 * D, 1.0f, dqkv.data(), 3 * D, W_qkv.data(), D, 0.0f,
          dx.data(), D);
    x_ = nullptr;
    return dx;
}

// The allocation timeline above, added up for a benchmark cell: x, dy and the weights (and
// their gradients) present throughout, y dropped after the forward (the loss has consumed it),
// dx returned at the end. In units of one (B, n, d_model) tensor u and one (B, h, n, n) matrix sq:
//   naive: forward  QKV 3u + O u + S + P + workspace      = 4u + 2 sq + ws
//          backward QKV 3u + P + dO u + dQKV 3u + dP + dS = 7u + 3 sq   <- the peak
//   fused: forward  QKV 3u + O u + L + workspace, then QKV 3u + O u + concat u + y u = 6u
//          backward QKV 3u + O u + dO u + dQKV 3u, L, D + workspace = 8u + 2 rows + ws <- the peak
// (qkv and QKV both alive during the input projection: 6u.) The workspaces are per thread
// (attention_*_workspace_floats: K^T and V packed, and the fused tiles); the naive one is small
// beside sq, so its backward stays the peak. sgemm's packing workspace comes on top;
// sgemm_workspace_bytes_max() bounds it.
double AttentionLayer::predicted_peak_bytes(bool fused, int B, int n, int d_model, int n_heads) {
    const int d_k = d_model / n_heads;
    const double u = (double)B * n * d_model * sizeof(float);
    const double sq = (double)B * n_heads * n * n * sizeof(float);
    const double rows = (double)B * n_heads * n * sizeof(float);  // one value per query row
    const double weights = 2.0 * 4 * d_model * d_model * sizeof(float);  // W and dW
    const double fixed = weights + 2 * u;                                  // + x, dy
    const double ws_forward = attention_fused_forward_workspace_bytes(B, n_heads, n, d_k);
    const double ws_backward = attention_fused_backward_workspace_bytes(B, n_heads, n, d_k);
    const double ws_naive = attention_naive_forward_workspace_bytes(B, n_heads, n, d_k);
    const double peak = fused ? std::max({8 * u + 2 * rows + ws_backward, 6 * u + rows,
                                          4 * u + rows + ws_forward})
                              : std::max(7 * u + 3 * sq, 4 * u + 2 * sq + ws_naive);
    return fixed + peak + (double)sgemm_workspace_bytes_max();
}

// ------------------------------------------------------------------------------------------
// The LSTM layer: owns the parameters and the states the backward needs.
// ------------------------------------------------------------------------------------------

LstmLayer::LstmLayer(int d_)
    : d(d_), W_ih((size_t)4 * d_ * d_), W_hh((size_t)4 * d_ * d_), b((size_t)4 * d_),
      dW_ih((size_t)4 * d_ * d_), dW_hh((size_t)4 * d_ * d_), db((size_t)4 * d_) {
    if (d <= 0)
        throw std::invalid_argument("LSTM width d = " + std::to_string(d) + " must be positive");
}

const float* LstmLayer::forward(const float* x, int n, int B) {
    x_ = x, n_ = n, B_ = B;
    h_ = mem::Buffer<float>((size_t)(n + 1) * B * d, mem::uninit);  // (n + 1, B, d)
    c_ = mem::Buffer<float>((size_t)(n + 1) * B * d, mem::uninit);  // (n + 1, B, d)
    gates_ = mem::Buffer<float>((size_t)n * B * 4 * d, mem::uninit);  // (n, B, 4d)
    lstm_forward(x, W_ih.data(), W_hh.data(), b.data(), n, B, d, h_.data(), c_.data(),
                 gates_.data());
    return h_.data() + (long)B * d;  // y = h[1..n]
}

mem::Buffer<float> LstmLayer::backward(const float* dy) {
    if (!x_) throw std::logic_error("LstmLayer::backward called before forward");
    mem::Buffer<float> dx((size_t)n_ * B_ * d, mem::uninit);  // (n, B, d)
    lstm_backward(x_, W_ih.data(), W_hh.data(), h_.data(), c_.data(), gates_.data(), dy, n_, B_,
                  d, dx.data(), dW_ih.data(), dW_hh.data(), db.data());
    h_ = {}, c_ = {}, gates_ = {};
    x_ = nullptr;
    return dx;
}

// In units of one (n, B, d) tensor u, with x, dy and the parameters (and gradients) present:
//   forward:  h u, c u, gates 4u, and the packed W_hh (about 4d x d) while the steps run
//   backward: h u, c u, gates 4u, dx u, dgates 4u, two (B, d) step gradients and the packed
//             W_hh                                                              <- the peak
double LstmLayer::predicted_peak_bytes(int B, int n, int d) {
    const double u = (double)n * B * d * sizeof(float);
    const double state = (double)B * d * sizeof(float);  // one step of h or c
    const double params = 2.0 * (2.0 * 4 * d * d + 4 * d) * sizeof(float);
    const double fixed = params + 2 * u;
    const double packed = lstm_workspace_bytes(B, d);
    const double forward = fixed + 6 * u + 2 * state + packed;
    const double backward = fixed + 11 * u + 4 * state + packed;
    return std::max(forward, backward) + (double)sgemm_workspace_bytes_max();
}
