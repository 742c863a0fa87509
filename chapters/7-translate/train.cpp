// Chapter 7's trainer (see train.h).
#include "chapters/7-translate/train.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "chapters/7-translate/korean_numbers.h"
#include "common/optim.h"
#include "common/random.h"

namespace translate {

LearnedPositionsModel::LearnedPositionsModel(int src_vocab, int tgt_vocab, int d, int h, int layers,
                                             LnPlacement p)
    : EncoderDecoder(src_vocab, tgt_vocab, d, h, layers, p),
      src_pos(LEARNED_POSITIONS, d),
      tgt_pos(LEARNED_POSITIONS, d) {
    // N(0, 1/2) per entry, the mean square of a sinusoid's entries, so that both kinds of
    // position vector start at the same size next to the token vectors.
    for (Tensor* w : {&src_pos.weight, &tgt_pos.weight})
        for (int64_t i = 0; i < w->numel(); i++)
            w->data()[i] *= std::sqrt(0.5f);
}

Tensor LearnedPositionsModel::position_vectors(const Embedding& tokens, int64_t T) const {
    const Embedding& table = &tokens == &src_embed ? src_pos : tgt_pos;
    const int64_t rows = table.weight.size(0);
    if (T > rows)
        throw std::out_of_range("a learned position table has " + std::to_string(rows) +
                                " rows: position " + std::to_string(rows) +
                                " and later have no vector (sinusoids have one for any n)");
    return slice(table.weight, 0, 0, T);  // (T, d)
}

void LearnedPositionsModel::collect_parameters(const std::string& prefix, NamedTensors& out) const {
    NamedTensors all;
    EncoderDecoder::collect_parameters(prefix, all);
    const std::string head = join_name(prefix, "head.");
    auto at = std::find_if(all.begin(), all.end(),
                           [&](const auto& nt) { return nt.first.rfind(head, 0) == 0; });
    NamedTensors tables;
    src_pos.collect_parameters(join_name(prefix, "src_pos"), tables);
    tgt_pos.collect_parameters(join_name(prefix, "tgt_pos"), tables);
    all.insert(at, tables.begin(), tables.end());
    out.insert(out.end(), all.begin(), all.end());
}

std::unique_ptr<EncoderDecoder> new_model(const ModelConfig& c) {
    if (c.positions == Positions::learned)
        return std::make_unique<LearnedPositionsModel>(SRC_VOCAB, TGT_VOCAB, c.d_model, c.heads,
                                                       c.layers, c.placement);
    if (c.positions == Positions::none)
        return std::make_unique<NoPositionsModel>(SRC_VOCAB, TGT_VOCAB, c.d_model, c.heads,
                                                  c.layers, c.placement);
    return std::make_unique<EncoderDecoder>(SRC_VOCAB, TGT_VOCAB, c.d_model, c.heads, c.layers,
                                            c.placement);
}

std::unique_ptr<EncoderDecoder> make_model(const ModelConfig& c) {
    torch_rng::manual_seed(uint64_t(c.seed));
    std::unique_ptr<EncoderDecoder> model = new_model(c);
    // nn.Embedding draws N(0, 1), and the paper multiplies by sqrt(d_model): each token vector
    // would be ~8x longer than its positional encoding (entries in [-1, 1]), and this task is all
    // about positions (which digit goes where). Drawn N(0, 1/d_model) instead, the scaled
    // embedding and the positional encoding start at the same size.
    for (Tensor* E : {&model->src_embed.weight, &model->tgt_embed.weight})
        for (int64_t i = 0; i < E->numel(); i++)
            E->data()[i] /= std::sqrt(float(c.d_model));
    return model;
}

TrainResult train(EncoderDecoder& model, std::vector<int64_t> numbers,
                  const std::vector<int64_t>& heldout, const TrainConfig& c) {
    const BatchLoss loss = [&model](const Batch& b) { return batch_loss(model, b); };
    return train(model.parameters(), model.d_model, loss, std::move(numbers), heldout, c);
}

TrainResult train(const std::vector<Tensor>& parameters, int d_model, const BatchLoss& batch_loss,
                  std::vector<int64_t> numbers, const std::vector<int64_t>& heldout,
                  const TrainConfig& c) {
    using clock = std::chrono::steady_clock;
    auto lr_at = [&](int step) {
        return c.schedule ? c.schedule(step) : optim::noam_lr(step, d_model, c.warmup, c.lr);
    };
    optim::Adam adam(parameters);
    torch_rng::Generator order_gen(uint64_t(c.seed) + 1);  // the training order
    shuffle_numbers(numbers, order_gen);
    std::vector<bool> is_heldout(size_t(korean_numbers::MAX_VALUE) + 1, false);
    for (int64_t n : heldout)
        is_heldout[size_t(n)] = true;
    size_t cursor = 0;
    // One sentence in eight on average (a 1/8 draw each) picks its digit count first: numbers
    // below 1000 are 1% of the range, and without this the model meets 삼십일 too rarely to
    // learn it.
    auto draw = [&]() -> int64_t {
        if (order_gen.random64() % 8 == 0) {
            for (;;) {
                const int64_t digits = 1 + int64_t(order_gen.random64() % uint64_t(c.max_digits));
                const int64_t lo = int64_t(std::pow(10, digits - 1)), hi = 10 * lo - 1;
                const int64_t n = lo + int64_t(order_gen.random64() % uint64_t(hi - lo + 1));
                if (!is_heldout[size_t(n)]) return n;
            }
        }
        if (cursor == numbers.size()) {
            shuffle_numbers(numbers, order_gen);
            cursor = 0;
        }
        return numbers[cursor++];
    };

    TrainResult r;
    const auto t0 = clock::now();
    double evaluating = 0;  // seconds inside c.evaluate, left out of the training's
    auto t_last = t0;
    int64_t tokens_since = 0;
    double loss_since = 0;
    int n_since = 0;
    for (int step = 1; step <= c.steps; step++) {
        std::vector<int64_t> ns;
        while (int(ns.size()) < c.batch)
            ns.push_back(draw());
        Batch b = make_batch(ns);
        Tensor loss = batch_loss(b);
        const double value = loss.item();
        r.losses.push_back(value);
        if (!std::isfinite(value)) {  // a diverged run: its weights are no longer numbers
            r.diverged_at = step;
            break;
        }
        loss.backward();
        adam.step(lr_at(step));
        adam.zero_grad();
        tokens_since += b.tokens;
        loss_since += value;
        n_since++;
        if (c.report && c.report_every > 0 && (step % c.report_every == 0 || step == c.steps)) {
            const auto now = clock::now();
            const double dt = std::chrono::duration<double>(now - t_last).count();
            c.report(step, loss_since / n_since, lr_at(step),
                     double(tokens_since) / std::max(dt, 1e-9));
            t_last = now;
            tokens_since = 0;
            loss_since = 0;
            n_since = 0;
        }
        const bool evaluate_now =
            c.evaluate && c.evaluate_every > 0 && (step % c.evaluate_every == 0 || step == c.steps);
        if (evaluate_now) {
            const auto e0 = clock::now();
            c.evaluate(step, std::chrono::duration<double>(e0 - t0).count() - evaluating);
            const double took = std::chrono::duration<double>(clock::now() - e0).count();
            evaluating += took;
            t_last += std::chrono::duration_cast<clock::duration>(
                std::chrono::duration<double>(took));
        }
        if (c.stop && c.stop()) break;
    }
    r.seconds = std::chrono::duration<double>(clock::now() - t0).count() - evaluating;
    return r;
}

}  // namespace translate
