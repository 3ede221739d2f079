// Memory plans (see memory_plan.h). The decode-state formula mirrors make_decode_state(); a test
// (decode_state_test) checks that the two agree for every layer kind.
#include "engine/memory_plan.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "core/checked.h"
#include "core/machine.h"
#include "core/error.h"
#include "engine/decode_state.h"

namespace memra {

namespace {

constexpr uint64_t kF = sizeof(float);

uint64_t u(int64_t v) { return static_cast<uint64_t>(std::max<int64_t>(v, 0)); }

}  // namespace

uint64_t decode_state_bytes(const ModelConfig& c, int64_t capacity) {
  const std::string what = "a decode state of capacity " + std::to_string(capacity);
  if (capacity < 1) throw Error(what + " cannot exist (capacity must be at least 1)");
  const int64_t d = c.head_dim, di = c.index_head_dim;
  uint64_t floats = 0;
  auto add = [&](int64_t n) { floats = add_checked(floats, u(n), what); };
  // [m, c·w] pend kv + score, CSA: [m, w] prev kv + score, [capacity/m, w] entries.
  auto compressor = [&](int64_t m, int64_t cc, int64_t w) {
    add(mul_checked(2, product_checked({m, cc, w}, what), what));
    if (cc == 2) add(mul_checked(2, mul_checked(m, w, what), what));
    add(mul_checked(capacity / m, w, what));
  };
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    add(mul_checked(c.sliding_window, d, what));  // [W, d]
    switch (c.layer_types.at(static_cast<size_t>(l))) {
      case LayerKind::kCSA:
        compressor(c.csa_rate, 2, d);
        compressor(c.csa_rate, 2, di);
        break;
      case LayerKind::kHCA: compressor(c.hca_rate, 1, d); break;
      case LayerKind::kSliding: break;
    }
  }
  add(c.vocab_size);  // last_logits
  return mul_checked(floats, kF, what);
}

uint64_t live_state_bytes(const ModelConfig& c, int64_t position) {
  // Live classes at `position` are at most the state's buffers: bounded by decode_state_bytes, and
  // computed from the class table so that they match what a snapshot holds.
  const std::string what = "the live classes of a state at position " + std::to_string(position);
  uint64_t bytes = 0;
  for (const ClassLayout& cls : trunk_layout(c, position)) bytes = add_checked(bytes, cls.nbytes(), what);
  return bytes;
}

uint64_t forward_scratch_bytes(const ModelConfig& c, int64_t chunk, int64_t capacity, bool chunk_logits) {
  const std::string what = "the scratch of a forward call of " + std::to_string(chunk) + " tokens";
  const int64_t D = c.hidden_size, n = c.hc_mult, d = c.head_dim, di = c.index_head_dim;
  const int64_t Hd = c.num_attention_heads * d, K = c.index_topk, V = c.vocab_size;
  // Per token of the call (floats), all live at once inside one layer: the hc streams [n, D], the
  // layer input/output and mHC mix, q / o [H·d], q low-rank, kv, both compressors' kv and scores,
  // indexer queries and weights, top-k ids (int64) and traces, grouped output, MoE logits, head row.
  int64_t per_token = 0;
  for (int64_t part : {n * D, 4 * D, n + n * n, c.q_lora_rank, 2 * Hd, d, 4 * d, 4 * di, c.index_n_heads * di,
                       c.index_n_heads, 4 * K, c.o_groups * c.o_lora_rank, c.n_routed_experts,
                       2 * c.num_experts_per_tok + 2})
    per_token = add_checked(per_token, part, what);
  if (chunk_logits) per_token = add_checked(per_token, V, what);  // the call's own [T, V] logits
  uint64_t bytes = mul_checked(mul_checked(u(chunk), u(per_token), what), kF, what);
  // Per query, reused: indexer scores and their sort order over every closed CSA entry, and the
  // attention keys (pointers) and logits over the window and every closed HCA entry.
  const int64_t csa_entries = capacity / std::max<int64_t>(c.csa_rate, 1);
  const int64_t hca_entries = capacity / std::max<int64_t>(c.hca_rate, 1);
  const int64_t keys = add_checked(c.sliding_window, std::max(hca_entries, K), what);
  bytes = add_checked(bytes, mul_checked(u(csa_entries), 12, what), what);
  bytes = add_checked(bytes, mul_checked(u(keys), 12, what), what);
  return add_checked(bytes, mul_checked(u(V), 2 * kF, what), what);  // last row, last_logits copy
}

