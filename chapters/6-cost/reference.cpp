// Section 6's algorithms in plain loops (see reference.h).
#include "chapters/6-cost/reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace reference {

namespace {

constexpr double NEG_INF = -std::numeric_limits<double>::infinity();

// op(X)[r][k]: X itself, or with trans the transpose of X; rows ld floats apart.
double at(const float* X, int ld, bool trans, int r, int k) {
    return trans ? X[(long)k * ld + r] : X[(long)r * ld + k];
}

// x . y over d_k floats: one row of Q with one row of K, say.
double dot(const float* x, const float* y, int d_k) {
    double s = 0;
    for (int c = 0; c < d_k; c++)
        s += double(x[c]) * y[c];
    return s;
}

double sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

}  // namespace

void sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
           const float* B, int ldb, float beta, float* C, int ldc) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double acc = 0;
            for (int k = 0; k < K; k++)
                acc += at(A, lda, trans_a, i, k) * at(B, ldb, trans_b, k, j);
            float& c = C[(long)i * ldc + j];
            c = float(alpha * acc + (beta == 0.0f ? 0.0 : double(beta) * c));
        }
}

// ---- naive: S and P in memory, n x n per head ------------------------------------------------

void attention_naive_forward(const float* Q, const float* K, const float* V, float* O, float* P,
                             int B, int h, int n, int d_k, bool causal) {
    const double scale = 1.0 / std::sqrt(double(d_k));
    std::vector<double> S(n);  // (n) one row of S, then of exp(S - m)
    for (long bh = 0; bh < (long)B * h; bh++) {
        const float* Q_ = Q + bh * n * d_k;  // (n, d_k)
        const float* K_ = K + bh * n * d_k;  // (n, d_k)
        const float* V_ = V + bh * n * d_k;  // (n, d_k)
        float* O_ = O + bh * n * d_k;        // (n, d_k)
        float* P_ = P + bh * n * n;          // (n, n)
        for (int i = 0; i < n; i++) {
            // S_i = Q_i K^T / sqrt(d_k), masked_fill(j > i, -inf) when causal; m its max
            double m = NEG_INF;
            for (int j = 0; j < n; j++) {
                S[j] = causal && j > i ? NEG_INF : dot(Q_ + i * d_k, K_ + j * d_k, d_k) * scale;
                m = std::max(m, S[j]);
            }
            // P_i = softmax(S_i) = exp(S_i - m) / l: subtracting m keeps exp from overflowing
            double l = 0;
            for (int j = 0; j < n; j++)
                l += S[j] = std::exp(S[j] - m);  // exp(-inf) = 0
            for (int j = 0; j < n; j++)
                P_[(long)i * n + j] = float(S[j] / l);
            // O_i = P_i V
            for (int c = 0; c < d_k; c++) {
                double o = 0;
                for (int j = 0; j < n; j++)
                    o += S[j] / l * V_[j * d_k + c];
                O_[i * d_k + c] = float(o);
            }
        }
    }
}

void attention_naive_backward(const float* Q, const float* K, const float* V, const float* P,
                              const float* dO, float* dQ, float* dK, float* dV, int B, int h, int n,
                              int d_k, bool causal) {
    (void)causal;  // P is exactly 0 above the diagonal, so dS is too: no mask needed
    const double scale = 1.0 / std::sqrt(double(d_k));
    std::vector<double> dS((size_t)n * n);  // (n, n)
    for (long bh = 0; bh < (long)B * h; bh++) {
        const long in = bh * n * d_k;      // Q, K, V, dO, dQ, dK, dV: (n, d_k) from here
        const float* P_ = P + bh * n * n;  // (n, n)
        for (int i = 0; i < n; i++) {
            // dP_i = dO_i V^T, D_i = rowsum(P_i * dP_i), dS_i = P_i * (dP_i - D_i): softmax's
            // Jacobian applied to dP_i
            std::vector<double> dP(n);  // (n)
            double D = 0;
            for (int j = 0; j < n; j++) {
                dP[j] = dot(dO + in + i * d_k, V + in + j * d_k, d_k);
                D += P_[(long)i * n + j] * dP[j];
            }
            for (int j = 0; j < n; j++)
                dS[(size_t)i * n + j] = P_[(long)i * n + j] * (dP[j] - D);
        }
        // dQ = dS K / sqrt(d_k),  dK = dS^T Q / sqrt(d_k),  dV = P^T dO
        for (int i = 0; i < n; i++)
            for (int c = 0; c < d_k; c++) {
                double q = 0, k = 0, v = 0;
                for (int j = 0; j < n; j++) {
                    q += dS[(size_t)i * n + j] * K[in + j * d_k + c];
                    k += dS[(size_t)j * n + i] * Q[in + j * d_k + c];
                    v += P_[(long)j * n + i] * double(dO[in + j * d_k + c]);
                }
                dQ[in + i * d_k + c] = float(q * scale);
                dK[in + i * d_k + c] = float(k * scale);
                dV[in + i * d_k + c] = float(v);
            }
    }
}

