// memra load: reads a checkpoint folder, checks every tensor against config.json, prints a summary
// (or --json), writes or checks a gguf-hash-style manifest of per-tensor XXH3-128 hashes.
#include <unistd.h>

#include <iostream>
#include <memory>
#include <sstream>

#include "command.h"
#include "core/error.h"
#include "core/file_io.h"
#include "format/json_guard.h"
#include "model/hash_manifest.h"
#include "model/model.h"

namespace memra::cli {

namespace {

struct LoadOptions {
  std::string model_dir;
  bool json = false;
  std::string check;           // manifest to verify
  std::string write_manifest;  // FILE or -
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
  o << "parameters   " << group_digits(param_count(m)) << " in " << m.tensors().size() << " tensors\n";
  o << "precision    " << m.weight_precision() << "\n";
  o << "fingerprint  xxh3-128 " << m.fingerprint().hex() << "\n";
  return o.str();
}

nlohmann::json model_json(const Model& m) {
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& w : m.tensors())
    tensors.push_back({{"name", w.name},
                       {"stored_name", printable(w.stored_name)},
                       {"file", printable(w.file)},
                       {"dtype", dtype_name(w.dtype)},
                       {"shape", w.shape},
                       {"xxh3", w.hash.hex()}});
  return {{"model_dir", m.dir()},
          {"source_form", m.config().source_form},
          {"geometry", m.config().geometry_json()},
          {"tensors", tensors},
          {"parameters", param_count(m)},
          {"weight_precision", m.weight_precision()},
          {"fingerprint", m.fingerprint().hex()}};
}

int run_load(const LoadOptions& opt, Context& ctx) {
  if (opt.write_manifest == "-" && (opt.json || !opt.check.empty()))
    throw Error("--write-manifest - cannot share stdout with --json or --check", "write the manifest to a file");

  // Read the manifest first: a malformed one fails before the (possibly long) load.
  std::vector<ManifestEntry> entries;
  if (!opt.check.empty()) entries = parse_manifest(read_text_file(opt.check, 64u << 20), opt.check);

  LoadProgress progress;
  const bool show = !ctx.quiet && isatty(2);
  if (show) {
    progress.on_tensor = [](size_t done, size_t total) {
      if (done == total || done % 16 == 0) {
        std::cerr << "\rmemra: loading tensors " << done << "/" << total << std::flush;
        if (done == total) std::cerr << "\n";
      }
    };
  }
  Model model = Model::load(opt.model_dir, progress);

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
      std::cout << c.text("model", !ctx.quiet);
    }
  }

  if (opt.json) {
    nlohmann::json out = model_json(model);
    if (!check_json.is_null()) out["check"] = check_json;
    std::cout << out.dump(2) << "\n";
  } else if (opt.check.empty() && opt.write_manifest != "-") {
    std::cout << summary(model);
  }
  return code;
}

}  // namespace

void setup_load(CLI::App& app, Context& ctx) {
  auto opt = std::make_shared<LoadOptions>();
  auto* sub = app.add_subcommand("load", "Load and verify a checkpoint folder; print its geometry, hashes, fingerprint");
  sub->footer(
      "Reads MODEL_DIR/config.json (transformers or upstream form) and model.safetensors or\n"
      "model.safetensors.index.json + shards; every tensor's name, dtype and shape is checked against\n"
      "the config.\n"
      "Manifest lines: `xxh3-128  <32 hex>  <canonical tensor name>`, last `xxh3-128  <hex>  model`.\n"
      "--check prints one status per name: OK, MISMATCH (hash differs), MISSING (the manifest names a\n"
      "tensor the model lacks), UNLISTED (a model tensor the manifest lacks), then a PASS/FAIL line.\n"
      "Exit codes: 0 loaded (and, with --check, every name OK); 1 --check found any MISMATCH, MISSING\n"
      "or UNLISTED; 2 usage error, unreadable or invalid checkpoint, or malformed manifest.");
  sub->add_option("MODEL_DIR", opt->model_dir, "Checkpoint folder (config.json + safetensors)")->required();
  sub->add_flag("--json", opt->json, "Print one JSON document: geometry, tensors, fingerprint, weight_precision, model_dir");
  sub->add_option("--check", opt->check, "Verify the model against a hash manifest (see exit codes)");
  sub->add_option("--write-manifest", opt->write_manifest, "Write the hash manifest to FILE (- = stdout)");
  sub->callback([opt, &ctx] { ctx.run = [opt, &ctx] { return run_load(*opt, ctx); }; });
}

}  // namespace memra::cli