uint64_t model_resident_bytes(const Model& model, Device device) {
  const std::string what = "the resident weights";
  uint64_t bytes = 0;
  for (const auto& w : model.tensors()) {
    bytes = add_checked(bytes, mul_checked(static_cast<uint64_t>(w.ids.size()), sizeof(int64_t), what), what);
    if (device != Device::kCpu || w.role != TensorRole::kFloat) continue;
    // Model::f32 returns the mapped bytes of an aligned f32 tensor and decodes every other one once.
    const bool mapped = w.view.format == WeightFormat::kF32 && reinterpret_cast<uintptr_t>(w.bytes) % alignof(float) == 0;
    if (!mapped)
      bytes = add_checked(bytes, mul_checked(static_cast<uint64_t>(product_checked({w.view.rows, w.view.cols}, what)), kF, what), what);
  }
  return bytes;
}

MemoryPlan plan_memory(const ModelConfig& c, const RunShape& s, uint64_t model_bytes) {
  const std::string what = "the memory plan";
  MemoryPlan p;
  p.model_bytes = model_bytes;
  // A device backend's states and forward scratch live in device memory; the host keeps the rest.
  const bool host = s.device == Device::kCpu;
  p.state_bytes = host ? mul_checked(u(s.states), decode_state_bytes(c, s.capacity), what) : 0;
  if (s.live_copies > 0) {
    const int64_t at = s.live_position < 0 ? s.capacity : std::min(s.live_position, s.capacity);
    p.copies_bytes = mul_checked(u(s.live_copies), live_state_bytes(c, at), what);
  }
  if (host) p.scratch_bytes = forward_scratch_bytes(c, std::max<int64_t>(s.chunk, 1), s.capacity, s.chunk_logits);
  // Kept logits [rows, V] and one serialized copy of them (npy/safetensors text is built whole).
  p.logits_bytes = mul_checked(mul_checked(u(s.logits_rows), u(c.vocab_size), what), 2 * kF, what);
  p.other_bytes = s.other_bytes;
  for (uint64_t part : {p.model_bytes, p.state_bytes, p.copies_bytes, p.scratch_bytes, p.logits_bytes, p.other_bytes})
    p.total = add_checked(p.total, part, what);
  return p;
}

std::string MemoryPlan::text() const {
  std::string t = format_bytes(total) + " (";
  bool first = true;
  auto part = [&](const char* name, uint64_t b) {
    if (b == 0) return;
    t += (first ? "" : ", ") + std::string(name) + " " + format_bytes(b);
    first = false;
  };
  part("model", model_bytes);
  part("decode state", state_bytes);
  part("state copies", copies_bytes);
  part("forward scratch", scratch_bytes);
  part("logits", logits_bytes);
  part("other", other_bytes);
  return t + ")";
}

uint64_t machine_memory_bytes() { return std::min(physical_memory_bytes() + swap_bytes(), cgroup_memory_limit()); }

uint64_t default_memory_limit() { return default_memory_share(); }

uint64_t effective_memory_limit(uint64_t requested) { return requested ? requested : default_memory_limit(); }

void require_fits(const MemoryPlan& plan, uint64_t limit, const std::string& what) {
  if (plan.total <= limit) return;
  throw Error(what + " needs " + plan.text() + ", more than the " + format_bytes(limit) + " memory limit",
              "lower --capacity, --chunk or the token count, or raise --max-memory (default: 3/4 of this machine's memory)");
}

int64_t largest_fitting(const ModelConfig& config, uint64_t model_bytes, uint64_t limit, int64_t lo, int64_t hi,
                        const std::function<RunShape(int64_t)>& shape) {
  auto fits = [&](int64_t n) {
    try {
      return plan_memory(config, shape(n), model_bytes).total <= limit;
    } catch (const Error&) {
      return false;  // overflow: certainly does not fit
    }
  };
  if (lo > hi || !fits(lo)) return lo - 1;
  while (lo < hi) {  // invariant: fits(lo)
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (fits(mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

std::string format_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  int i = 0;
  while (v >= 1024 && i < 6) {
    v /= 1024;
    ++i;
  }
  char buf[32];
  if (i == 0) std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else std::snprintf(buf, sizeof buf, "%.1f %s", v, units[i]);
  return buf;
}

}  // namespace memra
