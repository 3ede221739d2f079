// Numeric option declarations and validators (see options.h).
#include "options.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "core/file_io.h"
#include "engine/memory_plan.h"

namespace memra::cli {

namespace {

constexpr const char* kRangeTag = "memra.range";

// "2^40" for powers of two ≥ 2^10, else the decimal.
std::string bound_text(int64_t v) {
  if (v >= 1024 && (v & (v - 1)) == 0) return "2^" + std::to_string(__builtin_ctzll(static_cast<uint64_t>(v)));
  return std::to_string(v);
}

std::string range_text(int64_t min, int64_t max) { return "[" + bound_text(min) + ", " + bound_text(max) + "]"; }

// Checks one decimal integer in [min, max]; returns an error text ("" when valid). The input is
// echoed escaped and cut, since it comes from the user's command line.
std::string check_integer(const std::string& text, int64_t min, int64_t max) {
  std::string shown;
  for (size_t i = 0; i < text.size() && i < 40; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      shown += buf;
    } else {
      shown.push_back(static_cast<char>(c));
    }
  }
  if (text.size() > 40) shown += "...";
  const std::string want = "give an integer in " + range_text(min, max);
  if (text.empty()) return "empty value; " + want;
  size_t i = 0;
  const bool negative = text[0] == '-';
  if (negative || text[0] == '+') i = 1;
  if (i == text.size()) return "'" + shown + "' is not a number; " + want;
  uint64_t v = 0;
  bool overflow = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c < '0' || c > '9') return "'" + shown + "' is not a decimal integer; " + want;
    if (v > (std::numeric_limits<uint64_t>::max() - 9) / 10) overflow = true;
    else v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (negative && (v > 0 || overflow)) return shown + " is negative; " + want;
  if (overflow || v > static_cast<uint64_t>(max)) return shown + " is too large; " + want;
  if (static_cast<int64_t>(v) < min) return shown + " is too small; " + want;
  return "";
}

CLI::Validator range_validator(int64_t min, int64_t max) {
  // No description: the range is in the option's text already (help, man pages).
  return CLI::Validator([min, max](std::string& s) { return check_integer(s, min, max); }, "",
                        std::string(kRangeTag) + " count " + std::to_string(min) + " " + std::to_string(max));
}

template <typename T>
CLI::Option* add_count_impl(CLI::App* app, const std::string& names, T& value, const std::string& description,
                            int64_t min, int64_t max) {
  return app->add_option(names, value, description + "; N in " + range_text(min, max))
      ->type_name("N")
      ->check(range_validator(min, max));
}

}  // namespace

CLI::Option* add_count(CLI::App* app, const std::string& names, int64_t& value, const std::string& description,
                       int64_t min, int64_t max) {
  return add_count_impl(app, names, value, description, min, max);
}

CLI::Option* add_count(CLI::App* app, const std::string& names, uint32_t& value, const std::string& description,
                       int64_t min, int64_t max) {
  max = std::min<int64_t>(max, std::numeric_limits<uint32_t>::max());
  return add_count_impl(app, names, value, description, min, max);
}

CLI::Option* add_count_list(CLI::App* app, const std::string& names, std::string& value, const std::string& description,
                            int64_t min, int64_t max) {
  CLI::Validator v(
      [min, max](std::string& s) -> std::string {
        size_t start = 0;
        for (;;) {
          const size_t comma = s.find(',', start);
          const std::string item = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
          std::string err = check_integer(item, min, max);
          if (!err.empty()) return "list item " + err;
          if (comma == std::string::npos) return "";
          start = comma + 1;
        }
      },
      "", std::string(kRangeTag) + " list " + std::to_string(min) + " " + std::to_string(max));
  return app->add_option(names, value, description + "; each in " + range_text(min, max))->type_name("N,...")->check(v);
}

