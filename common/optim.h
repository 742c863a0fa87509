// The optimiser of "Attention Is All You Need" (section 5.3): Adam with beta1 = 0.9,
// beta2 = 0.98, eps = 1e-9, and a learning rate that warms up linearly, then decays as
// 1/sqrt(step):
//   lrate = d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)
//
//   optim::Adam adam(model.parameters());
//   loss.backward();
//   adam.step(optim::noam_lr(step, d_model, warmup, factor));  // step counts from 1
//   adam.zero_grad();
#pragma once
#include <cstdint>
#include <vector>

#include "common/tensor.h"

namespace optim {

// The paper's schedule, times `factor` (1 = the paper). step >= 1.
double noam_lr(int64_t step, int64_t d_model, int64_t warmup, double factor = 1.0);

class Adam {
public:
    explicit Adam(std::vector<Tensor> params, double beta1 = 0.9, double beta2 = 0.98,
                  double eps = 1e-9);
    // One update of every parameter from its accumulated gradient (torch.optim.Adam's rule,
    // bias-corrected moments). Parameters without a gradient yet are left alone.
    void step(double lr);
    void zero_grad();          // every parameter's gradient := 0
    int64_t steps() const { return t_; }

private:
    std::vector<Tensor> params_;
    std::vector<std::vector<float>> m_, v_;  // first and second moments, one per parameter
    double beta1_, beta2_, eps_;
    int64_t t_ = 0;
};

}  // namespace optim
