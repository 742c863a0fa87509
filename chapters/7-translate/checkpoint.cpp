// Chapter 7's weights file (see checkpoint.h).
#include "chapters/7-translate/checkpoint.h"

#include <stdexcept>

#include "common/program/serialize.h"

namespace translate {

namespace {

constexpr const char* HISTORY = "history.loss";

// A hyper-parameter within [lo, hi], checked as the stored 64-bit value (2^32 + 2 is not 2).
int checked(const serialize::Checkpoint& ck, const char* name, int64_t lo, int64_t hi) {
    const int64_t v = ck.get(name);
    if (v < lo || v > hi)
        throw std::runtime_error(ck.path + ": " + name + " = " + std::to_string(v) +
                                 " is outside " + std::to_string(lo) + ".." + std::to_string(hi) +
                                 "; the file is corrupt or not from this program");
    return int(v);
}

}  // namespace

int64_t parameter_count(const ModelConfig& c) {
    const int64_t d = c.d_model, L = c.layers;
    const int64_t ln = 2 * d, ff = 8 * d * d + 5 * d;             // LayerNorm; d -> 4d -> d
    const int64_t encoder = 4 * d * d + ff + 2 * ln;              // self-attention, FFN, 2 LN
    const int64_t decoder = 4 * d * d + 4 * d * d + ff + 3 * ln;  // self, cross, FFN, 3 LN
    const int64_t embeddings = (SRC_VOCAB + TGT_VOCAB) * d;
    const int64_t head = d * TGT_VOCAB + TGT_VOCAB;
    const int64_t final_norms = c.placement == LnPlacement::PreLN ? 2 * ln : 0;
    const int64_t tables = c.positions == Positions::learned ? 2 * LEARNED_POSITIONS * d : 0;
    return L * (encoder + decoder) + embeddings + head + final_norms + tables;
}

void save_model(const std::string& path, const EncoderDecoder& model, const ModelConfig& c,
                const std::vector<double>& losses) {
    serialize::HParams hp = {{"layers", c.layers},
                             {"d_model", c.d_model},
                             {"n_heads", c.heads},
                             {"pre_ln", c.placement == LnPlacement::PreLN},
                             {"learned_positions", c.positions == Positions::learned},
                             {"src_vocab", SRC_VOCAB},
                             {"tgt_vocab", TGT_VOCAB}};
    if (c.positions == Positions::none) hp.push_back({"no_positions", 1});
    serialize::Named tensors = model.named_parameters();
    std::vector<float> lv(losses.begin(), losses.end());
    tensors.push_back({HISTORY, Tensor::from(lv, {int64_t(lv.size())})});
    serialize::save(path, hp, tensors);
}

Loaded load_model(const std::string& path) {
    serialize::Checkpoint ck = serialize::load(path);
    Loaded out;
    ModelConfig& c = out.config;
    c.layers = checked(ck, "layers", 1, 24);
    c.d_model = checked(ck, "d_model", 1, 4096);
    c.heads = checked(ck, "n_heads", 1, c.d_model);
    if (c.d_model % c.heads != 0)
        throw std::runtime_error(path + ": d_model " + std::to_string(c.d_model) +
                                 " is not divisible by n_heads " + std::to_string(c.heads));
    c.placement = checked(ck, "pre_ln", 0, 1) ? LnPlacement::PreLN : LnPlacement::PostLN;
    bool learned = false, none = false;  // optional entries: absent means sinusoidal positions
    for (const auto& [name, v] : ck.hparams) {
        if (name == "learned_positions") learned = checked(ck, "learned_positions", 0, 1);
        if (name == "no_positions") none = checked(ck, "no_positions", 0, 1);
    }
    if (learned && none)
        throw std::runtime_error(path + ": learned_positions and no_positions are both set");
    c.positions = learned ? Positions::learned : none ? Positions::none : Positions::sinusoidal;
    if (ck.get("src_vocab") != SRC_VOCAB || ck.get("tgt_vocab") != TGT_VOCAB)
        throw std::runtime_error(path + ": its vocabulary sizes differ from this task's (" +
                                 std::to_string(SRC_VOCAB) + " and " + std::to_string(TGT_VOCAB) +
                                 ")");
    // The declared shape must account for exactly the values the file holds: a model is only
    // built once its size is known to be what was read.
    serialize::Named weights;
    int64_t stored = 0;
    for (auto& nt : ck.tensors)
        if (nt.first == HISTORY) {
            out.losses.assign(nt.second.data(), nt.second.data() + nt.second.numel());
            // A cross-entropy is never negative (the figure draws it on a log axis).
            for (double v : out.losses)
                if (v < 0)
                    throw std::runtime_error(path + ": " + HISTORY + " holds a negative loss (" +
                                             std::to_string(v) + "); the file is corrupt");
        } else {
            stored += nt.second.numel();
            weights.push_back(nt);
        }
    if (stored != parameter_count(c))
        throw std::runtime_error(path + ": declares " + std::to_string(c.layers) +
                                 " layers at d_model " + std::to_string(c.d_model) + " (" +
                                 std::to_string(parameter_count(c)) + " parameters) but holds " +
                                 std::to_string(stored) + " values; the file is corrupt");
    ck.tensors = weights;
    out.model = new_model(c);
    serialize::copy_into(ck, out.model->named_parameters(), path);
    return out;
}

}  // namespace translate