// ---- fused: FlashAttention-2, no n x n matrix ------------------------------------------------

void attention_fused_forward(const float* Q, const float* K, const float* V, float* O, float* L,
                             int B, int h, int n, int d_k, bool causal, int Br, int Bc) {
    const double scale = 1.0 / std::sqrt(double(d_k));
    for (long bh = 0; bh < (long)B * h; bh++) {
        const float* Q_ = Q + bh * n * d_k;   // (n, d_k)
        const float* K_ = K + bh * n * d_k;   // (n, d_k)
        const float* V_ = V + bh * n * d_k;   // (n, d_k)
        float* O_ = O + bh * n * d_k;         // (n, d_k)
        float* L_ = L + bh * n;               // (n)
        for (int r0 = 0; r0 < n; r0 += Br) {  // Q_i: query rows r0 .. r1 - 1
            const int r1 = std::min(n, r0 + Br);
            std::vector<double> m(Br, NEG_INF), l(Br, 0.0);  // (Br) running max and sum
            std::vector<double> O_i((size_t)Br * d_k, 0.0);  // (Br, d_k) O not yet / l
            for (int c0 = 0; c0 < n; c0 += Bc) {             // K_j, V_j: key rows c0 .. c1 - 1
                const int c1 = std::min(n, c0 + Bc);
                for (int i = r0; i < r1; i++) {
                    const int r = i - r0;
                    // S_ij = Q_i K_j^T / sqrt(d_k) (masked), and the new running max. Key 0 is in
                    // the first tile and every row sees it, so m is finite from then on.
                    std::vector<double> S(c1 - c0);  // (Bc) this row of the tile
                    double m_new = m[r];
                    for (int j = c0; j < c1; j++) {
                        S[j - c0] = causal && j > i ? NEG_INF
                                                    : dot(Q_ + i * d_k, K_ + j * d_k, d_k) * scale;
                        m_new = std::max(m_new, S[j - c0]);
                    }
                    // What was summed against the old max is rescaled to the new one:
                    // exp(m - m_new), 0 on the first tile (m = -inf), 1 if the max stayed.
                    const double correction = std::exp(m[r] - m_new);
                    l[r] *= correction;
                    for (int c = 0; c < d_k; c++)
                        O_i[(size_t)r * d_k + c] *= correction;
                    // P_ij = exp(S_ij - m_new), unnormalised: l += rowsum(P_ij), O_i += P_ij V_j
                    for (int j = c0; j < c1; j++) {
                        const double p = std::exp(S[j - c0] - m_new);
                        l[r] += p;
                        for (int c = 0; c < d_k; c++)
                            O_i[(size_t)r * d_k + c] += p * V_[j * d_k + c];
                    }
                    m[r] = m_new;
                }
            }
            // O_i = O_i / l,  L_i = m + log(l): the logsumexp of row i of S, all the backward
            // needs to recompute P
            for (int i = r0; i < r1; i++) {
                const int r = i - r0;
                for (int c = 0; c < d_k; c++)
                    O_[i * d_k + c] = float(O_i[(size_t)r * d_k + c] / l[r]);
                L_[i] = float(m[r] + std::log(l[r]));
            }
        }
    }
}

