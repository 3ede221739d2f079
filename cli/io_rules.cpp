// Output rules for a command: expand folders, then core/file_io.h check_outputs.
#include "io_rules.h"

#include "model/model.h"
#include "parity/dump.h"

namespace memra::cli {

void check_command_io(const CommandIo& io) {
  std::vector<NamedPath> inputs = io.inputs;
  for (const auto& dir : io.model_dirs)
    for (const auto& f : model_input_files(dir)) inputs.push_back({"model file", f});
  for (const auto& dir : io.dump_dirs)
    for (const auto& f : dump_input_files(dir)) inputs.push_back({"dump file", f});
  check_outputs(inputs, io.outputs);
}

}  // namespace memra::cli
