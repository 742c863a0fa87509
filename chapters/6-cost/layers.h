// Section 6's layers, the ones the table times and weighs: the article's multi-head attention
// (section 3's module) with its n x n matrix in memory or fused, and an LSTM of the same width.
// main.cpp's header gives the chapter's reading order; the definitions are in layers.cpp.
//
// Section 3's autograd module computes the same thing (tests/test_chapter6.cpp holds the two
// against each other: the same weights, the same y, dx and weight gradients); these layers run
// the same forward, in the listing's order, with the backward written out by hand, so that what
// is held and for how long is explicit (every buffer a mem::Buffer, which mem::peak_bytes()
// counts) and the only difference between the first two columns is the attention call:
//   AttentionLayer   x (B, n, d_model) -> qkv = x W_qkv^T -> reshape (B, n, 3, h, d_k)
//                    -> permute(2, 0, 3, 1, 4) -> attention -> transpose + reshape (the concat)
//                    -> y = concat W_o^T
//                    reshape and permute are views, as in torch: the attention finds q, k, v
//                    inside qkv and writes O in the concat's layout (HeadsLayout), so no
//                    permuted copy of qkv or O is made (inside, each head's K and V are
//                    packed for its tile products, common/kernels/attention.cpp)
//                    attention: common/kernels/attention.h, attention_naive_forward /
//                    _backward (S and P in memory) or attention_fused_forward / _backward
//                    (FlashAttention-2)
//   LstmLayer        torch's nn.LSTM(d, d), time-major: common/kernels/lstm.h, lstm_forward /
//                    _backward
#pragma once
#include <cstddef>

#include "common/memory.h"

// The table's three columns.
enum class Method { naive, fused, lstm };
const char* method_name(Method m);  // "어텐션(단순 구현)", "어텐션(퓨전 커널)", "LSTM"

struct AttentionLayer {
    int d_model, n_heads;
    bool fused, causal;
    mem::Buffer<float> W_qkv, W_o;    // (3 d_model, d_model), (d_model, d_model): nn.Linear rows
    mem::Buffer<float> dW_qkv, dW_o;  // gradients, same shapes

    AttentionLayer(int d_model, int n_heads, bool fused, bool causal = false);
    // forward() keeps what the backward needs (like autograd's saved tensors); backward() uses
    // it, frees it, fills the weight gradients and returns dx.
    mem::Buffer<float> forward(const float* x, int B, int n);  // y (B, n, d_model)
    mem::Buffer<float> backward(const float* dy);              // dx (B, n, d_model)

    // Peak bytes of one benchmark step (x, dy and the weights present, y dropped after the
    // forward, dx returned), plus sgemm_workspace_bytes_max() as a margin for packing:
    // what a cell checks against the memory limit before it runs.
    static double predicted_peak_bytes(bool fused, int B, int n, int d_model, int n_heads);

private:
    const float* x_ = nullptr;  // saved input (B, n, d_model), owned by the caller
    int B_ = 0, n_ = 0;
    mem::Buffer<float> QKV_;     // (B, n, 3, h, d_k): qkv, which q, k and v are views of
    mem::Buffer<float> concat_;  // (B, n, d_model): the attention's O, which the fused backward
                                 // reads again
    mem::Buffer<float> P_;       // naive: (B, h, n, n)
    mem::Buffer<float> L_;       // fused: (B, h, n)
};

// torch's nn.LSTM(d, d) parameters; x, y, dy, dx are (n, B, d).
struct LstmLayer {
    int d;
    mem::Buffer<float> W_ih, W_hh, b;     // (4d, d), (4d, d), (4d) = b_ih + b_hh
    mem::Buffer<float> dW_ih, dW_hh, db;  // gradients

    explicit LstmLayer(int d);
    // Runs the n steps and returns y = h[1..n] (n, B, d), which stays valid until backward().
    const float* forward(const float* x, int n, int B);
    mem::Buffer<float> backward(const float* dy);  // dx (n, B, d); frees the saved states

    // Peak bytes of one forward + backward with x, dy and the parameters present, plus
    // sgemm_workspace_bytes_max() as a margin for packing.
    static double predicted_peak_bytes(int B, int n, int d);

private:
    const float* x_ = nullptr;  // saved input, owned by the caller
    int n_ = 0, B_ = 0;
    mem::Buffer<float> h_, c_, gates_;  // (n + 1, B, d), (n + 1, B, d), (n, B, 4d)
};
