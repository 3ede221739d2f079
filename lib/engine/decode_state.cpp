// Decode state allocation and its packing into named cache classes (the live tensors that snapshots,
// hashes and gates compare). One layout table (trunk_class_specs) drives both directions, so the names,
// shapes and order of cache_classes(), trunk_layout() and decode_state_from_classes()
// cannot drift apart.
#include "engine/decode_state.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/checked.h"
#include "core/shape_text.h"
#include "core/error.h"
#include "engine/faults.h"

namespace memra {

namespace {

using Part = TrunkPart;
using ClassSpec = TrunkClassSpec;

int64_t ratio_of(const ModelConfig& config, int64_t layer) {
  switch (config.layer_types[layer]) {
    case LayerKind::kCSA: return config.csa_rate;
    case LayerKind::kHCA: return config.hca_rate;
    default: return 0;
  }
}

void check_config(const ModelConfig& config) {
  if (config.num_hidden_layers < 0 || static_cast<int64_t>(config.layer_types.size()) != config.num_hidden_layers)
    throw Error("model config has " + std::to_string(config.layer_types.size()) + " layer_types for " +
                std::to_string(config.num_hidden_layers) + " layers");
  if (config.head_dim <= 0 || config.sliding_window <= 0 || config.vocab_size <= 0)
    throw Error("model config has a non-positive head_dim, sliding_window or vocab_size");
  for (int64_t l = 0; l < config.num_hidden_layers; ++l) {
    if (config.layer_types[l] == LayerKind::kSliding) continue;
    if (ratio_of(config, l) <= 0) throw Error("model config has a non-positive compress rate for layer " + std::to_string(l));
    if (config.layer_types[l] == LayerKind::kCSA && config.index_head_dim <= 0)
      throw Error("model config has a non-positive index_head_dim for CSA layer " + std::to_string(l));
  }
}


CompressorState make_compressor(int64_t m, int64_t c, int64_t w, int64_t capacity) {
  CompressorState s;
  s.ratio = m;
  s.overlap = c;
  s.width = w;
  // Sizes are checked: a wrapped product would allocate too little and be written past.
  const size_t pend = elements_checked(product_checked({m, c, w}, "compressor window buffer"), sizeof(float),
                                       "compressor window buffer");
  const size_t entries = elements_checked(mul_checked(capacity / m, w, "decode state compressor entries"),
                                          sizeof(float), "decode state compressor entries");
  s.pend_kv.assign(pend, 0.0f);
  s.pend_score.assign(pend, 0.0f);
  if (c == 2) {
    // Before the first window closes the previous-window rows are kv 0 and score -inf (§3.5).
    s.prev_kv.assign(static_cast<size_t>(m * w), 0.0f);
    s.prev_score.assign(static_cast<size_t>(m * w), -std::numeric_limits<float>::infinity());
  }
  s.entries.assign(entries, 0.0f);
  return s;
}

CompressorState& compressor_of(LayerState& layer, bool indexer) { return indexer ? layer.indexer : layer.compressor; }

// Checks that `state` has the buffers make_decode_state(config, state.capacity) gives it.
void check_state(const ModelConfig& config, const DecodeState& state) {
  if (state.capacity < 1 || state.pos < 0 || state.pos > state.capacity)
    throw Error("decode state has position " + std::to_string(state.pos) + " and capacity " +
                std::to_string(state.capacity) + " (need 0 <= position <= capacity, capacity >= 1)");
  if (static_cast<int64_t>(state.layers.size()) != config.num_hidden_layers)
    throw Error("decode state has " + std::to_string(state.layers.size()) + " layers, the model has " +
                std::to_string(config.num_hidden_layers));
  const int64_t d = config.head_dim;
  for (int64_t l = 0; l < config.num_hidden_layers; ++l) {
    const LayerState& ls = state.layers[l];
    const std::string where = "decode state layer " + std::to_string(l);
    if (static_cast<int64_t>(ls.window.size()) != config.sliding_window * d)
      throw Error(where + " window holds " + std::to_string(ls.window.size()) + " values, expected " +
                  std::to_string(config.sliding_window * d));
    const int64_t m = ratio_of(config, l);
    auto check_cmp = [&](const CompressorState& s, int64_t c, int64_t w, const char* what) {
      const bool ok = s.ratio == m && s.overlap == c && s.width == w &&
                      static_cast<int64_t>(s.pend_kv.size()) == m * c * w &&
                      static_cast<int64_t>(s.pend_score.size()) == m * c * w &&
                      static_cast<int64_t>(s.prev_kv.size()) == (c == 2 ? m * w : 0) &&
                      static_cast<int64_t>(s.prev_score.size()) == (c == 2 ? m * w : 0) &&
                      static_cast<int64_t>(s.entries.size()) >= (state.capacity / m) * w;
      if (!ok) throw Error(where + " " + what + " buffers do not match the model config");
    };
    if (config.layer_types[l] == LayerKind::kCSA) {
      check_cmp(ls.compressor, 2, d, "compressor");
      check_cmp(ls.indexer, 2, config.index_head_dim, "indexer compressor");
    } else if (config.layer_types[l] == LayerKind::kHCA) {
      check_cmp(ls.compressor, 1, d, "compressor");
    }
  }
  if (state.pos > 0 && static_cast<int64_t>(state.last_logits.size()) != config.vocab_size)
    throw Error("decode state at position " + std::to_string(state.pos) + " has " +
                std::to_string(state.last_logits.size()) + " last_logits, expected " + std::to_string(config.vocab_size));
}

// Copies `rows` rows of `width` floats between a class (dense) and a buffer (row stride `stride`,
// starting at `col`). to_class = true reads the buffer.
void copy_rows(float* cls, float* buf, int64_t rows, int64_t width, int64_t stride, int64_t col, bool to_class) {
  for (int64_t r = 0; r < rows; ++r) {
    float* a = cls + r * width;
    float* b = buf + r * stride + col;
    if (to_class) std::memcpy(a, b, sizeof(float) * width);
    else std::memcpy(b, a, sizeof(float) * width);
  }
}

// Moves one class between `values` and the state (to_class = true: state → values).
void transfer(const ModelConfig& config, const ClassSpec& spec, DecodeState& state, float* values, bool to_class) {
  const int64_t pos = state.pos;
  if (spec.layer < 0) {  // last_logits
    if (to_class) std::memcpy(values, state.last_logits.data(), sizeof(float) * config.vocab_size);
    else state.last_logits.assign(values, values + config.vocab_size);
    return;
  }
  LayerState& ls = state.layers[spec.layer];
  const int64_t rows = spec.shape[0], width = spec.shape[1];
  if (spec.part == Part::kWindow) {
    const int64_t W = config.sliding_window;
    for (int64_t i = 0; i < rows; ++i) {  // oldest first: position pos - rows + i lives at slot position % W
      const int64_t slot = (pos - rows + i) % W;
      copy_rows(values + i * width, ls.window.data() + slot * width, 1, width, width, 0, to_class);
    }
    return;
  }
  CompressorState& s = compressor_of(ls, spec.indexer);
  switch (spec.part) {
    case Part::kEntries: copy_rows(values, s.entries.data(), rows, width, width, 0, to_class); break;
    case Part::kPendKv: copy_rows(values, s.pend_kv.data(), rows, width, width, 0, to_class); break;
    case Part::kPendScore: copy_rows(values, s.pend_score.data(), rows, width, width, 0, to_class); break;
    case Part::kPrevKv: copy_rows(values, s.prev_kv.data(), rows, width, width, 0, to_class); break;
    case Part::kPrevScore: copy_rows(values, s.prev_score.data(), rows, width, width, 0, to_class); break;
    default: break;
  }
}

// `classes` are exactly `layout`'s (names, F32, shapes, byte counts); throws Error naming the first
// disagreement.
void check_classes(const std::vector<ClassSpec>& layout, const std::vector<CacheClass>& classes, int64_t pos) {
  for (size_t i = 0; i < std::max(layout.size(), classes.size()); ++i) {
    if (i >= classes.size())
      throw Error("cache class " + layout[i].name + " is missing (a state at position " + std::to_string(pos) + " has it)");
    if (i >= layout.size())
      throw Error("cache class " + classes[i].name + " is not expected at position " + std::to_string(pos));
    const ClassSpec& want = layout[i];
    const CacheClass& have = classes[i];
    if (have.name != want.name)
      throw Error("cache class " + std::to_string(i) + " is " + have.name + ", expected " + want.name);
    if (have.dtype != DType::kF32)
      throw Error("cache class " + have.name + " is " + dtype_name(have.dtype) + ", expected F32");
    if (have.shape != want.shape)
      throw Error("cache class " + have.name + " has shape " + shape_text(have.shape) + ", expected " + shape_text(want.shape));
    if (have.bytes.size() != have.nbytes())
      throw Error("cache class " + have.name + " holds " + std::to_string(have.bytes.size()) + " bytes, its shape needs " +
                  std::to_string(have.nbytes()));
  }
}

std::vector<CacheClass> classes_of(const ModelConfig& config, const std::vector<ClassSpec>& specs, const DecodeState& state) {
  std::vector<CacheClass> out;
  DecodeState& source = const_cast<DecodeState&>(state);  // transfer() only reads it when to_class
  for (const auto& spec : specs) {
    CacheClass c;
    c.name = spec.name;
    c.dtype = DType::kF32;
    c.shape = spec.shape;
    c.bytes.resize(c.nbytes());
    transfer(config, spec, source, c.f32_mut().data(), true);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

// THE table of the trunk's classes (decode_state.h).
std::vector<TrunkClassSpec> trunk_class_specs(const ModelConfig& config, int64_t pos) {
  check_config(config);
  if (pos < 0) throw Error("decode state position " + std::to_string(pos) + " is negative");
  std::vector<ClassSpec> out;
  auto add = [&](std::string name, std::vector<int64_t> shape, int64_t layer, bool indexer, Part part) {
    for (int64_t d : shape)
      if (d == 0) return;  // empty classes are omitted
    out.push_back({std::move(name), std::move(shape), layer, indexer, part});
  };
  const int64_t d = config.head_dim;
  for (int64_t l = 0; l < config.num_hidden_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    add(p + "window", {std::min(pos, config.sliding_window), d}, l, false, Part::kWindow);
    const int64_t m = ratio_of(config, l);
    if (config.layer_types[l] == LayerKind::kCSA) {
      const int64_t di = config.index_head_dim;
      const std::string c = p + "csa.";
      add(c + "cmp", {pos / m, d}, l, false, Part::kEntries);
      add(c + "pend_kv", {pos % m, 2 * d}, l, false, Part::kPendKv);
      add(c + "pend_score", {pos % m, 2 * d}, l, false, Part::kPendScore);
      if (pos >= m) {
        add(c + "prev_kv", {m, d}, l, false, Part::kPrevKv);
        add(c + "prev_score", {m, d}, l, false, Part::kPrevScore);
      }
      add(c + "idxk", {pos / m, di}, l, true, Part::kEntries);
      add(c + "idx_pend_kv", {pos % m, 2 * di}, l, true, Part::kPendKv);
      add(c + "idx_pend_score", {pos % m, 2 * di}, l, true, Part::kPendScore);
      if (pos >= m) {
        add(c + "idx_prev_kv", {m, di}, l, true, Part::kPrevKv);
        add(c + "idx_prev_score", {m, di}, l, true, Part::kPrevScore);
      }
    } else if (config.layer_types[l] == LayerKind::kHCA) {
      const std::string c = p + "hca.";
      add(c + "cmp", {pos / m, d}, l, false, Part::kEntries);
      add(c + "pend_kv", {pos % m, d}, l, false, Part::kPendKv);
      add(c + "pend_score", {pos % m, d}, l, false, Part::kPendScore);
    }
  }
  if (pos > 0) add("last_logits", {config.vocab_size}, -1, false, Part::kLastLogits);
  return out;
}

DecodeState make_decode_state(const ModelConfig& config, int64_t capacity) {
  if (capacity < 1) throw Error("decode state capacity " + std::to_string(capacity) + " is less than 1");
  check_config(config);
  DecodeState state;
  state.capacity = capacity;
  const int64_t d = config.head_dim;
  state.layers.resize(static_cast<size_t>(config.num_hidden_layers));
  for (int64_t l = 0; l < config.num_hidden_layers; ++l) {
    LayerState& ls = state.layers[l];
    ls.window.assign(elements_checked(mul_checked(config.sliding_window, d, "decode state window"), sizeof(float),
                                      "decode state window"),
                     0.0f);  // [W, d]
    const int64_t m = ratio_of(config, l);
    if (config.layer_types[l] == LayerKind::kCSA) {
      ls.compressor = make_compressor(m, 2, d, capacity);
      ls.indexer = make_compressor(m, 2, config.index_head_dim, capacity);
    } else if (config.layer_types[l] == LayerKind::kHCA) {
      ls.compressor = make_compressor(m, 1, d, capacity);
    }
  }
  return state;
}

std::vector<ClassLayout> trunk_layout(const ModelConfig& config, int64_t pos) {
  std::vector<ClassLayout> out;
  for (auto& spec : trunk_class_specs(config, pos)) out.push_back({std::move(spec.name), DType::kF32, std::move(spec.shape)});
  return out;
}

std::vector<CacheClass> cache_classes(const ModelConfig& config, const DecodeState& state) {
  check_state(config, state);
  return classes_of(config, trunk_class_specs(config, state.pos), state);
}

DecodeState decode_state_from_classes(const ModelConfig& config, int64_t pos, int64_t capacity,
                                      const std::vector<CacheClass>& classes) {
  if (pos < 0) throw Error("decode state position " + std::to_string(pos) + " is negative");
  if (capacity < pos)
    throw negative("capacity " + std::to_string(capacity) + " is smaller than the state's position " + std::to_string(pos),
                   "restore with a capacity of at least " + std::to_string(pos));
  const std::vector<ClassSpec> layout = trunk_class_specs(config, pos);
  check_classes(layout, classes, pos);
  DecodeState state = make_decode_state(config, capacity);
  state.pos = pos;
  for (size_t i = 0; i < layout.size(); ++i)
    transfer(config, layout[i], state, reinterpret_cast<float*>(const_cast<uint8_t*>(classes[i].bytes.data())), false);
  return state;
}

void TrunkJournal::start(const ModelConfig& config, int64_t from, int64_t n) {
  check_config(config);
  if (from < 0 || n < 0) throw Error("a forward journal needs a non-negative position and row count");
  const int64_t d = config.head_dim;
  layers.resize(static_cast<size_t>(config.num_hidden_layers));
  auto size = [&](std::vector<float>& v, int64_t width, const char* what) {
    v.resize(elements_checked(mul_checked(n, width, what), sizeof(float), what));
  };
  for (int64_t l = 0; l < config.num_hidden_layers; ++l) {
    LayerJournal& lj = layers[l];
    size(lj.window, d, "forward journal window rows");
    const bool csa = config.layer_types[l] == LayerKind::kCSA, hca = config.layer_types[l] == LayerKind::kHCA;
    const int64_t cw = csa ? 2 * d : hca ? d : 0, icw = csa ? 2 * config.index_head_dim : 0;
    size(lj.compressor.kv, cw, "forward journal compressor rows");
    size(lj.compressor.score, cw, "forward journal compressor rows");
    size(lj.indexer.kv, icw, "forward journal indexer rows");
    size(lj.indexer.score, icw, "forward journal indexer rows");
  }
  size(logits, config.vocab_size, "forward journal logits");
  pos0 = from;
  rows = n;
}

void put_pending_row(CompressorState& cs, int64_t pos, const float* kv, const float* score_with_ape) {
  const int64_t cw = cs.overlap * cs.width, slot = pos % cs.ratio;
  std::memcpy(cs.pend_kv.data() + slot * cw, kv, sizeof(float) * cw);
  std::memcpy(cs.pend_score.data() + slot * cw, score_with_ape, sizeof(float) * cw);
}

int64_t closing_entry(const CompressorState& cs, int64_t pos) {
  const int64_t m = cs.ratio, shift = cs.overlap == 2 && MEMRA_FAULT("csa_window_shift") ? 1 : 0;
  if ((pos + 1 + shift) % m != 0) return -1;
  const int64_t e = (pos + 1 + shift) / m - 1;
  if (shift && (e + 1) * cs.width > static_cast<int64_t>(cs.entries.size())) return -1;
  return e;
}

void carry_window(CompressorState& cs) {
  if (cs.overlap != 2) return;
  const int64_t m = cs.ratio, w = cs.width, cw = 2 * w;
  for (int64_t j = 0; j < m; ++j) {  // the Ca half: the first w columns of each row
    std::memcpy(cs.prev_kv.data() + j * w, cs.pend_kv.data() + j * cw, sizeof(float) * w);
    std::memcpy(cs.prev_score.data() + j * w, cs.pend_score.data() + j * cw, sizeof(float) * w);
  }
}

void keep_journal_rows(const ModelConfig& config, DecodeState& state, TrunkJournal& journal, int64_t pos,
                       const std::vector<CacheClass>& mark, int64_t rows) {
  if (journal.pos0 < 0 || journal.pos0 != pos || state.pos != pos + journal.rows || rows < 0 || rows > journal.rows ||
      static_cast<int64_t>(journal.layers.size()) != config.num_hidden_layers)
    throw Error("cannot keep " + std::to_string(rows) + " rows of a forward from position " + std::to_string(pos) +
                    ": the state at " + std::to_string(state.pos) + " holds " +
                    (journal.pos0 < 0 ? std::string("no journal")
                                      : "a journal of " + std::to_string(journal.rows) + " rows from " +
                                            std::to_string(journal.pos0)),
                "run the forward with SequenceStep::journal, and rewind before any other forward");
  rewind_decode_state(config, state, pos, mark);  // checks the state's buffers; the entries the kept rows closed stay
  journal.drop();  // it describes a forward the state no longer holds (its buffers stay for the next)
  if (rows == 0) return;
  const int64_t d = config.head_dim, W = config.sliding_window, V = config.vocab_size;
  for (int64_t l = 0; l < config.num_hidden_layers; ++l) {
    LayerState& ls = state.layers[l];
    const LayerJournal& lj = journal.layers[l];
    for (int64_t t = std::max<int64_t>(0, rows - W); t < rows; ++t)
      std::memcpy(ls.window.data() + ((pos + t) % W) * d, lj.window.data() + t * d, sizeof(float) * d);
    if (config.layer_types[l] == LayerKind::kSliding) continue;
    for (const bool indexer : {false, true}) {
      if (indexer && config.layer_types[l] != LayerKind::kCSA) continue;
      CompressorState& cs = compressor_of(ls, indexer);
      const CompressorJournal& cj = indexer ? lj.indexer : lj.compressor;
      const int64_t cw = cs.overlap * cs.width;
      for (int64_t t = 0; t < rows; ++t) {
        put_pending_row(cs, pos + t, cj.kv.data() + t * cw, cj.score.data() + t * cw);
        if (closing_entry(cs, pos + t) >= 0) carry_window(cs);
      }
    }
  }
  state.last_logits.assign(journal.logits.begin() + (rows - 1) * V, journal.logits.begin() + rows * V);
  state.pos = pos + rows;
}

std::vector<TrunkClassSpec> trunk_mark_specs(const ModelConfig& config, int64_t pos) {
  std::vector<TrunkClassSpec> out;
  for (auto& spec : trunk_class_specs(config, pos))
    if (!append_only(spec.part)) out.push_back(std::move(spec));
  return out;
}

std::vector<CacheClass> mark_classes(const ModelConfig& config, const DecodeState& state) {
  check_state(config, state);
  return classes_of(config, trunk_mark_specs(config, state.pos), state);
}

void rewind_decode_state(const ModelConfig& config, DecodeState& state, int64_t pos, const std::vector<CacheClass>& mark) {
  check_state(config, state);
  if (pos < 0 || pos > state.pos)
    throw Error("cannot rewind a decode state at position " + std::to_string(state.pos) + " to " + std::to_string(pos));
  const std::vector<ClassSpec> layout = trunk_mark_specs(config, pos);
  check_classes(layout, mark, pos);
  for (int64_t l = 0; l < config.num_hidden_layers; ++l) {  // make_decode_state's values, entries kept
    LayerState& ls = state.layers[l];
    std::fill(ls.window.begin(), ls.window.end(), 0.0f);
    for (CompressorState* c : {&ls.compressor, &ls.indexer}) {
      std::fill(c->pend_kv.begin(), c->pend_kv.end(), 0.0f);
      std::fill(c->pend_score.begin(), c->pend_score.end(), 0.0f);
      std::fill(c->prev_kv.begin(), c->prev_kv.end(), 0.0f);
      std::fill(c->prev_score.begin(), c->prev_score.end(), -std::numeric_limits<float>::infinity());
    }
  }
  state.last_logits.clear();
  state.pos = pos;
  for (size_t i = 0; i < layout.size(); ++i)
    transfer(config, layout[i], state, reinterpret_cast<float*>(const_cast<uint8_t*>(mark[i].bytes.data())), false);
}

}  // namespace memra
