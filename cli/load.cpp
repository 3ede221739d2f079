// memra load: reads a checkpoint folder (one file or tens of shards, memory-mapped), checks every
// tensor and quantisation scale against config.json, reads every stored byte once in parallel to hash
// it (reporting the read speed), prints a summary (or --json), writes or checks a gguf-hash-style
// manifest of per-tensor XXH3-128 hashes (a MISMATCH names the shard it is in).
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "command.h"
#include "core/error.h"
#include "core/file_io.h"
#include "format/json_guard.h"
#include "io_rules.h"
#include "model/hash_manifest.h"
#include "model/model.h"
#include "options.h"
#include "progress.h"

namespace memra::cli {

namespace {

struct LoadOptions {
  std::string model_dir;
  bool json = false;
  std::string check;           // manifest to verify
  std::string write_manifest;  // FILE or -
  int64_t threads = 0;         // 0: hardware threads
};

std::string group_digits(uint64_t v) {
  std::string s = std::to_string(v), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(s[i]);
  }
  return out;
}

uint64_t param_count(const Model& m) {
  uint64_t n = 0;
  for (const auto& w : m.tensors()) {
    uint64_t e = 1;
    for (int64_t d : w.shape) e *= static_cast<uint64_t>(d);
    n += e;
  }
  return n;
}

std::string summary(const Model& m) {
  const ModelConfig& c = m.config();
  std::ostringstream o;
  o << "model        " << m.dir() << " (" << c.source_form << " config)\n";
  o << "layers       " << c.num_hidden_layers << "\n";
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    o << "  " << l << "  " << layer_kind_name(c.layer_types[l]);
    if (c.compress_ratio(l) > 0) o << " (m=" << c.compress_ratio(l) << ")";
    o << ", " << mlp_kind_name(c.mlp_layer_types[l]) << "\n";
  }
  o << "sizes        V=" << c.vocab_size << " D=" << c.hidden_size << " H=" << c.num_attention_heads
    << " d=" << c.head_dim << " r=" << c.qk_rope_head_dim << " q_lora=" << c.q_lora_rank << " G=" << c.o_groups
    << " R=" << c.o_lora_rank << " W=" << c.sliding_window << " hc=" << c.hc_mult << "\n";
  o << "moe          E=" << c.n_routed_experts << " k=" << c.num_experts_per_tok << " I=" << c.moe_intermediate_size
    << " shared=" << c.n_shared_experts << " " << c.scoring_func << " scale=" << c.routed_scaling_factor << "\n";
  o << "indexer      heads=" << c.index_n_heads << " dim=" << c.index_head_dim << " topk=" << c.index_topk << "\n";
  o << "rope         main " << c.rope_main.type << " theta=" << c.rope_main.theta << ", compress " << c.rope_compress.type
    << " theta=" << c.rope_compress.theta;
  if (c.rope_compress.type == "yarn") o << " factor=" << c.rope_compress.factor;
  o << "\n";
  o << "parameters   " << group_digits(param_count(m)) << " in " << m.tensors().size() << " tensors, "
    << m.files().size() << (m.files().size() == 1 ? " file\n" : " shards\n");
  o << "precision    " << m.weight_precision() << "\n";
  std::map<std::string, size_t> formats;
  for (const auto& w : m.tensors())
    if (is_block_format(w.view.format)) ++formats[w.format_label()];
  for (const auto& [label, n] : formats) o << "quantised    " << n << " tensors " << label << "\n";
  if (!m.unused_tensors().empty()) {
    std::map<std::string, size_t> kinds;
    for (const auto& u : m.unused_tensors()) ++kinds[u.kind];
    o << "unused       ";
    bool first = true;
    for (const auto& [kind, n] : kinds) {
      o << (first ? "" : ", ") << n << " " << kind << " tensors";
      first = false;
    }
    o << " (recognised, not used by the main model)\n";
  }
  o << "fingerprint  xxh3-128 " << m.fingerprint().hex() << "\n";
  return o.str();
}

std::string read_text(const HashStats& s) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "read         %.3f GB in %.2f s (%.2f GB/s, %d threads)\n", s.bytes / 1e9, s.seconds,
                s.seconds > 0 ? s.bytes / 1e9 / s.seconds : 0.0, s.threads);
  return buf;
}

nlohmann::json model_json(const Model& m, const HashStats& read) {
  nlohmann::json tensors = nlohmann::json::array();
  for (size_t i = 0; i < m.tensors().size(); ++i) {
    const WeightTensor& w = m.tensors()[i];
    nlohmann::json t = {{"name", w.name},
                        {"stored_name", printable(w.stored_name)},
                        {"file", printable(w.file)},
                        {"dtype", dtype_name(w.dtype)},
                        {"format", w.role == TensorRole::kIndex ? "ids" : weight_format_name(w.view.format)},
                        {"shape", w.shape},
                        {"xxh3", m.hash(i).hex()}};
    if (w.stored_shape != w.shape) t["stored_shape"] = w.stored_shape;
    if (!w.scale_name.empty())
      t["scale"] = {{"stored_name", printable(w.scale_name)},
                    {"file", printable(w.scale_file)},
                    {"dtype", dtype_name(w.scale_dtype)},
                    {"shape", w.scale_shape},
                    {"block", {w.view.block_rows, w.view.block_cols}}};
    tensors.push_back(std::move(t));
  }
  nlohmann::json unused = nlohmann::json::array();
  for (const auto& u : m.unused_tensors())
    unused.push_back({{"name", printable(u.name)},
                      {"file", printable(u.file)},
                      {"dtype", dtype_name(u.dtype)},
                      {"shape", u.shape},
                      {"kind", u.kind}});
  nlohmann::json files = nlohmann::json::array();
  for (const auto& f : m.files()) files.push_back(printable(f));
  return {{"model_dir", m.dir()},
          {"source_form", m.config().source_form},
          {"geometry", m.config().geometry_json()},
          {"quantization", m.config().quantization.to_json()},
          {"files", files},
          {"tensors", tensors},
          {"unused_tensors", unused},
          {"parameters", param_count(m)},
          {"weight_precision", m.weight_precision()},
          {"read", {{"bytes", read.bytes}, {"seconds", read.seconds}, {"threads", read.threads},
                    {"gb_per_s", read.seconds > 0 ? read.bytes / 1e9 / read.seconds : 0.0}}},
          {"fingerprint", m.fingerprint().hex()}};
}

