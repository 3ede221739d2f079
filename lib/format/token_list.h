// Token lists on the command line: decimal ids separated by whitespace or commas in a text file
// (or stdin `-`), or a 1-D int32/int64 .npy (chosen by the .npy magic, not the extension).
// Stdin is parsed as it streams in (never held as text), and every reader stops as soon as the
// list grows past limits.max_tokens, so `yes 1 | memra prefill …` ends with an error instead of
// growing until the machine runs out of memory.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace memra {

class StdinReader;

struct TokenListLimits {
  int64_t max_tokens = int64_t{1} << 31;
  std::string why;   // the reason for max_tokens, for the error ("the most whose run fits in 4 GiB")
  std::string hint;  // how to get past it
  std::function<void(int64_t tokens)> on_progress;  // called every 2^20 tokens read from a stream
};

std::vector<int32_t> read_token_list(const std::string& path, const TokenListLimits& limits = {});  // throws Error
// The two ways read_token_list reads: bytes already in memory (a mapped file), and a stream read
// piece by piece (stdin). Both give the same list, or both fail, for the same bytes.
std::vector<int32_t> parse_token_bytes(const uint8_t* data, size_t size, const std::string& what,
                                       const TokenListLimits& limits = {});
std::vector<int32_t> read_token_stream(StdinReader& in, const std::string& what, const TokenListLimits& limits = {});
std::vector<int32_t> parse_token_text(const std::string& text, const std::string& what,
                                      const TokenListLimits& limits = {});  // throws Error

// Refuses (Error, exit 2) a logits path that is neither `-` (stdout, .npy bytes), *.npy nor
// *.safetensors, so a typo such as a.txt never receives NPY bytes silently. Call it before the run.
void check_logits_path(const std::string& path);
// Writes logits [rows, V] as .npy, or safetensors (tensor "logits") when path ends in .safetensors.
void write_logits(const std::string& path, const std::vector<float>& logits, int64_t rows, int64_t vocab);

}  // namespace memra
