// Chapter 8's experiments (see experiments.h): each job trains with chapter 7's make_model and
// train(), then measures what its claim needs.
#include "chapters/8-ablations/experiments.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <tuple>

#include "chapters/1-self-attention/attention.h"
#include "common/optim.h"
#include "common/random.h"

namespace ablations {

using namespace translate;

int scaled_steps(int steps, double scale) { return std::max(1, int(std::lround(steps * scale))); }

void set_score_scaling(EncoderDecoder& m, bool on) {
    for (auto& b : m.encoder)
        b->attn.scale_scores = on;
    for (auto& b : m.decoder) {
        b->self_attn.scale_scores = on;
        b->cross_attn.scale_scores = on;
    }
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

int head_count(const EncoderDecoder& m) { return 3 * int(m.encoder.size()) * m.n_heads; }

void set_head_mask(EncoderDecoder& m, const std::vector<float>& keep) {
    const int L = int(m.encoder.size()), h = m.n_heads;
    if (int(keep.size()) != 3 * L * h)
        throw std::invalid_argument("set_head_mask: " + std::to_string(keep.size()) +
                                    " entries for " + std::to_string(3 * L * h) + " heads");
    auto part = [&](int kind, int layer) {  // (h) for one attention
        return Tensor::from(std::vector<float>(keep.begin() + (kind * L + layer) * h,
                                               keep.begin() + (kind * L + layer + 1) * h),
                            {h});
    };
    for (int l = 0; l < L; l++) {
        m.encoder[l]->attn.head_mask = part(0, l);
        m.decoder[l]->self_attn.head_mask = part(1, l);
        m.decoder[l]->cross_attn.head_mask = part(2, l);
    }
}

double exact_match(const EncoderDecoder& m, const std::vector<int64_t>& numbers) {
    return score(numbers, greedy_decode_batch(m, numbers)).percent(numbers.size());
}

Tensor first_step_logits(const EncoderDecoder& m, const Batch& b, FirstStep what) {
    NoGradGuard no_grad;
    Tensor memory = m.encode(b.src, {b.B, b.S}, b.src_mask);  // (B, S, d)
    const std::vector<int64_t> start(size_t(b.B), BOS);       // every sentence: <시작> only
    Tensor x = m.embed(m.tgt_embed, m.tgt_pos.get(), start, {b.B, 1});  // (B, 1, d)
    const Tensor self_mask = causal_mask(1);
    auto batch_mean = [](const Tensor& o) { return o * 0.0f + mean(o, 0, true); };
    for (const auto& blk : m.decoder) {
        auto self = [&](const Tensor& in) {
            Tensor o = blk->self_attn(in, self_mask);
            return what == FirstStep::self_mean ? batch_mean(o) : o;
        };
        auto cross = [&](const Tensor& in) {
            // Q = 0 (the projection has no bias) makes every score 0: equal weights.
            if (what == FirstStep::cross_uniform)
                return blk->cross_attn(in * 0.0f, memory, b.src_mask);
            Tensor o = blk->cross_attn(in, memory, b.src_mask);
            return what == FirstStep::cross_mean ? batch_mean(o) : o;
        };
        if (blk->placement == LnPlacement::PreLN) {  // DecoderBlock's forward, sublayer by sublayer
            x = x + self(blk->ln1(x));
            x = x + cross(blk->ln2(x));
            x = x + blk->ff(blk->ln3(x));
        } else {
            x = blk->ln1(x + self(x));
            x = blk->ln2(x + cross(x));
            x = blk->ln3(x + blk->ff(x));
        }
    }
    return m.head(m.dec_norm ? (*m.dec_norm)(x) : x);
}

LengthSplit length_split() {
    std::vector<int64_t> below(9999);
    std::iota(below.begin(), below.end(), 1);
    torch_rng::Generator g(2018);  // fixed: every run is scored on the same numbers
    for (size_t i = below.size(); i-- > 1;)
        std::swap(below[i], below[g.random64() % (i + 1)]);
    LengthSplit s;
    s.heldout.assign(below.begin(), below.begin() + HELDOUT);
    s.train.assign(below.begin() + HELDOUT, below.end());
    for (int i = 0; i < HELDOUT; i++)
        s.five_digit.push_back(10000 + int64_t(g.random64() % 90000));
    return s;
}

namespace {

// The mean over real (non-padding) queries of the largest weight in each row of the first
// encoder block's self-attention: how peaked the attention is.
double mean_max_weight(const EncoderDecoder& m, const std::vector<int64_t>& numbers) {
    NoGradGuard no_grad;
    Batch b = make_batch(numbers, false);
    m.encode(b.src, {b.B, b.S}, b.src_mask);
    const Tensor& A = m.encoder[0]->attn.last_attn;  // (B, h, S, S)
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

TrainConfig budget(int steps, int warmup, double scale, int seed, Progress& p) {
    TrainConfig tc;
    tc.steps = scaled_steps(steps, scale);
    tc.warmup = scaled_steps(warmup, scale);
    tc.seed = seed;
    tc.report_every = 10;
    tc.report = [&p, total = tc.steps](int step, double, double, double) { p(step, total); };
    return tc;
}

// Trains, then records the loss curve, where it diverged (0: it did not), and exact match.
Record train_record(EncoderDecoder& m, const TrainConfig& tc, const std::vector<int64_t>& numbers,
                    const std::vector<int64_t>& heldout) {
    TrainResult r = train(m, numbers, heldout, tc);
    Record rec;
    rec.put("loss", r.losses);
    rec.put("diverged_at", r.diverged_at);
    rec.put("seconds", r.seconds);
    rec.put("exact", r.diverged_at ? 0.0 : exact_match(m, heldout));
    return rec;
}

// §3: every head removed alone, whole attentions removed, then heads removed greedily (the
// least harmful first, by the single-head scores) while the score is re-measured each time.
void prune(EncoderDecoder& m, const std::vector<int64_t>& heldout, Record& rec) {
    const int n = head_count(m), per_kind = n / 3;
    std::vector<double> alone;
    for (int i = 0; i < n; i++) {
        std::vector<float> keep(size_t(n), 1.0f);
        keep[size_t(i)] = 0.0f;
        set_head_mask(m, keep);
        alone.push_back(exact_match(m, heldout));
    }
    rec.put("head_exact", alone);
    std::vector<double> whole;
    for (int k = 0; k < 3; k++) {
        std::vector<float> keep(size_t(n), 1.0f);
        std::fill(keep.begin() + k * per_kind, keep.begin() + (k + 1) * per_kind, 0.0f);
        set_head_mask(m, keep);
        whole.push_back(exact_match(m, heldout));
    }
    rec.put("kind_removed_exact", whole);  // encoder self, decoder self, cross
    std::vector<int> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return alone[size_t(a)] > alone[size_t(b)]; });
    std::vector<float> keep(size_t(n), 1.0f);
    std::vector<double> curve, removed;
    for (int i : order) {
        keep[size_t(i)] = 0.0f;
        set_head_mask(m, keep);
        curve.push_back(exact_match(m, heldout));
        removed.push_back(i);
    }
    rec.put("greedy_order", removed);
    rec.put("greedy_exact", curve);
    set_head_mask(m, std::vector<float>(size_t(n), 1.0f));
}

// §5: the first generation step on the held-out sentences, intact and with a sublayer replaced.
void first_step(const EncoderDecoder& m, const std::vector<int64_t>& heldout, Record& rec) {
    Batch b = make_batch(heldout, false);
    const int64_t V = TGT_VOCAB;
    auto probs = [&](const Tensor& logits) { return softmax(reshape(logits, {b.B, V}), -1); };
    Tensor intact = probs(first_step_logits(m, b, FirstStep::intact));
    // The self-attention weights of that step: one query, one key (<시작> itself).
    double w_min = 2, w_max = -1;
    for (const auto& blk : m.decoder)
        for (int64_t i = 0; i < blk->self_attn.last_attn.numel(); i++) {
            w_min = std::min(w_min, double(blk->self_attn.last_attn.data()[i]));
            w_max = std::max(w_max, double(blk->self_attn.last_attn.data()[i]));
        }
    rec.put("self_weight_min", w_min);
    rec.put("self_weight_max", w_max);
    {  // the same step through EncoderDecoder::decode, as generation runs it
        NoGradGuard no_grad;
        Tensor memory = m.encode(b.src, {b.B, b.S}, b.src_mask);
        Tensor ref = m.decode(std::vector<int64_t>(size_t(b.B), BOS), {b.B, 1}, memory, b.src_mask);
        rec.put("decode_max_diff", max(abs(probs(ref) - intact)).item());
    }
    std::vector<double> first_acc, moved;
    for (FirstStep w : {FirstStep::intact, FirstStep::self_mean, FirstStep::cross_mean,
                        FirstStep::cross_uniform}) {
        Tensor p = w == FirstStep::intact ? intact : probs(first_step_logits(m, b, w));
        int right = 0;
        double tv = 0;
        for (int64_t i = 0; i < b.B; i++) {
            const float* row = p.data() + i * V;
            const float* ref = intact.data() + i * V;
            right += std::max_element(row, row + V) - row == target_ids(heldout[size_t(i)])[0];
            for (int64_t j = 0; j < V; j++)
                tv += 0.5 * std::fabs(double(row[j]) - ref[j]);
        }
        first_acc.push_back(100.0 * right / double(b.B));
        moved.push_back(tv / double(b.B));
    }
    rec.put("first_token_exact", first_acc);  // intact, self mean, cross mean, cross uniform
    rec.put("first_step_tv", moved);
}

Job base_job(double scale, int seed) {
    return {"base", 75 * scale + 20, [scale, seed](Progress& p) {
                const Split split = split_numbers();
                ModelConfig mc;
                mc.seed = seed;
                auto m = make_model(mc);
                const double pmax = mean_max_weight(*m, {3201, 15000, 99999, 7, 40408, 120});
                Record rec =
                    train_record(*m, budget(2000, 200, scale, seed, p), split.train, split.heldout);
                rec.put("init_max_weight", pmax);
                prune(*m, split.heldout, rec);
                first_step(*m, split.heldout, rec);
                return rec;
            }};
}

Job variant_job(const std::string& name, double cost, ModelConfig mc, bool scaled, int steps,
                int warmup, double scale, int seed) {
    mc.seed = seed;
    return {name, cost * scale, [=](Progress& p) {
                const Split split = split_numbers();
                auto m = make_model(mc);
                set_score_scaling(*m, scaled);
                const double pmax = mean_max_weight(*m, {3201, 15000, 99999, 7, 40408, 120});
                Record rec = train_record(*m, budget(steps, warmup, scale, seed, p), split.train,
                                          split.heldout);
                rec.put("init_max_weight", pmax);
                return rec;
            }};
}

Job positions_job(const std::string& name, Positions pos, double scale, int seed) {
    return {name, 25 * scale, [=](Progress& p) {
                const LengthSplit s = length_split();
                ModelConfig mc;
                mc.positions = pos;
                mc.seed = seed;
                auto m = make_model(mc);
                std::vector<float> src0, tgt0;  // the learned tables before training
                if (m->src_pos) {
                    src0 = m->src_pos->weight.to_vector();
                    tgt0 = m->tgt_pos->weight.to_vector();
                }
                TrainConfig tc = budget(1000, 100, scale, seed, p);
                tc.max_digits = 4;
                Record rec = train_record(*m, tc, s.train, s.heldout);
                rec.put("exact_five",
                        rec.value("diverged_at") ? 0.0 : exact_match(*m, s.five_digit));
                if (m->src_pos) {  // how far each row moved: rows no sentence reached stay put
                    for (auto [table, before, key] :
                         {std::tuple{m->src_pos.get(), &src0, "src_row_change"},
                          std::tuple{m->tgt_pos.get(), &tgt0, "tgt_row_change"}}) {
                        const int64_t d = table->weight.size(1);
                        std::vector<double> change;
                        for (int64_t r = 0; r < table->weight.size(0); r++) {
                            double s2 = 0;
                            for (int64_t c = 0; c < d; c++) {
                                const double diff =
                                    table->weight.data()[r * d + c] - (*before)[size_t(r * d + c)];
                                s2 += diff * diff;
                            }
                            change.push_back(std::sqrt(s2));
                        }
                        rec.put(key, change);
                    }
                }
                return rec;
            }};
}

Job warmup_job(const std::string& name, LnPlacement placement, bool warm, double scale, int seed) {
    return {name, 25 * scale, [=](Progress& p) {
                const Split split = split_numbers();
                ModelConfig mc;
                mc.layers = 6, mc.d_model = 32, mc.heads = 4, mc.placement = placement;
                mc.seed = seed;
                auto m = make_model(mc);
                TrainConfig tc = budget(500, 100, scale, seed, p);
                const double peak = optim::noam_lr(tc.warmup, mc.d_model, tc.warmup, tc.lr);
                if (!warm)  // the same peak from step 1, then the same decay after the warm-up
                    tc.schedule = [=](int step) {
                        return step <= tc.warmup
                                   ? peak
                                   : optim::noam_lr(step, mc.d_model, tc.warmup, tc.lr);
                    };
                Record rec = train_record(*m, tc, split.train, split.heldout);
                rec.put("peak_lr", peak);
                return rec;
            }};
}

}  // namespace

std::vector<Job> all_jobs(double scale, int seed) {
    ModelConfig one_head;
    one_head.heads = 1;
    ModelConfig wide;  // one head of d_k = 256
    wide.layers = 1, wide.d_model = 256, wide.heads = 1;
    return {base_job(scale, seed),
            variant_job("heads-1", 45, one_head, true, 2000, 200, scale, seed),
            variant_job("unscaled-16", 50, ModelConfig{}, false, 2000, 200, scale, seed),
            variant_job("scaled-256", 35, wide, true, 400, 40, scale, seed),
            variant_job("unscaled-256", 35, wide, false, 400, 40, scale, seed),
            positions_job("pos-sin", Positions::sinusoidal, scale, seed),
            positions_job("pos-learned", Positions::learned, scale, seed),
            warmup_job("warm-post", LnPlacement::PostLN, true, scale, seed),
            warmup_job("nowarm-post", LnPlacement::PostLN, false, scale, seed),
            warmup_job("warm-pre", LnPlacement::PreLN, true, scale, seed),
            warmup_job("nowarm-pre", LnPlacement::PreLN, false, scale, seed)};
}

}  // namespace ablations