void attention_fused_backward(const float* Q, const float* K, const float* V, const float* O,
                              const float* L, const float* dO, float* dQ, float* dK, float* dV,
                              int B, int h, int n, int d_k, bool causal, int Br, int Bc) {
    const double scale = 1.0 / std::sqrt(double(d_k));
    for (long bh = 0; bh < (long)B * h; bh++) {
        const long in = bh * n * d_k;  // Q, K, V, O, dO, dQ, dK, dV: (n, d_k) from here
        const float* L_ = L + bh * n;  // (n)
        // D_i = rowsum(dO_i * O_i), which equals rowsum(P_i * dP_i) since O_i = P_i V: the
        // naive backward's D without P
        std::vector<double> D(n);  // (n)
        for (int i = 0; i < n; i++)
            D[i] = dot(dO + in + i * d_k, O + in + i * d_k, d_k);
        std::vector<double> dQ_((size_t)n * d_k, 0.0), dK_(dQ_), dV_(dQ_);  // (n, d_k) sums
        for (int c0 = 0; c0 < n; c0 += Bc) {  // K_j, V_j: key rows c0 .. c1 - 1
            const int c1 = std::min(n, c0 + Bc);
            for (int r0 = 0; r0 < n; r0 += Br) {  // Q_i, dO_i: query rows r0 .. r1 - 1
                const int r1 = std::min(n, r0 + Br);
                for (int i = r0; i < r1; i++)
                    for (int j = c0; j < c1; j++) {
                        if (causal && j > i) continue;  // P_ij = 0, and so dS_ij = 0
                        // P_ij = exp(S_ij - L_i): the forward's probability, recomputed
                        const double S = dot(Q + in + i * d_k, K + in + j * d_k, d_k) * scale;
                        const double P = std::exp(S - L_[i]);
                        // dP_ij = dO_i . V_j,  dS_ij = P_ij (dP_ij - D_i)
                        const double dS =
                            P * (dot(dO + in + i * d_k, V + in + j * d_k, d_k) - D[i]);
                        // dV_j += P_ij dO_i,  dQ_i += dS_ij K_j / sqrt(d_k),
                        // dK_j += dS_ij Q_i / sqrt(d_k)
                        for (int c = 0; c < d_k; c++) {
                            dV_[(size_t)j * d_k + c] += P * dO[in + i * d_k + c];
                            dQ_[(size_t)i * d_k + c] += dS * scale * K[in + j * d_k + c];
                            dK_[(size_t)j * d_k + c] += dS * scale * Q[in + i * d_k + c];
                        }
                    }
            }
        }
        for (long k = 0; k < (long)n * d_k; k++)
            dQ[in + k] = float(dQ_[k]), dK[in + k] = float(dK_[k]), dV[in + k] = float(dV_[k]);
    }
}

// ---- one LSTM step ----------------------------------------------------------------------------

void lstm_step_forward(const float* x_t, const float* h_prev, const float* c_prev,
                       const float* W_ih, const float* W_hh, const float* b, int B, int d,
                       float* h_t, float* c_t, float* gates_t) {
    for (int r = 0; r < B; r++)
        for (int k = 0; k < d; k++) {
            // z_q = x_t W_ih^T + h_{t-1} W_hh^T + b, row q d + k of the weights for gate q
            double z[4];
            for (int q = 0; q < 4; q++) {
                const long row = (long)q * d + k;
                z[q] = b[row] + dot(W_ih + row * d, x_t + (long)r * d, d) +
                       dot(W_hh + row * d, h_prev + (long)r * d, d);
            }
            const double i = sigmoid(z[0]), f = sigmoid(z[1]), g = std::tanh(z[2]),
                         o = sigmoid(z[3]);
            // c_t = f * c_{t-1} + i * g,  h_t = o * tanh(c_t)
            const double c = f * c_prev[(long)r * d + k] + i * g;
            c_t[(long)r * d + k] = float(c);
            h_t[(long)r * d + k] = float(o * std::tanh(c));
            float* a = gates_t + (long)r * 4 * d;  // (4d)
            a[k] = float(i), a[d + k] = float(f), a[2 * d + k] = float(g), a[3 * d + k] = float(o);
        }
}

