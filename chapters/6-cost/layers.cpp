// Section 6's layers (see layers.h): the attention layer's forward in the order of section 3's
// listing and its backward in reverse, the LSTM layer around common/kernels/lstm's kernels, and
// what each holds at its peak.
#include "chapters/6-cost/layers.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/kernels/attention.h"
#include "common/kernels/gemm.h"
#include "common/kernels/lstm.h"

const char* method_name(Method m) {
    switch (m) {
        case Method::naive: return "어텐션(단순 구현)";
        case Method::fused: return "어텐션(퓨전 커널)";
        case Method::lstm: return "LSTM";
    }
    return "?";
}

// ---- the attention layer ------------------------------------------------------------------
// Section 3's forward (projection in, heads split, attention, heads concatenated, projection
// out), then the same steps in reverse for the backward.

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
    // x W_qkv^T as one (B*n, D) x (D, 3D) product. The reshape and permute copy nothing (in
    // torch they are views): head hh of q is columns hh * d_k .. of each row of qkv, k and v
    // the same D and 2 D further on, and the attention reads them there (heads_in_rows).
    QKV_ = mem::Buffer<float>((size_t)3 * u, mem::uninit);  // (B, n, 3, h, d_k)
    sgemm(false, true, B * n, 3 * D, D, 1.0f, x, D, W_qkv.data(), D, 0.0f, QKV_.data(), 3 * D);
    const float* Q = QKV_.data();      // (B, h, n, d_k) seen in (B, n, 3, h, d_k)
    const float* K = QKV_.data() + D;  // the same
    const float* V = K + D;            // the same
    const HeadsLayout qkv = heads_in_rows(n, d_k, 3 * D), o = heads_in_rows(n, d_k, D);

    // o, a = scaled_dot_product_attention(q, k, v), written straight into the layout of
    // o.transpose(1, 2).reshape(B, N, D), the concat: head hh in columns hh * d_k .. of each
    // row. The naive kernel keeps P = a, the fused one only each row's logsumexp L (and reads
    // o, the concat, again in its backward).
    concat_ = mem::Buffer<float>(u, mem::uninit);  // (B, n, D) = (B, n, h, d_k)
    if (fused) {
        L_ = mem::Buffer<float>((size_t)B * h * n, mem::uninit);  // (B, h, n)
        attention_fused_forward(Q, K, V, concat_.data(), L_.data(), B, h, n, d_k, causal, qkv, o);
    } else {
        P_ = mem::Buffer<float>((size_t)B * h * n * n, mem::uninit);  // (B, h, n, n)
        attention_naive_forward(Q, K, V, concat_.data(), P_.data(), B, h, n, d_k, causal, qkv, o);
    }

    // return self.proj(o): y = concat W_o^T
    mem::Buffer<float> y(u, mem::uninit);  // (B, n, D)
    sgemm(false, true, B * n, D, D, 1.0f, concat_.data(), D, W_o.data(), D, 0.0f, y.data(), D);
    return y;
}

mem::Buffer<float> AttentionLayer::backward(const float* dy) {
    if (!x_) throw std::logic_error("AttentionLayer::backward called before forward");
    const int B = B_, n = n_, D = d_model, h = n_heads, d_k = D / h;
    const long u = (long)B * n * D;
    const HeadsLayout qkv = heads_in_rows(n, d_k, 3 * D), o = heads_in_rows(n, d_k, D);

    // y = concat W_o^T:  dW_o = dy^T concat,  dconcat = dy W_o, which is dO in the concat's
    // layout: the attention reads it there
    sgemm(true, false, D, D, B * n, 1.0f, dy, D, concat_.data(), D, 0.0f, dW_o.data(), D);
    mem::Buffer<float> dconcat(u, mem::uninit);  // (B, n, D) = dO (B, n, h, d_k)
    sgemm(false, false, B * n, D, D, 1.0f, dy, D, W_o.data(), D, 0.0f, dconcat.data(), D);
    if (!fused) concat_ = {};  // the naive backward does not read O

    // dq, dk, dv, written straight into dqkv (B, n, 3, h, d_k), the layout of qkv
    mem::Buffer<float> dqkv((size_t)3 * u, mem::uninit);  // (B, n, 3D)
    const float *Q = QKV_.data(), *K = Q + D, *V = Q + 2 * D;
    float *dQ = dqkv.data(), *dK = dQ + D, *dV = dQ + 2 * D;
    if (fused)
        attention_fused_backward(Q, K, V, concat_.data(), L_.data(), dconcat.data(), dQ, dK, dV,
                                 B, h, n, d_k, causal, qkv, o);
    else
        attention_naive_backward(Q, K, V, P_.data(), dconcat.data(), dQ, dK, dV, B, h, n, d_k,
                                 causal, qkv, o);
    P_ = {}, L_ = {}, concat_ = {}, QKV_ = {}, dconcat = {};

    // qkv = x W_qkv^T:  dW_qkv = dqkv^T x,  dx = dqkv W_qkv
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
//   naive: forward  QKV 3u + concat u + S + P + workspace     = 4u + 2 sq + ws
//          backward QKV 3u + P + dconcat u + dqkv 3u + dP + dS + workspace
//                                                              = 7u + 3 sq + ws  <- the peak
//   fused: forward  QKV 3u + concat u + L + workspace, then QKV 3u + concat u + L + y u = 5u
//          backward QKV 3u + concat u + dconcat u + dqkv 3u, L, D + workspace
//                                                              = 8u + 2 rows + ws <- the peak
// (The fused backward reads O, which is the concat; the naive one frees it after dW_o.) The
// workspaces are per thread (attention_*_workspace_floats: K^T and V packed, and the fused
// tiles; the naive backward's V^T and K); the naive ones are small beside sq, so its backward
// stays the peak. sgemm's packing workspace comes on top; sgemm_workspace_bytes_max() bounds it.
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
    const double ws_naive_bw = attention_naive_backward_workspace_bytes(B, n_heads, n, d_k);
    const double peak = fused ? std::max({8 * u + 2 * rows + ws_backward, 5 * u + rows,
                                          4 * u + rows + ws_forward})
                              : std::max(7 * u + 3 * sq + ws_naive_bw, 4 * u + 2 * sq + ws_naive);
    return fixed + peak + (double)sgemm_workspace_bytes_max();
}

// ---- the LSTM layer -----------------------------------------------------------------------
// It owns the parameters and the states the backward needs.

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
