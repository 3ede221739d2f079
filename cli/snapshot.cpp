// memra snapshot: inspect a state file (classes with dtype, shape, hash), verify it, compare two
// states class by class, write or check a state hash manifest.
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "command.h"
#include "core/error.h"
#include "core/file_io.h"
#include "format/json_guard.h"
#include "io_rules.h"
#include "options.h"
#include "state/state_diff.h"
#include "state/state_file.h"
#include "state/state_manifest.h"

namespace memra::cli {

namespace {

struct SnapshotOptions {
  std::string state;
  bool json = false;
  bool verify = false;
  std::string diff;            // OTHER state file
  std::string write_manifest;  // FILE or -
  std::string check;           // MANIFEST
  uint64_t max_memory = 0;     // bounds what is buffered from stdin
  std::string key;             // --key: check the keyed tag
};

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string value_text(float v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

uint64_t payload_bytes(const StateFile& f) {
  uint64_t n = 0;
  for (const auto& c : f.classes()) n += c.nbytes;
  return n;
}

// Classes with NaN/Inf values (verified states only: values are not read before their hash holds).
nlohmann::json nonfinite_json(const StateFile& f) {
  nlohmann::json out = nlohmann::json::array();
  if (!f.payload_verified()) return out;
  for (const auto& c : nonfinite_classes(f)) out.push_back({{"class", c.name}, {"nan", c.nan}, {"inf", c.inf}, {"first", c.first}});
  return out;
}

nlohmann::json state_json(const StateFile& f) {
  nlohmann::json classes = nlohmann::json::array();
  for (const auto& c : f.classes())
    classes.push_back({{"name", c.name}, {"dtype", dtype_name(c.dtype)}, {"shape", c.shape}, {"bytes", c.nbytes},
                       {"xxh3", c.hash.hex()}});
  nlohmann::json metadata = nlohmann::json::object();
  for (const auto& [k, v] : f.metadata())
    if (k.rfind("hash.", 0) != 0) metadata[printable(k)] = printable(v);
  return {{"path", f.path()},
          {"format", kStateFormatName},
          {"format_version", f.version()},
          {"model_fingerprint", f.model_fingerprint()},
          {"precision_class", f.precision_class()},
          {"position", f.position()},
          {"capacity", f.capacity()},
          {"payload_bytes", payload_bytes(f)},
          {"file_bytes", f.file_bytes()},
          {"state_xxh3", f.state_hash().hex()},
          {"verified", f.payload_verified()},
          {"nonfinite", nonfinite_json(f)},
          {"keyed_tag", f.has_auth_tag()},
          {"metadata", metadata},
          {"classes", classes}};
}

void print_listing(const StateFile& f, bool key_checked, std::ostream& out) {
  size_t width = 0;
  for (const auto& c : f.classes()) width = std::max(width, c.name.size());
  out << "state        " << f.path() << "\n";
  out << "format       " << kStateFormatName << " " << f.version() << " (" << printable(f.metadata().at("writer")) << ")\n";
  out << "model        " << f.model_fingerprint() << "\n";
  out << "precision    " << printable(f.precision_class()) << "\n";
  out << "position     " << f.position() << "\n";
  out << "capacity     " << f.capacity() << "\n";
  out << "classes      " << f.classes().size() << " (" << payload_bytes(f) << " bytes)\n";
  out << "state hash   xxh3-128 " << f.state_hash().hex() << (f.payload_verified() ? " (verified)" : " (stored; --verify recomputes)")
      << "\n";
  out << "keyed tag    " << (!f.has_auth_tag() ? "none (integrity only: XXH3 catches accidents, not forgery)"
                             : key_checked     ? "blake2b, verified with --key"
                                               : "blake2b, not checked (--key FILE checks it)")
      << "\n";
  for (const auto& c : f.classes()) {
    std::string name = c.name;
    name.resize(width, ' ');
    std::string shape = shape_text(c.shape);
    shape.resize(std::max<size_t>(shape.size(), 12), ' ');
    out << "  " << name << "  " << dtype_name(c.dtype) << "  " << shape << "  " << c.hash.hex() << "\n";
  }
}

void print_diff(const StateDiff& d, const std::string& a, const std::string& b, std::ostream& out) {
  for (const auto& s : d.identity) out << "differs  " << s << "\n";
  for (const auto& s : d.notes) out << "note     " << s << "\n";
  for (const auto& c : d.classes) {
    out << "differs  " << c.name << ": ";
    if (c.kind == "only_in_a") out << "only in " << a << " " << shape_text(c.shape_a);
    else if (c.kind == "only_in_b") out << "only in " << b << " " << shape_text(c.shape_b);
    else if (c.kind == "shape") out << "shape " << shape_text(c.shape_a) << " vs " << shape_text(c.shape_b);
    else if (c.kind == "dtype") out << "dtype differs";
    else if (c.first_index.empty()) out << "first differing byte " << c.first_flat << " (" << c.differing << " bytes differ)";
    else {
      out << "first at element " << c.first_flat << " " << shape_text(c.first_index) << ": " << value_text(c.value_a)
          << " vs " << value_text(c.value_b) << " ("
          << (c.ulps_known ? std::to_string(c.ulps) + " ulp" : std::string("nan")) << "); " << c.differing
          << " elements differ, max " << c.max_ulps << " ulp";
    }
    out << "\n";
  }
  out << (d.identical() ? "identical" : "different") << ": " << d.identical_classes << " classes identical, "
      << d.classes.size() << " differ\n";
}

int run_snapshot(const SnapshotOptions& opt, Context& ctx) {
  const bool manifest_to_stdout = opt.write_manifest == "-";
  if (manifest_to_stdout && (opt.json || !opt.diff.empty() || !opt.check.empty()))
    throw Error("--write-manifest - cannot share stdout with --json, --diff or --check", "write the manifest to a file");
  if (!opt.diff.empty() && !opt.check.empty()) throw Error("--diff and --check are separate runs", "run them one at a time");

  // A malformed manifest fails before the state is read.
  std::vector<ManifestEntry> entries;
  if (!opt.check.empty()) entries = parse_manifest(read_text_file(opt.check, 64u << 20), opt.check);

  const bool full = opt.verify || !opt.diff.empty() || !opt.check.empty() || !opt.write_manifest.empty();
  const std::optional<AuthKey> key = load_key(opt.key);
  StateFile f = StateFile::open(opt.state, full ? StateCheck::kFull : StateCheck::kHeader);
  check_state_key(f, key, ctx);
  if (f.payload_verified()) report_nonfinite(f);

  if (!opt.write_manifest.empty()) {
    write_file_atomic(opt.write_manifest, state_manifest_text(f));
    if (!manifest_to_stdout) note(ctx, "wrote state hash manifest " + opt.write_manifest);
  }

  if (!opt.diff.empty()) {
    StateFile other = StateFile::open(opt.diff, StateCheck::kFull);
    StateDiff d = diff_states(f, other);
    if (opt.json) {
      nlohmann::json j = d.to_json();
      j["a"] = f.path();
      j["b"] = other.path();
      std::cout << j.dump(2) << "\n";
    } else {
      print_diff(d, f.path(), other.path(), std::cout);
    }
    return d.identical() ? kExitOk : kExitNegative;
  }

  if (!opt.check.empty()) {
    ManifestCheck c = check_state_manifest(f, entries);
    if (opt.json) {
      nlohmann::json j = c.to_json();
      j["manifest"] = opt.check;
      j["state"] = f.path();
      std::cout << j.dump(2) << "\n";
    } else {
      std::cout << c.text("state", !ctx.quiet);
    }
    return c.passed() ? kExitOk : kExitNegative;
  }

  if (manifest_to_stdout) return kExitOk;
  if (opt.json) {
    std::cout << state_json(f).dump(2) << "\n";
  } else if (opt.verify) {
    std::cout << "verify OK: " << f.path() << ", " << f.classes().size() << " classes, position " << f.position()
              << ", state xxh3-128 " << f.state_hash().hex() << "\n";
  } else {
    print_listing(f, key.has_value(), std::cout);
  }
  return kExitOk;
}

}  // namespace

void setup_snapshot(CLI::App& app, Context& ctx) {
  auto opt = std::make_shared<SnapshotOptions>();
  auto* sub = app.add_subcommand("snapshot", "Inspect, verify, compare or hash-manifest a state file");
  sub->footer(
      "A state file is a safetensors file of the decode state's live cache classes (f32) whose\n"
      "__metadata__ carries format memra.state 1.x, the model fingerprint, position, capacity,\n"
      "precision class, an XXH3-128 per class, a whole-state hash and a metadata hash\n"
      "(docs/state-format.md). Listing checks the structure and the metadata hash; --verify,\n"
      "--diff, --check and --write-manifest also recompute every class hash first.\n"
      "Manifest lines: `xxh3-128  <32 hex>  <class>`, last `xxh3-128  <hex>  state`.\n"
      "Exit codes: 0 listed / verified / identical / every name OK; 1 a corrupt, truncated or\n"
      "modified state (naming the class or field), --diff found a difference, or --check found any\n"
      "MISMATCH, MISSING or UNLISTED; 2 usage error, unreadable file, malformed manifest, or a state\n"
      "format major version this memra does not read.");
  sub->add_option("STATE", opt->state, "State file (- = stdin)")->required();
  sub->add_flag("--json", opt->json, "Print JSON (listing, --diff or --check result)");
  sub->add_flag("--verify", opt->verify, "Recompute every class hash and the state hash (exit 1 naming a mismatch)");
  sub->add_option("--diff", opt->diff, "Compare with OTHER class by class: first differing element, values, ULP distance");
  sub->add_option("--write-manifest", opt->write_manifest, "Write the state hash manifest to FILE (- = stdout)");
  sub->add_option("--check", opt->check, "Check the state against a hash manifest");
  add_max_memory(sub, opt->max_memory);
  add_key_option(sub, opt->key, "Refuse STATE unless its keyed tag matches this key");
  sub->callback([opt, &ctx] {
    ctx.run = [opt, &ctx] {
      check_command_io({{{"STATE", opt->state}, {"--diff", opt->diff}, {"--check", opt->check}, {"--key", opt->key}},
                        {},
                        {},
                        {{"--write-manifest", opt->write_manifest}}});
      return run_snapshot(*opt, ctx);
    };
  });
}

}  // namespace memra::cli