bool parse_size(const std::string& text, uint64_t* bytes) {
  size_t i = 0;
  while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
  const std::string number = text.substr(0, i);
  std::string unit = text.substr(i);
  if (number.empty() || number.front() == '.' || number.find('.') != number.rfind('.')) return false;
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.size() >= 2 && unit.compare(unit.size() - 2, 2, "IB") == 0) unit.erase(unit.size() - 2);
  else if (unit.size() >= 2 && unit.back() == 'B') unit.pop_back();
  double scale = 1;
  if (unit.empty() || unit == "B") scale = 1;
  else if (unit == "K") scale = 1024.0;
  else if (unit == "M") scale = 1024.0 * 1024;
  else if (unit == "G") scale = 1024.0 * 1024 * 1024;
  else if (unit == "T") scale = 1024.0 * 1024 * 1024 * 1024;
  else return false;
  if (number.find('.') == std::string::npos && scale == 1) {  // exact integers stay exact
    if (number.size() > 19) return false;
    const unsigned long long v = std::stoull(number);
    if (v > (uint64_t{1} << 63)) return false;
    *bytes = v;
    return true;
  }
  if (number.size() > 24) return false;
  const double v = std::stod(number) * scale;
  if (!(v >= 0) || v > 9.2e18) return false;
  *bytes = static_cast<uint64_t>(std::llround(v));
  return true;
}

CLI::Option* add_max_memory(CLI::App* app, uint64_t& bytes) {
  static constexpr uint64_t min = uint64_t{1} << 20;
  CLI::Validator v(
      [](std::string& s) -> std::string {
        uint64_t b = 0;
        if (!parse_size(s, &b) || b == 0)
          return "'" + s.substr(0, 40) + "' is not a size; give bytes or a size like 512M, 8G (binary units)";
        const uint64_t machine = machine_memory_bytes();
        if (b < min) return s + " is below 1 MiB";
        if (b > machine)
          return s + " is more than this machine has (" + format_bytes(machine) + ", memory + swap, within its cgroup limit)";
        s = std::to_string(b);  // CLI11 converts the plain number
        return "";
      },
      "", std::string(kRangeTag) + " size " + std::to_string(min) + " machine");
  return app->add_option("--max-memory", bytes,
                         "Refuse a run whose memory plan (model, decode states, scratch, logits) needs more than SIZE "
                         "(e.g. 8G; default: 3/4 of this machine's memory)")
      ->type_name("SIZE")
      ->envname("MEMRA_MAX_MEMORY")
      ->transform(v)
      ->each([](const std::string& plain) { set_stdin_limit(std::stoull(plain)); });  // stdin is buffered within it
}

std::vector<NumericOption> numeric_options(CLI::App& root, std::vector<std::string>* untyped) {
  std::vector<NumericOption> out;
  std::vector<std::pair<CLI::App*, std::string>> stack{{&root, "memra"}};
  while (!stack.empty()) {
    auto [app, words] = stack.back();
    stack.pop_back();
    for (CLI::Option* opt : app->get_options()) {
      std::string tag;
      for (int i = 0;; ++i) {
        CLI::Validator* v = nullptr;
        try {
          v = opt->get_validator(i);
        } catch (const CLI::OptionNotFound&) {
          break;
        }
        if (v->get_name().rfind(kRangeTag, 0) == 0) tag = v->get_name();
      }
      const std::string name = !opt->get_lnames().empty() ? "--" + opt->get_lnames().front()
                               : !opt->get_snames().empty() ? "-" + opt->get_snames().front()
                                                            : opt->get_name(true);
      if (tag.empty()) {
        const std::string type = opt->get_type_name();
        const std::string base = type.substr(0, type.find(':'));
        if (untyped && opt->get_items_expected_max() > 0 &&
            (base == "INT" || base == "UINT" || base == "FLOAT" || base == "NUMBER"))
          untyped->push_back(words + " " + name);
        continue;
      }
      std::istringstream in(tag);
      std::string t;
      NumericOption n;
      n.command = words;
      n.name = name;
      in >> t >> n.kind >> n.min >> n.max;
      out.push_back(n);
    }
    auto subs = app->get_subcommands([](CLI::App*) { return true; });
    for (auto it = subs.rbegin(); it != subs.rend(); ++it) stack.push_back({*it, words + " " + (*it)->get_name()});
  }
  return out;
}

}  // namespace memra::cli
