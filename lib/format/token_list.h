// Token lists on the command line: decimal ids separated by whitespace or commas in a text file
// (or stdin `-`), or a 1-D int32/int64 .npy (chosen by the .npy magic, not the extension).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace memra {

std::vector<int32_t> read_token_list(const std::string& path);          // throws Error
std::vector<int32_t> parse_token_text(const std::string& text, const std::string& what);  // throws Error

// Refuses (Error, exit 2) a logits path that is neither `-` (stdout, .npy bytes), *.npy nor
// *.safetensors, so a typo such as a.txt never receives NPY bytes silently. Call it before the run.
void check_logits_path(const std::string& path);
// Writes logits [rows, V] as .npy, or safetensors (tensor "logits") when path ends in .safetensors.
void write_logits(const std::string& path, const std::vector<float>& logits, int64_t rows, int64_t vocab);

}  // namespace memra
