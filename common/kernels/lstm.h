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
#include <cstddef>

void lstm_forward(const float* x, const float* W_ih, const float* W_hh, const float* b, int n,
                  int B, int d, float* h, float* c, float* gates);

// dh_out: (n, B, d) gradient of the loss with respect to h[1..n].
// Writes dx (n, B, d) and dW_ih, dW_hh (4d, d), db (4d) (overwritten, not accumulated).
void lstm_backward(const float* x, const float* W_ih, const float* W_hh, const float* h,
                   const float* c, const float* gates, const float* dh_out, int n, int B, int d,
                   float* dx, float* dW_ih, float* dW_hh, float* db);

// What a forward or backward call holds while its steps run: each thread's packed share of
// W_hh, for the threads the chain of a (B, d) LSTM runs on.
size_t lstm_workspace_bytes(int B, int d);
