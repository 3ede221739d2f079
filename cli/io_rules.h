// The output rules (core/file_io.h check_outputs) for one command, with model and dump folders
// expanded into the files that are read from them: `prefill M -o M/model.safetensors` is refused
// before anything runs, like `-o X --logits X` and `snapshot S --write-manifest S`.
#pragma once
#include <string>
#include <vector>

#include "core/file_io.h"

namespace memra::cli {

struct CommandIo {
  std::vector<NamedPath> inputs;
  std::vector<std::string> model_dirs;  // each stands for model_input_files(dir)
  std::vector<std::string> dump_dirs;   // each stands for dump_input_files(dir)
  std::vector<NamedPath> outputs;
};

void check_command_io(const CommandIo& io);  // throws Error

}  // namespace memra::cli
