// memra gate: the correctness gates as composable commands. Each prints one line
// `[name] PASS key=value …` (or FAIL/REFUSED with the first evidence), `--json` prints a report
// (manifests/report.schema.json), `--report FILE.html` writes a self-contained page.
// Exit: 0 all PASS, 1 any FAIL or REFUSED, 2 usage/runtime error.
#include <filesystem>
#include <iostream>

#include "backend_option.h"
#include "bundled_model.h"
#include "command.h"
#include "core/error.h"
#include "engine/engine.h"
#include "format/token_list.h"
#include "gate/artifact_gates.h"
#include "gate/drafter_gates.h"
#include "gate/html_report.h"
#include "gate/fused_moe_gate.h"
#include "gate/trunk_gates.h"
#include "io_rules.h"
#include "model/model.h"
#include "options.h"
#include "run_plan.h"
#include "prompt_input.h"

namespace memra::cli {

struct GateCommon {
  bool json = false;
  std::string report;
  BackendChoice backend;       // runs every trunk gate (and the chunked side of semantics)
  std::string mono_backend;    // semantics: the monolithic side (default: the fast twin of --backend)
};

struct GateOptions {
  GateCommon common;
  std::string kind;  // which gate
  std::string model_dir, dump_dir, a, b, expect;
  std::string tokens_file;
  PromptInput prompt;
  TrunkGateOptions trunk;
  FusedMoeOptions moe;
  std::string widths = "1,64";
  std::string realization_a = "f32", realization_b = "f32";
  int64_t depth = 0;
  std::string drafter_dir;      // drafter gates (and `all` with --drafter)
  std::string harvest;
  DrafterGateOptions drafter;
};

// Chunk semantics compares two realizations: by default the fast twin of the gate's backend
// (cpu → cpu-fast, cuda → cuda-fast) runs the monolithic prefill.
static std::string default_mono(const std::string& chunk) {
  if (chunk == "cpu") return "cpu-fast";
  if (chunk == "cuda") return "cuda-fast";
  return chunk;
}

static std::vector<int64_t> parse_widths(const std::string& text) {
  std::vector<int64_t> out;  // each item was range-checked when the option was parsed
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    out.push_back(std::stoll(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (out.size() < 2) throw Error("--widths needs at least two widths, e.g. 1,64");
  return out;
}

static int emit(const GateOptions& opt, const std::string& name, const std::vector<GateResult>& gates) {
  if (opt.common.json) {
    std::cout << (gates.size() == 1 && name != "all" ? gates[0].to_json() : gates_to_json(name, gates)).dump(2) << "\n";
  } else {
    for (const auto& g : gates) {
      std::cout << g.line() << "\n";
      for (const auto& n : g.notes) std::cout << "  " << n << "\n";
    }
    if (gates.size() > 1) {
      int passed = 0;
      for (const auto& g : gates) passed += g.verdict == Verdict::kPass;
      // Same verdict as the JSON run report (gates_to_json).
      std::cout << "[gate-" << name << "] " << gates_to_json(name, gates)["result"].get<std::string>()
                << " gates=" << gates.size() << " passed=" << passed << "\n";
    }
  }
  if (!opt.common.report.empty()) write_html_report(opt.common.report, "memra gate " + name, gates);
  return gates_exit_code(gates);
}

static int run_gate(GateOptions opt, const Context& ctx) {
  const std::string& k = opt.kind;
  if (k == "equal") return emit(opt, k, {gate_equal(opt.a, opt.b)});
  if (k == "hash") return emit(opt, k, {gate_hash(opt.a, opt.expect)});
  if (k == "band") {
    Realization ra, rb;
    if (!opt.model_dir.empty()) {
      const ModelConfig cfg = ModelConfig::load(opt.model_dir);
      const int64_t ctx_len = cfg.max_position_embeddings > 0 ? std::min<int64_t>(cfg.max_position_embeddings, 4096) : 4096;
      ra = realization_for(opt.realization_a, cfg, ctx_len);
      rb = realization_for(opt.realization_b, cfg, ctx_len);
    } else {
      if (opt.depth < 1) throw Error("band needs the depth of one reduction chain", "pass --model DIR (derives it) or --depth N");
      ra = realization_manual(opt.realization_a, unit_roundoff(opt.realization_a), opt.depth);
      rb = realization_manual(opt.realization_b, unit_roundoff(opt.realization_b), opt.depth);
    }
    return emit(opt, k, {gate_band(opt.a, opt.b, ra, rb)});
  }

  if (k == "all" && opt.model_dir.empty()) {
    opt.model_dir = bundled_model_dir();
    note(ctx, "no MODEL given: running on the bundled model " + opt.model_dir);
  }
  Model model = Model::load(opt.model_dir);
  auto backend = make_backend(opt.common.backend, model);
  BackendChoice mono_choice = opt.common.backend;
  mono_choice.name = opt.common.mono_backend.empty() ? default_mono(opt.common.backend.name) : opt.common.mono_backend;
  auto semantics = [&] {
    auto mono = make_backend(mono_choice, model);
    return gate_chunk_semantics(model, *mono, *backend, opt.trunk);
  };
  if (opt.tokens_file.empty()) {
    opt.trunk.tokens = prompt_tokens(opt.prompt, "", opt.model_dir, PromptUse::kStart, false, ctx);
  } else {  // no more than one state over them fits; each gate plans its own run
    const auto one_state = [&](int64_t T) {
      RunShape s;
      s.capacity = s.chunk = T;
      s.device = realization(opt.common.backend.name).device;
      return s;
    };
    opt.trunk.tokens = read_tokens_planned(opt.tokens_file, model, effective_memory_limit(opt.trunk.max_memory),
                                           one_state, kMaxCount, ctx);
  }
  opt.trunk.widths = parse_widths(opt.widths);
  if (k == "restore") return emit(opt, k, {gate_restore_roundtrip(model, *backend, opt.trunk)});
  if (k == "chunk") return emit(opt, k, {gate_chunk_invariance(model, *backend, opt.trunk)});
  if (k == "semantics") return emit(opt, k, {semantics()});
  if (k == "parity") return emit(opt, k, {gate_parity(model, *backend, opt.model_dir, opt.dump_dir)});
  auto fused_moe = [&] {
    auto per_expert = make_backend(opt.common.backend, model, true);
    return gate_fused_moe(model, *backend, *per_expert, opt.trunk, opt.moe);
  };
  if (k == "fused-moe") return emit(opt, k, {fused_moe()});
  std::unique_ptr<DrafterWeights> drafter_weights;
  std::unique_ptr<Drafter> drafter;
  if (!opt.drafter_dir.empty()) {
    drafter_weights = std::make_unique<DrafterWeights>(DrafterWeights::load(opt.drafter_dir, &model));
    drafter = std::make_unique<Drafter>(*drafter_weights, model);
    if (!opt.harvest.empty()) opt.drafter.harvest = parse_harvest(opt.harvest);
  }
  if (k == "speculative") return emit(opt, k, {gate_speculative(model, *backend, *drafter, opt.trunk, opt.drafter)});
  if (k == "drafter-restore") return emit(opt, k, {gate_drafter_restore(model, *backend, *drafter, opt.trunk, opt.drafter)});
  // all: every gate that applies to this model and backend.
  std::vector<GateResult> gates;
  gates.push_back(gate_restore_roundtrip(model, *backend, opt.trunk));
  gates.push_back(gate_chunk_invariance(model, *backend, opt.trunk));
  gates.push_back(semantics());
  std::string dump = opt.dump_dir;
  if (dump.empty() && std::filesystem::exists(std::filesystem::path(opt.model_dir) / "dump" / "manifest.json"))
    dump = (std::filesystem::path(opt.model_dir) / "dump").string();
  if (!dump.empty()) gates.push_back(gate_parity(model, *backend, opt.model_dir, dump));
  else note(ctx, "no dump for " + opt.model_dir + " (MODEL/dump or --dump): the parity gate does not apply");
  // A CUDA backend has two MoE paths; they must agree by bits (the seed's fused-vs-per-expert gate).
  if (backend->realization().device == Device::kCuda && backend->realization().exact) gates.push_back(fused_moe());
  if (drafter && backend->realization().exact) {
    gates.push_back(gate_speculative(model, *backend, *drafter, opt.trunk, opt.drafter));
    gates.push_back(gate_drafter_restore(model, *backend, *drafter, opt.trunk, opt.drafter));
  } else if (drafter) {
    note(ctx, "the drafter gates need an exact realization; " + backend->name() + " is not: they do not apply");
  }
  return emit(opt, k, gates);
}

static void add_common(CLI::App* sub, GateOptions& o) {
  sub->add_flag("--json", o.common.json, "Print the report as JSON (manifests/report.schema.json)");
  sub->add_option("--report", o.common.report, "Write a self-contained HTML page (inline SVG) with the evidence")
      ->type_name("FILE.html");
  add_max_memory(sub, o.trunk.max_memory);
}

static void add_drafter(CLI::App* sub, GateOptions& o, bool required) {
  auto* d = sub->add_option("--drafter", o.drafter_dir,
                            required ? "Drafter folder (or a model folder with its own DSpark drafter)"
                                     : "Drafter folder (or a model folder with its own DSpark drafter): adds the "
                                       "speculative and drafter-restore gates");
  d->check(CLI::ExistingDirectory);
  if (required) d->required();
  add_count(sub, "--block-size", o.drafter.block_size, "Block size (default: the drafter's)", 1, 4096);
  sub->add_option("--harvest", o.harvest, "Harvest convention (default: the drafter's)")->check(CLI::IsMember({"dflash", "dspark"}));
}

static void add_trunk(CLI::App* sub, GateOptions& o, bool model_optional = false) {
  if (model_optional)
    sub->add_option("model", o.model_dir, "Model folder (default: the bundled models/tiny)")->check(CLI::ExistingDirectory);
  else
    sub->add_option("model", o.model_dir, "Model folder")->required()->check(CLI::ExistingDirectory);
  add_backend_options(sub, o.common.backend);
  add_prompt_options(sub, sub->add_option("--tokens", o.tokens_file, "Prompt token ids (text or .npy); default: --prompt-len ids drawn from --seed"), o.prompt);
  add_count(sub, "--prompt-len", o.trunk.prompt, "Prompt length when no --tokens or --prompt are given", 1)->capture_default_str();
  add_count(sub, "--seed", o.trunk.seed, "Seed of the prompt ids", 0, 4294967295)->capture_default_str();
}

// Inputs and outputs of a gate run, for the output rules (--report may not replace an input).
static CommandIo gate_io(const GateOptions& o) {
  CommandIo io;
  io.inputs = {{"--tokens", o.tokens_file}, {"a", o.a}, {"b", o.b}, {"--expect", o.expect}};
  if (!o.model_dir.empty()) {
    io.model_dirs.push_back(o.model_dir);
    io.dump_dirs.push_back((std::filesystem::path(o.model_dir) / "dump").string());
  }
  if (!o.dump_dir.empty()) io.dump_dirs.push_back(o.dump_dir);
  io.outputs = {{"--report", o.common.report}};
  return io;
}

void setup_gate(CLI::App& app, Context& ctx) {
  auto opt = std::make_shared<GateOptions>();
  auto* gate = app.add_subcommand("gate", "Correctness gates: restore round trip, chunk invariance, chunk semantics, parity, artifact checks");
  gate->require_subcommand(1);
  gate->footer("Each gate prints `[name] PASS key=value ...` or FAIL/REFUSED with evidence. Exit status: 0 all PASS, 1 any FAIL or REFUSED, 2 error.");
  auto select = [opt, &ctx](const std::string& kind) {
    return [opt, &ctx, kind] {
      opt->kind = kind;
      ctx.run = [opt, &ctx] {
        check_command_io(gate_io(*opt));
        return run_gate(*opt, ctx);
      };
    };
  };

  auto* all = gate->add_subcommand("all", "Every gate that applies to the model (and its dump): the main job");
  add_trunk(all, *opt, true);
  all->add_option("--dump", opt->dump_dir, "Oracle dump for the parity gate (default: MODEL/dump when present)");
  all->add_option("--mono", opt->common.mono_backend,
                  "Realization of the chunk-semantics monolithic prefill (default: the fast twin of --backend)");
  add_drafter(all, *opt, false);
  add_common(all, *opt);
  all->callback(select("all"));

  auto* spec = gate->add_subcommand(
      "speculative", "Speculative vs plain greedy decoding: identical tokens and state, interleaved timing (median)");
  add_trunk(spec, *opt);
  add_drafter(spec, *opt, true);
  add_count(spec, "--steps", opt->drafter.steps, "Tokens to generate (at least 96)", 96, 1 << 20)->capture_default_str();
  add_count(spec, "--runs", opt->drafter.runs, "Interleaved timing runs", 1, 100)->capture_default_str();
  add_common(spec, *opt);
  spec->callback(select("speculative"));

  auto* drest = gate->add_subcommand(
      "drafter-restore", "Trunk + drafter state through a state file: identical classes, proposals, captures and continuation");
  add_trunk(drest, *opt);
  add_drafter(drest, *opt, true);
  add_count(drest, "--warm", opt->drafter.warm, "Speculative steps before the snapshot", 0, 1 << 20)->capture_default_str();
  add_count(drest, "--continuation", opt->drafter.continuation, "Speculative steps after the restore", 1, 1 << 20)->capture_default_str();
  add_count(drest, "--grow", opt->drafter.grow, "Capacity added on restore", 0, 1 << 20)->capture_default_str();
  add_common(drest, *opt);
  drest->callback(select("drafter-restore"));

  auto* restore = gate->add_subcommand("restore", "Warm a state, snapshot it through a state file, restore into a grown capacity, continue both: bit-equal");
  add_trunk(restore, *opt);
  add_count(restore, "--warm", opt->trunk.warm, "Greedy steps before the snapshot", 0)->capture_default_str();
  add_count(restore, "--continuation", opt->trunk.continuation, "Steps after the restore", 1)->capture_default_str();
  add_count(restore, "--grow", opt->trunk.grow, "Capacity added on restore", 0)->capture_default_str();
  add_common(restore, *opt);
  restore->callback(select("restore"));

  auto* chunk = gate->add_subcommand("chunk", "Bounded-prefill widths give bit-identical logits and cache classes");
  add_trunk(chunk, *opt);
  add_count_list(chunk, "--widths", opt->widths, "Chunk widths to compare (comma separated)", 1)->capture_default_str();
  add_common(chunk, *opt);
  chunk->callback(select("chunk"));

  auto* sem = gate->add_subcommand("semantics", "Monolithic vs chunked prefill: teacher-forced argmax disagreements classified against the band");
  add_trunk(sem, *opt);
  add_count(sem, "--steps", opt->trunk.steps, "Teacher-forced steps", 1)->capture_default_str();
  sem->add_option("--mono", opt->common.mono_backend,
                  "Realization of the monolithic prefill (default: the fast twin of --backend: cpu-fast, cuda-fast)");
  add_common(sem, *opt);
  sem->callback(select("semantics"));

  auto* fm = gate->add_subcommand(
      "fused-moe", "CUDA: the fused MoE kernels against the per-expert path, bit-equal on the exact realization, both timed");
  add_trunk(fm, *opt);
  add_count(fm, "--steps", opt->moe.steps, "Greedy steps after the prefill", 0)->capture_default_str();
  add_count(fm, "--reps", opt->moe.reps, "Timing repetitions per path (median reported)", 1, 1000)->capture_default_str();
  add_common(fm, *opt);
  fm->callback(select("fused-moe"));

  auto* par = gate->add_subcommand("parity", "Manifest-first parity against an oracle dump, as a gate");
  add_trunk(par, *opt);
  par->add_option("dump", opt->dump_dir, "Reference dump folder")->required();
  add_common(par, *opt);
  par->callback(select("parity"));

  auto* eq = gate->add_subcommand("equal", "Two state files (every class) or two logits files: equal by bits");
  eq->add_option("a", opt->a, "First file (- = stdin)")->required();
  eq->add_option("b", opt->b, "Second file")->required();
  add_common(eq, *opt);
  eq->callback(select("equal"));

  auto* band = gate->add_subcommand("band", "Two logits files within the pair band of two realizations (docs/bands.md)");
  band->add_option("a", opt->a, "Reference logits (.npy or .safetensors)")->required();
  band->add_option("b", opt->b, "Candidate logits")->required();
  band->add_option("--model", opt->model_dir, "Model folder: derives the accumulation depth")->check(CLI::ExistingDirectory);
  add_count(band, "--depth", opt->depth, "Depth of one reduction chain when no --model is given", 1);
  band->add_option("--precision-a", opt->realization_a, "What wrote A: a realization (cpu, cpu-fast, cuda, cuda-fast) or f32, bf16, f16")
      ->capture_default_str();
  band->add_option("--precision-b", opt->realization_b, "What wrote B (as --precision-a)")->capture_default_str();
  add_common(band, *opt);
  band->callback(select("band"));

  auto* hash = gate->add_subcommand("hash", "A state file's class hashes against a kept manifest (memra snapshot --write-manifest)");
  hash->add_option("state", opt->a, "State file (- = stdin)")->required();
  hash->add_option("--expect", opt->expect, "Hash manifest")->required();
  add_common(hash, *opt);
  hash->callback(select("hash"));
}

}  // namespace memra::cli
