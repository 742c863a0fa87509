#include "common/optim.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace optim {

double noam_lr(int64_t step, int64_t d_model, int64_t warmup, double factor) {
    if (step < 1 || d_model < 1 || warmup < 1)
        throw std::invalid_argument("noam_lr: step, d_model and warmup must be >= 1");
    const double s = double(step);
    return factor * std::pow(double(d_model), -0.5) *
           std::min(std::pow(s, -0.5), s * std::pow(double(warmup), -1.5));
}

Adam::Adam(std::vector<Tensor> params, double beta1, double beta2, double eps)
    : params_(std::move(params)), beta1_(beta1), beta2_(beta2), eps_(eps) {
    for (const Tensor& p : params_) {
        m_.emplace_back(size_t(p.numel()), 0.0f);
        v_.emplace_back(size_t(p.numel()), 0.0f);
    }
}

void Adam::step(double lr) {
    t_++;
    // Bias correction: the moments start at 0, so early averages are scaled up.
    const float b1 = float(beta1_), b2 = float(beta2_);
    const float c1 = float(1.0 / (1.0 - std::pow(beta1_, double(t_))));
    const float c2 = float(1.0 / (1.0 - std::pow(beta2_, double(t_))));
    const float step_size = float(lr), eps = float(eps_);
    for (size_t k = 0; k < params_.size(); k++) {
        Tensor& p = params_[k];
        if (!p.impl->grad) continue;
        float* w = p.data();
        const float* g = p.impl->grad->data();
        float *m = m_[k].data(), *v = v_[k].data();
        const int64_t n = p.numel();
        #pragma omp simd
        for (int64_t i = 0; i < n; i++) {
            m[i] = b1 * m[i] + (1 - b1) * g[i];
            v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
            w[i] -= step_size * (m[i] * c1) / (std::sqrt(v[i] * c2) + eps);
        }
    }
}

void Adam::zero_grad() {
    for (Tensor& p : params_) p.zero_grad();
}

}  // namespace optim
