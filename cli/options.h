// Numeric command-line options, declared in one place. Every count, seed, size and number list
// memra takes is added through these helpers with its valid range, so a value that is negative,
// zero where a count must be positive, or too large for the arithmetic behind it is a usage error
// (exit 2) naming the option, before anything runs. Ranges are carried by a validator named
// "memra.range MIN MAX" (MAX "machine" for --max-memory): `memra generate options` lists every
// numeric option with its range from the CLI definition, and shell.cli_numbers tries each one.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace memra::cli {

// The largest token count, capacity, step count or width any option accepts. Sums of a few such
// counts stay far from int64 overflow; whether a count fits in memory is the memory plan's call.
inline constexpr int64_t kMaxCount = int64_t{1} << 40;

// An integer option in [min, max] (decimal digits only). `value` keeps its initial value when the
// option is absent, so a default outside the range (e.g. 0 = "not set") is never a user's value.
CLI::Option* add_count(CLI::App* app, const std::string& names, int64_t& value, const std::string& description,
                       int64_t min, int64_t max = kMaxCount);
CLI::Option* add_count(CLI::App* app, const std::string& names, uint32_t& value, const std::string& description,
                       int64_t min, int64_t max);
// A comma-separated list of integers in [min, max] (e.g. --widths 1,64), kept as text.
CLI::Option* add_count_list(CLI::App* app, const std::string& names, std::string& value, const std::string& description,
                            int64_t min, int64_t max = kMaxCount);
// --max-memory SIZE (bytes, or with K/M/G/T suffix, binary): the memory plan's limit. 0 stays "the
// default share of this machine's memory" (engine/memory_plan.h); env MEMRA_MAX_MEMORY.
CLI::Option* add_max_memory(CLI::App* app, uint64_t& bytes);

// A numeric option as `memra generate options` lists it.
struct NumericOption {
  std::string command;  // "memra prefill"
  std::string name;     // "--capacity"
  std::string kind;     // "count", "list" or "size"
  std::string min, max; // decimal; max may be "machine"
};
// Every option of the tree that carries a memra.range validator; `untyped` receives options whose
// CLI11 type is a number but that were not declared through these helpers (a test fails on them).
std::vector<NumericOption> numeric_options(CLI::App& root, std::vector<std::string>* untyped);

// Parses "123", "64K", "1.5G", "2GiB" into bytes; false when malformed or above 2^63.
bool parse_size(const std::string& text, uint64_t* bytes);

}  // namespace memra::cli