int run_load(const LoadOptions& opt, Context& ctx) {
  if (opt.write_manifest == "-" && (opt.json || !opt.check.empty()))
    throw Error("--write-manifest - cannot share stdout with --json or --check", "write the manifest to a file");

  // Read the manifest first: a malformed one fails before the (possibly long) load.
  std::vector<ManifestEntry> entries;
  if (!opt.check.empty()) entries = parse_manifest(read_text_file(opt.check, 64u << 20), opt.check);

  Model model = [&] {
    Progress shards("opening shards", ctx.quiet);
    LoadProgress progress;
    progress.on_shard = [&](size_t done, size_t total) {
      if (total > 1) shards.update(static_cast<int64_t>(done), static_cast<int64_t>(total));
    };
    return Model::load(opt.model_dir, progress);
  }();
  // Every stored byte is read once, shards in parallel, for the per-tensor hashes and the fingerprint.
  HashStats read;
  {
    Progress bytes("reading", ctx.quiet);
    HashOptions ho;
    ho.threads = static_cast<int>(opt.threads);  // ≤ 1024 (option range)
    ho.on_bytes = [&](uint64_t done, uint64_t total) { bytes.update_bytes(done, total); };
    read = model.hash_all(ho);
  }

  if (!opt.write_manifest.empty()) {
    write_file_atomic(opt.write_manifest, manifest_text(model));
    if (opt.write_manifest != "-") note(ctx, "wrote hash manifest " + opt.write_manifest);
  }

  int code = kExitOk;
  nlohmann::json check_json;
  if (!opt.check.empty()) {
    ManifestCheck c = check_manifest(model, entries);
    if (!c.passed()) code = kExitNegative;
    if (opt.json) {
      check_json = c.to_json();
      check_json["manifest"] = opt.check;
    } else {
      std::cout << read_text(read) << c.text("model", !ctx.quiet);
    }
  }

  if (opt.json) {
    nlohmann::json out = model_json(model, read);
    if (!check_json.is_null()) out["check"] = check_json;
    std::cout << out.dump(2) << "\n";
  } else if (opt.check.empty() && opt.write_manifest != "-") {
    std::cout << summary(model) << read_text(read);
  }
  return code;
}

}  // namespace

void setup_load(CLI::App& app, Context& ctx) {
  auto opt = std::make_shared<LoadOptions>();
  auto* sub = app.add_subcommand("load", "Load and verify a checkpoint folder; print its geometry, hashes, fingerprint");
  sub->footer(
      "Reads MODEL_DIR/config.json (transformers or upstream form) and model.safetensors or\n"
      "model.safetensors.index.json + shards (memory-mapped); every tensor's name, dtype and shape, and\n"
      "every FP8/FP4 weight's scale tensor, is checked against the config. Then every stored byte is read\n"
      "once, shards in parallel, to hash each tensor; the `read` line reports the speed (GB/s).\n"
      "A shard the index names but the folder lacks, or one whose header no longer matches the index, is\n"
      "an error naming the shard.\n"
      "Manifest lines: `xxh3-128  <32 hex>  <canonical tensor name>`, last `xxh3-128  <hex>  model`.\n"
      "--check prints one status per name: OK, MISMATCH (hash differs; names the shard), MISSING (the\n"
      "manifest names a tensor the model lacks), UNLISTED (a model tensor the manifest lacks), one ALTERED\n"
      "line per shard holding a MISMATCH, then a PASS/FAIL line.\n"
      "Exit codes: 0 loaded (and, with --check, every name OK); 1 --check found any MISMATCH, MISSING\n"
      "or UNLISTED; 2 usage error, unreadable or invalid checkpoint, or malformed manifest.");
  sub->add_option("MODEL_DIR", opt->model_dir, "Checkpoint folder (config.json + safetensors)")->required();
  sub->add_flag("--json", opt->json, "Print one JSON document: geometry, tensors, fingerprint, weight_precision, model_dir");
  sub->add_option("--check", opt->check, "Verify the model against a hash manifest (see exit codes)");
  sub->add_option("--write-manifest", opt->write_manifest, "Write the hash manifest to FILE (- = stdout)");
  add_count(sub, "--threads", opt->threads, "Threads reading the shards (default: all hardware threads)", 1, 1024);
  sub->callback([opt, &ctx] {
    ctx.run = [opt, &ctx] {
      check_command_io({{{"--check", opt->check}}, {opt->model_dir}, {}, {{"--write-manifest", opt->write_manifest}}});
      return run_load(*opt, ctx);
    };
  });
}

}  // namespace memra::cli