void lstm_step_backward(const float* x_t, const float* h_prev, const float* c_prev,
                        const float* c_t, const float* gates_t, const float* W_ih,
                        const float* W_hh, const float* dh, const float* dc, int B, int d,
                        float* dx_t, float* dh_prev, float* dc_prev, float* dW_ih, float* dW_hh,
                        float* db) {
    std::vector<double> da((size_t)B * 4 * d);  // (B, 4d) gradient of the pre-activations z
    for (int r = 0; r < B; r++)
        for (int k = 0; k < d; k++) {
            const long rk = (long)r * d + k, r4 = (long)r * 4 * d;
            const double i = gates_t[r4 + k], f = gates_t[r4 + d + k], g = gates_t[r4 + 2 * d + k],
                         o = gates_t[r4 + 3 * d + k];
            const double tanh_c = std::tanh(double(c_t[rk]));
            // h_t = o tanh(c_t) adds its share to the gradient reaching c_t
            const double dc_t = dc[rk] + dh[rk] * o * (1 - tanh_c * tanh_c);
            // through the nonlinearities: sigmoid' = s (1 - s), tanh' = 1 - t^2
            da[r4 + k] = dc_t * g * i * (1 - i);
            da[r4 + d + k] = dc_t * c_prev[rk] * f * (1 - f);
            da[r4 + 2 * d + k] = dc_t * i * (1 - g * g);
            da[r4 + 3 * d + k] = dh[rk] * tanh_c * o * (1 - o);
            dc_prev[rk] = float(dc_t * f);
        }
    // dx_t = da W_ih,  dh_prev = da W_hh: (B, 4d) x (4d, d)
    for (int r = 0; r < B; r++)
        for (int e = 0; e < d; e++) {
            double x = 0, hh = 0;
            for (long row = 0; row < 4L * d; row++) {
                x += da[(size_t)r * 4 * d + row] * W_ih[row * d + e];
                hh += da[(size_t)r * 4 * d + row] * W_hh[row * d + e];
            }
            dx_t[(long)r * d + e] = float(x);
            dh_prev[(long)r * d + e] = float(hh);
        }
    // dW_ih += da^T x_t,  dW_hh += da^T h_prev: (4d, B) x (B, d);  db += the column sums of da
    for (long row = 0; row < 4L * d; row++) {
        double bias = 0;
        for (int r = 0; r < B; r++)
            bias += da[(size_t)r * 4 * d + row];
        db[row] = float(db[row] + bias);
        for (int e = 0; e < d; e++) {
            double wi = 0, wh = 0;
            for (int r = 0; r < B; r++) {
                wi += da[(size_t)r * 4 * d + row] * x_t[(long)r * d + e];
                wh += da[(size_t)r * 4 * d + row] * h_prev[(long)r * d + e];
            }
            dW_ih[row * d + e] = float(dW_ih[row * d + e] + wi);
            dW_hh[row * d + e] = float(dW_hh[row * d + e] + wh);
        }
    }
}

void lstm_forward(const float* x, const float* W_ih, const float* W_hh, const float* b, int n,
                  int B, int d, float* h, float* c, float* gates) {
    const long Bd = (long)B * d;
    std::fill(h, h + Bd, 0.0f);  // h[0] = 0
    std::fill(c, c + Bd, 0.0f);  // c[0] = 0
    for (int t = 0; t < n; t++)
        lstm_step_forward(x + t * Bd, h + t * Bd, c + t * Bd, W_ih, W_hh, b, B, d, h + (t + 1) * Bd,
                          c + (t + 1) * Bd, gates + t * 4 * Bd);
}

void lstm_backward(const float* x, const float* W_ih, const float* W_hh, const float* h,
                   const float* c, const float* gates, const float* dh_out, int n, int B, int d,
                   float* dx, float* dW_ih, float* dW_hh, float* db) {
    const long Bd = (long)B * d;
    std::fill(dW_ih, dW_ih + 4L * d * d, 0.0f);
    std::fill(dW_hh, dW_hh + 4L * d * d, 0.0f);
    std::fill(db, db + 4 * d, 0.0f);
    // (B, d) each: dh all that reaches h_t; dh_next and dc_next what reaches h_t and c_t from
    // step t + 1 (nothing at the last step)
    std::vector<float> dh(Bd), dh_next(Bd, 0.0f), dc_next(Bd, 0.0f), dc_prev(Bd);
    for (int t = n - 1; t >= 0; t--) {  // back through time
        for (long k = 0; k < Bd; k++)
            dh[k] = dh_out[t * Bd + k] + dh_next[k];
        lstm_step_backward(x + t * Bd, h + t * Bd, c + t * Bd, c + (t + 1) * Bd, gates + t * 4 * Bd,
                           W_ih, W_hh, dh.data(), dc_next.data(), B, d, dx + t * Bd, dh_next.data(),
                           dc_prev.data(), dW_ih, dW_hh, db);
        dc_next.swap(dc_prev);
    }
}

}  // namespace reference
