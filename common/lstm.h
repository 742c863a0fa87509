// LSTM (input width d, hidden width d), forward and backward on raw buffers, torch's gate
// order (i, f, g, o) and torch's nn.LSTM weight shapes (cuda/ mirrors these names).
//
//   x: (n, B, d) time-major input          W_ih: (4d, d)   W_hh: (4d, d)   b: (4d) = b_ih + b_hh
//   h: (n + 1, B, d) hidden states, h[0] = 0      c: (n + 1, B, d) cell states, c[0] = 0
//   gates: (n, B, 4d) activated gates i, f, g, o saved for the backward
//
// The input projection for all n steps is one GEMM; each step then adds h[t-1] W_hh^T (the
// sequential part) and applies the fused gate nonlinearities and cell update.
#pragma once

void lstm_forward(const float* x, const float* W_ih, const float* W_hh, const float* b, int n,
                  int B, int d, float* h, float* c, float* gates);

// dh_out: (n, B, d) gradient of the loss with respect to h[1..n].
// Writes dx (n, B, d) and dW_ih, dW_hh (4d, d), db (4d) (overwritten, not accumulated).
void lstm_backward(const float* x, const float* W_ih, const float* W_hh, const float* h,
                   const float* c, const float* gates, const float* dh_out, int n, int B, int d,
                   float* dx, float* dW_ih, float* dW_hh, float* db);

// ------------------------------------------------------------------------------------------
// The same LSTM as a layer with torch's nn.LSTM(d, d) parameters, owning its buffers so
// section 6 can time and weigh it against attention. Time-major: x, y, dy, dx are (n, B, d).
#include "common/memory.h"

#include <cstddef>

struct LstmLayer {
    int d;
    mem::Buffer<float> W_ih, W_hh, b;    // (4d, d), (4d, d), (4d) = b_ih + b_hh
    mem::Buffer<float> dW_ih, dW_hh, db;  // gradients

    explicit LstmLayer(int d);
    // Runs the n steps and returns y = h[1..n] (n, B, d), which stays valid until backward().
    const float* forward(const float* x, int n, int B);
    mem::Buffer<float> backward(const float* dy);  // dx (n, B, d); frees the saved states

    // Peak bytes of one forward + backward with x, dy and the parameters present, plus
    // sgemm_workspace_bytes_max() as a margin for packing.
    static size_t predicted_peak_bytes(int B, int n, int d);

private:
    const float* x_ = nullptr;  // saved input, owned by the caller
    int n_ = 0, B_ = 0;
    mem::Buffer<float> h_, c_, gates_;  // (n + 1, B, d), (n + 1, B, d), (n, B, 4d)
};
