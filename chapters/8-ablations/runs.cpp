// Chapter 8's runs (see runs.h): each recipe trains with chapter 7's make_model and train(),
// then measures what its claim needs.
#include "chapters/8-ablations/runs.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <numeric>
#include <set>
#include <stdexcept>

#include "chapters/1-self-attention/attention.h"
#include "chapters/4-positional-encoding/positional_encoding.h"
#include "chapters/5-blocks/blocks.h"
#include "chapters/7-translate/attention_probe.h"
#include "chapters/7-translate/korean_numbers.h"
#include "chapters/8-ablations/machinery/records.h"
#include "chapters/8-ablations/rnn.h"
#include "common/optim.h"
#include "common/random.h"

namespace ablations {

using namespace translate;

namespace {

// The mean over real (non-padding) queries of the largest weight in each row of the first
// encoder block's self-attention: how peaked the attention is.
double mean_max_weight(EncoderDecoder& m, const std::vector<int64_t>& numbers) {
    NoGradGuard no_grad;
    AttentionProbe probe(m.encoder[0]->attn);
    Batch b = make_batch(numbers, false);
    m.encode(b.src, {b.B, b.S}, b.src_mask);
    const Tensor A = probe.weights(b.src_mask);  // (B, h, S, S)
    const int64_t h = A.size(1), S = b.S;
    double sum = 0;
    int64_t rows = 0;
    for (int64_t i = 0; i < b.B; i++)
        for (int64_t k = 0; k < h; k++)
            for (int64_t q = 0; q < S; q++) {
                if (b.src[size_t(i * S + q)] == SRC_PAD) continue;
                const float* row = A.data() + ((i * h + k) * S + q) * S;
                sum += *std::max_element(row, row + S);
                rows++;
            }
    return sum / double(std::max<int64_t>(rows, 1));
}

// Trains, then records the loss curve, where it diverged (0: it did not), and exact match on
// the test numbers.
Record train_record(EncoderDecoder& m, const TrainConfig& tc, const std::vector<int64_t>& numbers,
                    const std::vector<int64_t>& never, const std::vector<int64_t>& test) {
    TrainResult r = train(m, numbers, never, tc);
    Record rec;
    rec.put("loss", r.losses);
    rec.put("diverged_at", r.diverged_at);
    rec.put("seconds", r.seconds);
    rec.put("exact", r.diverged_at ? 0.0 : exact_match(m, test));
    return rec;
}

// The opening claim's clock: validation's exact match every LEVEL_EVERY steps until it first
// reaches LEVEL_PERCENT, then the step and the training seconds so far (evaluation left out).
// Never reached: +inf for both, as steps_to_99 says it.
struct TimeToLevel {
    double step = INFINITY, seconds = INFINITY;
    // Set as `tc`'s evaluate: `exact` scores the model on `validation`.
    void watch(TrainConfig& tc, std::function<double()> exact) {
        tc.evaluate_every = LEVEL_EVERY;
        tc.evaluate = [this, exact = std::move(exact)](int at, double elapsed) {
            if (std::isinf(step) && exact() >= LEVEL_PERCENT) {
                step = at;
                seconds = elapsed;
            }
        };
    }
    void put(Record& rec) const {
        rec.put("steps_to_level", step);
        rec.put("seconds_to_level", seconds);
    }
};

// §5: the first generation step on the test sentences, intact and with a sublayer replaced.
void first_step(EncoderDecoder& m, const std::vector<int64_t>& test, Record& rec) {
    Batch b = make_batch(test, false);
    const int64_t V = TGT_VOCAB;
    auto probs = [&](const Tensor& logits) { return softmax(reshape(logits, {b.B, V}), -1); };
    std::vector<std::unique_ptr<AttentionProbe>> self;  // one per decoder block
    for (const auto& blk : m.decoder)
        self.push_back(std::make_unique<AttentionProbe>(blk->self_attn));
    Tensor intact = probs(first_step_logits(m, b, FirstStep::intact));
    // The self-attention weights of that step: one query, one key (<시작> itself).
    std::vector<float> w;
    for (const auto& probe : self) {
        const std::vector<float> a = probe->weights(causal_mask(1)).to_vector();  // (B, h, 1, 1)
        w.insert(w.end(), a.begin(), a.end());
    }
    self.clear();
    const auto [w_min, w_max] = std::minmax_element(w.begin(), w.end());
    rec.put("self_weight_min", double(*w_min));
    rec.put("self_weight_max", double(*w_max));
    {  // the same step through EncoderDecoder::decode, as generation runs it
        NoGradGuard no_grad;
        Tensor memory = m.encode(b.src, {b.B, b.S}, b.src_mask);
        Tensor ref = m.decode(std::vector<int64_t>(size_t(b.B), BOS), {b.B, 1}, memory, b.src_mask);
        rec.put("decode_max_diff", max(abs(probs(ref) - intact)).item());
    }
    std::vector<double> moved;
    const char* keys[] = {"first_digit_intact", "first_digit_self_mean", "first_digit_cross_mean",
                          "first_digit_cross_uniform"};
    int k = 0;
    for (FirstStep w : {FirstStep::intact, FirstStep::self_mean, FirstStep::cross_mean,
                        FirstStep::cross_uniform}) {
        Tensor p = w == FirstStep::intact ? intact : probs(first_step_logits(m, b, w));
        int right = 0;
        double tv = 0;
        for (int64_t i = 0; i < b.B; i++) {
            const float* row = p.data() + i * V;
            const float* ref = intact.data() + i * V;
            right += std::max_element(row, row + V) - row == target_ids(test[size_t(i)])[0];
            for (int64_t j = 0; j < V; j++)
                tv += 0.5 * std::fabs(double(row[j]) - ref[j]);
        }
        rec.put(keys[k++], 100.0 * right / double(b.B));
        moved.push_back(tv / double(b.B));
    }
    rec.put("first_step_total_variation", moved);  // intact, self mean, cross mean, cross uniform
}

const std::vector<int64_t> PEAK_PROBE = {3201, 15000, 99999, 7, 40408, 120};

// The run's model for the seed `tc` trains with (chapter 7's make_model), its variant applied to
// the model and to its training.
std::unique_ptr<EncoderDecoder> model_of(const RunSpec& r, TrainConfig& tc) {
    ModelConfig mc = r.model;
    mc.seed = tc.seed;
    auto m = make_model(mc);
    if (r.variant) r.variant(*m, tc);
    return m;
}

int longest_source(const std::vector<int64_t>& numbers) {
    size_t n = 0;
    for (int64_t v : numbers)
        n = std::max(n, source_ids(v).size());
    return int(n);
}
int shortest_source(const std::vector<int64_t>& numbers) {
    size_t n = SIZE_MAX;
    for (int64_t v : numbers)
        n = std::min(n, source_ids(v).size());
    return int(n);
}

// How far each row of a learned table moved from `before`: rows no sentence reached stay put.
std::vector<double> row_change(const Embedding& table, const std::vector<float>& before) {
    const int64_t d = table.weight.size(1);
    std::vector<double> change;
    for (int64_t r = 0; r < table.weight.size(0); r++) {
        double s2 = 0;
        for (int64_t c = 0; c < d; c++) {
            const double diff = table.weight.data()[r * d + c] - before[size_t(r * d + c)];
            s2 += diff * diff;
        }
        change.push_back(std::sqrt(s2));
    }
    return change;
}

int64_t sequence_code(const int64_t* x) {  // the sequence's digits as one number
    int64_t c = 0;
    for (int i = 0; i < NB_LENGTH; i++)
        c = 10 * c + x[i];
    return c;
}

std::set<int64_t> sequence_codes(const std::vector<int64_t>& x) {
    std::set<int64_t> codes;
    for (size_t i = 0; i < x.size(); i += NB_LENGTH)
        codes.insert(sequence_code(x.data() + i));
    return codes;
}

// §3's second experiment: one encoder block reads NB_LENGTH digits and writes, at each
// position, the class of (left neighbour - right neighbour).
struct NeighbourModel : Module {
    Embedding embed;  // (10, d)
    Stack stack;      // one block, its final LayerNorm and the (NB_CLASSES, d) head
    Tensor pe;        // (NB_LENGTH, d), section 4's sinusoids
    NeighbourModel(int layers, int d, int h, LnPlacement placement)
        : embed(10, d),
          stack(layers, d, h, placement, NB_CLASSES),
          pe(positional_encoding(NB_LENGTH, d)) {
        // As make_model does for chapter 7: token vectors the size of the positional encoding.
        for (int64_t i = 0; i < embed.weight.numel(); i++)
            embed.weight.data()[i] /= std::sqrt(float(embed.weight.size(1)));
    }
    Tensor operator()(const std::vector<int64_t>& x, int64_t B) const {  // (B, L, NB_CLASSES)
        const float scale = std::sqrt(float(pe.size(1)));
        return stack(embed(x, {B, NB_LENGTH}) * scale + pe);
    }
    void collect_parameters(const std::string& prefix, NamedTensors& out) const override {
        embed.collect_parameters(join_name(prefix, "embed"), out);
        stack.collect_parameters(join_name(prefix, "stack"), out);
    }
};

// Per-position accuracy on `x` (percent), greedy.
double neighbour_accuracy(const NeighbourModel& m, const std::vector<int64_t>& x) {
    NoGradGuard no_grad;
    Tensor logits = m(x, int64_t(x.size()) / NB_LENGTH);  // (n, L, NB_CLASSES)
    const std::vector<int64_t> y = neighbour_targets(x);
    int right = 0;
    for (size_t i = 0; i < y.size(); i++) {
        const float* row = logits.data() + i * NB_CLASSES;
        right += std::max_element(row, row + NB_CLASSES) - row == y[i];
    }
    return 100.0 * right / double(y.size());
}

// Whether each of 0..MAX_VALUE is one of chapter 7's held-out numbers (its defaults' tuning
// set), which chapter 8 never scores.
std::vector<bool> tuned_numbers() {
    std::vector<bool> tuned(size_t(korean_numbers::MAX_VALUE) + 1, false);
    for (int64_t n : split_numbers().heldout)
        tuned[size_t(n)] = true;
    return tuned;
}

}  // namespace

Record train_base(const RunSpec& r, TrainConfig tc) {
    const ThreeWay sets = three_way_split();
    auto m = model_of(r, tc);
    const double pmax = mean_max_weight(*m, PEAK_PROBE);
    TimeToLevel level;
    level.watch(tc, [&] { return exact_match(*m, sets.validation); });
    Record rec = train_record(*m, tc, sets.train, sets.never_train(), sets.test);
    level.put(rec);
    rec.put("init_attention_peak", pmax);
    const Pruning pr = prune(*m, sets.validation, sets.test);
    rec.put("exact_validation_without_head", pr.alone_validation);
    rec.put("prune_order", std::vector<double>(pr.order.begin(), pr.order.end()));
    rec.put("exact_validation_pruned", pr.curve_validation);
    rec.put("exact_test_pruned", pr.curve_test);
    rec.put("exact_kind_removed", pr.kind_removed_test);
    rec.put("exact_validation", pr.full_validation);
    rec.put("exact_pruned_third", pr.third_test);
    rec.put("prunable_heads", pr.can_go);
    rec.put("exact_prunable_removed",
            pr.can_go ? pr.curve_test[size_t(pr.can_go - 1)] : pr.full_test);
    first_step(*m, sets.test, rec);
    return rec;
}

Record train_variant(const RunSpec& r, TrainConfig tc) {
    const ThreeWay sets = three_way_split();
    auto m = model_of(r, tc);
    const double pmax = mean_max_weight(*m, PEAK_PROBE);
    Record rec = train_record(*m, tc, sets.train, sets.never_train(), sets.test);
    rec.put("init_attention_peak", pmax);
    return rec;
}

Record train_positions(const RunSpec& r, TrainConfig tc) {
    const LengthSplit s = length_split();
    auto m = model_of(r, tc);
    const auto* learned = dynamic_cast<const LearnedPositionsModel*>(m.get());
    std::vector<float> src0, tgt0;  // the learned tables before training
    if (learned) {
        src0 = learned->src_pos.weight.to_vector();
        tgt0 = learned->tgt_pos.weight.to_vector();
    }
    tc.max_digits = 4;
    Record rec = train_record(*m, tc, s.train, s.heldout, s.heldout);
    rec.put("exact_five_digit", rec.value("diverged_at") ? 0.0 : exact_match(*m, s.five_digit));
    rec.put("train_max_digits", tc.max_digits);
    rec.put("train_max_syllables", longest_source(s.train));
    if (learned) {
        rec.put("src_pos_row_change", row_change(learned->src_pos, src0));
        rec.put("tgt_pos_row_change", row_change(learned->tgt_pos, tgt0));
    }
    return rec;
}

Record train_source_lengths(const RunSpec& r, TrainConfig tc) {
    const SourceLengthSplit s = source_length_split();
    auto m = model_of(r, tc);
    Record rec = train_record(*m, tc, s.train, s.excluded, s.in_range_test);
    rec.put("exact_long_source", rec.value("diverged_at") ? 0.0 : exact_match(*m, s.long_test));
    rec.put("train_max_syllables", longest_source(s.train));
    rec.put("test_min_syllables", shortest_source(s.long_test));
    return rec;
}

Record train_neighbour(const RunSpec& r, TrainConfig tc) {
    const int d = r.model.d_model, heads = r.model.heads;
    constexpr int B = 64, L = NB_LENGTH;
    const std::vector<int64_t> test = neighbour_test_set(), validation = neighbour_validation_set();
    std::set<int64_t> never = sequence_codes(test);
    for (int64_t c : sequence_codes(validation))
        never.insert(c);
    torch_rng::manual_seed(uint64_t(tc.seed));
    NeighbourModel m(r.model.layers, d, heads, r.model.placement);
    optim::Adam adam(m.parameters());
    torch_rng::Generator order(uint64_t(tc.seed) + 1);
    const int steps = tc.steps;
    std::vector<double> losses, curve_steps, curve;
    for (int step = 1; step <= steps; step++) {
        std::vector<int64_t> x;  // (B * L)
        while (x.size() < size_t(B) * L) {
            std::vector<int64_t> seq(L);
            for (auto& v : seq)
                v = int64_t(order.random64() % 10);
            if (never.count(sequence_code(seq.data()))) continue;
            x.insert(x.end(), seq.begin(), seq.end());
        }
        Tensor loss = cross_entropy(reshape(m(x, B), {B * L, NB_CLASSES}), neighbour_targets(x));
        losses.push_back(loss.item());
        loss.backward();
        adam.step(optim::noam_lr(step, d, tc.warmup));
        adam.zero_grad();
        if (step % NB_EVAL_EVERY == 0 || step == steps) {
            curve_steps.push_back(step);
            curve.push_back(neighbour_accuracy(m, validation));
        }
        if (step % tc.report_every == 0 || step == steps) tc.report(step, 0, 0, 0);
    }
    Record rec;
    rec.put("loss", losses);
    rec.put("diverged_at", 0.0);
    rec.put("validation_steps", curve_steps);
    rec.put("validation_accuracy_curve", curve);
    double to_99 = INFINITY;  // the first scored step at 99%, +inf: none within the budget
    for (size_t i = 0; i < curve.size() && std::isinf(to_99); i++)
        if (curve[i] >= 99) to_99 = curve_steps[i];
    rec.put("steps_to_99", to_99);
    rec.put("digit_accuracy", neighbour_accuracy(m, test));
    // Where each head looks, on validation: its mean weight on the left and on the
    // right neighbour of every position.
    {
        NoGradGuard no_grad;
        AttentionProbe probe(m.stack.blocks[0]->attn);
        m(validation, int64_t(validation.size()) / L);
        const Tensor A = probe.weights();  // (n, h, L, L)
        const int64_t n = A.size(0);
        std::vector<double> left(size_t(heads), 0.0), right(size_t(heads), 0.0);
        for (int64_t s = 0; s < n; s++)
            for (int64_t k = 0; k < heads; k++)
                for (int64_t q = 0; q < L; q++) {
                    const float* row = A.data() + ((s * heads + k) * L + q) * L;
                    left[size_t(k)] += row[(q + L - 1) % L] / double(n * L);
                    right[size_t(k)] += row[(q + 1) % L] / double(n * L);
                }
        rec.put("head_left_weight", left);
        rec.put("head_right_weight", right);
        rec.put("max_head_left_weight", *std::max_element(left.begin(), left.end()));
        rec.put("max_head_right_weight", *std::max_element(right.begin(), right.end()));
    }
    return rec;
}

Record train_deep(const RunSpec& r, TrainConfig tc) {
    const ThreeWay sets = three_way_split();
    auto m = model_of(r, tc);
    Record rec = train_record(*m, tc, sets.train, sets.never_train(), sets.test);
    rec.put("peak_lr", peak_lr(tc, m->d_model));
    return rec;
}

Record train_lstm(const RunSpec& r, TrainConfig tc) {
    const ThreeWay sets = three_way_split();
    torch_rng::manual_seed(uint64_t(tc.seed));
    RNNsearch m(r.model.d_model);
    TimeToLevel level;
    level.watch(tc, [&] { return rnn_exact_match(m, sets.validation); });
    const translate::BatchLoss loss = [&m](const Batch& b) { return rnn_batch_loss(m, b); };
    TrainResult t = train(m.parameters(), m.H, loss, sets.train, sets.never_train(), tc);
    Record rec;
    rec.put("loss", t.losses);
    rec.put("diverged_at", t.diverged_at);
    rec.put("seconds", t.seconds);
    rec.put("exact", t.diverged_at ? 0.0 : rnn_exact_match(m, sets.test));
    rec.put("exact_validation", t.diverged_at ? 0.0 : rnn_exact_match(m, sets.validation));
    level.put(rec);
    rec.put("parameters", double(m.num_parameters()));
    return rec;
}

namespace {

// The run's budget at `scale`, its seed and its progress, as its recipe takes it.
TrainConfig budget(const RunSpec& r, double scale, int seed, Progress& p) {
    TrainConfig tc;
    tc.steps = scaled_steps(r.steps, scale);
    tc.warmup = scaled_steps(r.warmup, scale);
    tc.lr = r.lr;
    tc.seed = seed;
    tc.report_every = 10;
    tc.report = [&p, total = tc.steps](int step, double, double, double) { p(step, total); };
    return tc;
}

}  // namespace

std::vector<Job> all_jobs(double scale, const std::vector<int>& seeds) {
    std::vector<Job> jobs;
    for (int seed : seeds)
        for (const RunSpec& spec : RUNS) {
            auto check = [&spec, scale, seed](const Record& r) {
                return record_problem(spec, scale, seed, r);
            };
            jobs.push_back({spec.name + std::string("/") + std::to_string(seed),
                            spec.fixed_cost + spec.cost * scale,
                            [&spec, scale, seed, check](Progress& p) {
                                Record r = spec.recipe(
                                    spec, budget(spec, scale, seed + spec.seed_offset, p));
                                for (const auto& [key, value] : run_settings(spec, scale, seed))
                                    r.put(key, value);  // what made it
                                // A record its own check refuses is an error of the table.
                                if (const std::string problem = check(r); !problem.empty())
                                    throw std::logic_error("its record: " + problem);
                                return r;
                            },
                            check});
        }
    return jobs;
}

std::string run_name(const std::string& job_name) { return job_name.substr(0, job_name.find('/')); }

std::vector<int> seed_list(int first, int count) {
    std::vector<int> s;
    for (int i = 0; i < count; i++)
        s.push_back(first + i);
    return s;
}

std::vector<int64_t> ThreeWay::never_train() const {
    std::vector<int64_t> v = validation;
    v.insert(v.end(), test.begin(), test.end());
    v.insert(v.end(), tuned.begin(), tuned.end());
    return v;
}

ThreeWay three_way_split() {
    const Split s = split_numbers();  // chapter 7's: a fixed shuffle, its held-out numbers first
    ThreeWay t;
    t.tuned = s.heldout;
    t.validation.assign(s.train.begin(), s.train.begin() + HELDOUT);
    t.test.assign(s.train.begin() + HELDOUT, s.train.begin() + 2 * HELDOUT);
    t.train.assign(s.train.begin() + 2 * HELDOUT, s.train.end());
    return t;
}

const char* kind_name(Kind k) {
    switch (k) {
        case Kind::encoder_self:
            return "인코더 셀프";
        case Kind::decoder_self:
            return "디코더 셀프";
        case Kind::cross:
            return "인코더-디코더";
    }
    return "?";
}

double exact_match(const EncoderDecoder& m, const std::vector<int64_t>& numbers) {
    return score(numbers, greedy_decode_batch(m, numbers)).percent(numbers.size());
}

Tensor first_step_logits(EncoderDecoder& m, const Batch& b, FirstStep what) {
    NoGradGuard no_grad;
    Tensor memory = m.encode(b.src, {b.B, b.S}, b.src_mask);  // (B, S, d)
    set_sublayer(m, what);
    Tensor logits = m.decode(std::vector<int64_t>(size_t(b.B), BOS), {b.B, 1}, memory, b.src_mask);
    set_sublayer(m, FirstStep::intact);
    return logits;  // (B, 1, V)
}

LengthSplit length_split() {
    const std::vector<bool> tuned = tuned_numbers();
    std::vector<int64_t> below(9999);
    std::iota(below.begin(), below.end(), 1);
    torch_rng::Generator g(2018);  // fixed: every run is scored on the same numbers
    shuffle_numbers(below, g);
    LengthSplit s;
    for (int64_t n : below)  // the first HELDOUT numbers not tuned on are held out
        (s.heldout.size() < size_t(HELDOUT) && !tuned[size_t(n)] ? s.heldout : s.train)
            .push_back(n);
    while (s.five_digit.size() < size_t(HELDOUT)) {
        const int64_t n = 10000 + int64_t(g.random64() % 90000);
        if (!tuned[size_t(n)]) s.five_digit.push_back(n);
    }
    return s;
}

SourceLengthSplit source_length_split() {
    namespace kn = korean_numbers;
    const ThreeWay t = three_way_split();
    std::vector<bool> never(size_t(kn::MAX_VALUE) + 1, false), tuned = tuned_numbers();
    for (int64_t n : t.never_train())
        never[size_t(n)] = true;
    SourceLengthSplit out;
    std::vector<int64_t> longer;
    for (int64_t n = 1; n <= kn::MAX_VALUE; n++) {
        const bool is_long = int(source_ids(n).size()) > POS2_MAX_SYLLABLES;
        if (is_long || never[size_t(n)]) out.excluded.push_back(n);
        if (is_long && !tuned[size_t(n)])
            longer.push_back(n);
        else if (!is_long && !never[size_t(n)])
            out.train.push_back(n);
    }
    for (int64_t n : t.test)
        if (int(source_ids(n).size()) <= POS2_MAX_SYLLABLES) out.in_range_test.push_back(n);
    torch_rng::Generator g(2019);  // fixed: every run is scored on the same numbers
    shuffle_numbers(longer, g);
    out.long_test.assign(longer.begin(), longer.begin() + HELDOUT);
    return out;
}

std::vector<int64_t> neighbour_targets(const std::vector<int64_t>& x) {
    std::vector<int64_t> y(x.size());
    const size_t L = NB_LENGTH;
    for (size_t b = 0; b < x.size() / L; b++)
        for (size_t i = 0; i < L; i++)  // the class of x_{i-1} - x_{i+1}: 0..18 for -9..9
            y[b * L + i] = x[b * L + (i + L - 1) % L] - x[b * L + (i + 1) % L] + 9;
    return y;
}

namespace {

// 1000 different sequences from generator `seed`, none of whose codes is in `avoid`.
std::vector<int64_t> neighbour_set(uint64_t seed, std::set<int64_t> avoid) {
    torch_rng::Generator g(seed);
    std::vector<int64_t> x;
    while (x.size() < size_t(HELDOUT) * NB_LENGTH) {
        std::vector<int64_t> seq(NB_LENGTH);
        for (auto& d : seq)
            d = int64_t(g.random64() % 10);
        if (!avoid.insert(sequence_code(seq.data())).second) continue;
        x.insert(x.end(), seq.begin(), seq.end());
    }
    return x;
}

}  // namespace

std::vector<int64_t> neighbour_test_set() { return neighbour_set(2020, {}); }  // fixed

std::vector<int64_t> neighbour_validation_set() {
    return neighbour_set(2021, sequence_codes(neighbour_test_set()));  // fixed
}

Pruning prune(EncoderDecoder& m, const std::vector<int64_t>& validation,
              const std::vector<int64_t>& test) {
    const int n = head_count(m), per_kind = n / 3;
    Pruning p;
    set_head_mask(m, std::vector<float>(size_t(n), 1.0f));
    p.full_validation = exact_match(m, validation);
    p.full_test = exact_match(m, test);
    for (int i = 0; i < n; i++) {  // each head alone, on validation only: it sets the order
        std::vector<float> keep(size_t(n), 1.0f);
        keep[size_t(i)] = 0.0f;
        set_head_mask(m, keep);
        p.alone_validation.push_back(exact_match(m, validation));
    }
    for (int k = 0; k < 3; k++) {
        std::vector<float> keep(size_t(n), 1.0f);
        std::fill(keep.begin() + k * per_kind, keep.begin() + (k + 1) * per_kind, 0.0f);
        set_head_mask(m, keep);
        p.kind_removed_test.push_back(exact_match(m, test));  // encoder self, decoder self, cross
    }
    p.order.resize(size_t(n));
    std::iota(p.order.begin(), p.order.end(), 0);
    std::stable_sort(p.order.begin(), p.order.end(), [&](int a, int b) {
        return p.alone_validation[size_t(a)] > p.alone_validation[size_t(b)];
    });
    const int third = third_of_heads(n);
    std::vector<float> keep(size_t(n), 1.0f);
    bool within = true;
    for (int i = 0; i < n; i++) {
        keep[size_t(p.order[size_t(i)])] = 0.0f;
        set_head_mask(m, keep);
        p.curve_validation.push_back(exact_match(m, validation));
        p.curve_test.push_back(exact_match(m, test));
        within = within && p.curve_validation.back() > p.full_validation - 1;
        if (within) p.can_go = i + 1;
        if (i + 1 == third) p.third_test = p.curve_test.back();
    }
    set_head_mask(m, std::vector<float>(size_t(n), 1.0f));
    return p;
}

}  // namespace ablations
