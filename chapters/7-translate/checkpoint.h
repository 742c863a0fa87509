// Chapter 7's weights file: the model's hyper-parameters, its parameters by state_dict name and
// the loss history, in common/program/serialize's format. Loading checks the file against the task
// and against the parameters it declares before a model is built, so a corrupt or foreign file is
// refused with one line naming it, not met with an out-of-memory error.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "chapters/7-translate/train.h"

namespace translate {

void save_model(const std::string& path, const EncoderDecoder& model, const ModelConfig& config,
                const std::vector<double>& losses);

struct Loaded {
    ModelConfig config;
    std::unique_ptr<EncoderDecoder> model;
    std::vector<double> losses;  // the training run's, for the figure
};
// Throws std::runtime_error("<path>: <what is wrong>").
Loaded load_model(const std::string& path);

// Parameters of the model a config describes, counted without building it.
int64_t parameter_count(const ModelConfig& c);

}  // namespace translate
