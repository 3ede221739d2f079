// The trunk's decode state (docs/architecture.md, "decode state"): exactly what a later token needs,
// per layer, and THE table of its classes (trunk_layout) that every realization exports in. The
// host layout below is the CPU backends' storage; the CUDA backend keeps the same buffers on the
// device. Capacity (the longest context the state must hold) is planned up front; nothing is
// reallocated while it runs. All values are f32.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/state_class.h"
#include "model/config.h"

namespace memra {

// One compressor's state (main kv pool, or the CSA indexer's key pool). m = ratio, c = 2 for CSA
// (overlapping windows) and 1 for HCA, w = entry width (d for main, di for the indexer).
struct CompressorState {
  int64_t ratio = 0;   // m
  int64_t overlap = 1; // c
  int64_t width = 0;   // w
  std::vector<float> pend_kv;     // [m, c·w]  rows 0..pos%m-1 live: projections of the open window
  std::vector<float> pend_score;  // [m, c·w]  pre-softmax gate scores, ape already added
  std::vector<float> prev_kv;     // [m, w]    CSA: Ca half of the last closed window (live once pos ≥ m)
  std::vector<float> prev_score;  // [m, w]    CSA: its scores (with ape)
  std::vector<float> entries;     // [capacity/m, w]  closed entries; rows 0..pos/m-1 live
};

struct LayerState {
  std::vector<float> window;   // [W, d] ring of post-norm, post-rope kv; slot = position % W
  CompressorState compressor;  // CSA/HCA only
  CompressorState indexer;     // CSA only
};

struct DecodeState {
  int64_t pos = 0;       // tokens processed so far = the next position
  int64_t capacity = 0;  // most tokens this state can hold
  std::vector<LayerState> layers;
  std::vector<float> last_logits;  // [V] logits of position pos-1 (empty at pos 0): what greedy continues from
};

// Allocates an empty state for `capacity` tokens (throws Error if capacity < 1). CSA carries start
// as "no previous window": prev_kv 0 and prev_score −inf (softmax weight 0), as in §3.5.
DecodeState make_decode_state(const ModelConfig& config, int64_t capacity);

// The named live tensors and nothing else (no dead capacity tails, no scratch), in a stable order:
// per layer l: layers.l.window [min(pos,W), d]; CSA: layers.l.csa.{cmp [pos/m,d], pend_kv/pend_score
// [pos%m, 2d], prev_kv/prev_score [m,d] (pos ≥ m), idxk [pos/m,di], idx_pend_kv/idx_pend_score
// [pos%m, 2di], idx_prev_kv/idx_prev_score [m,di] (pos ≥ m)}; HCA: layers.l.hca.{cmp, pend_kv, pend_score}.
// Then `last_logits` [V] when pos > 0. Empty classes (a dimension of 0) are omitted.
std::vector<CacheClass> cache_classes(const ModelConfig& config, const DecodeState& state);

// Which buffer of a layer a trunk class is read from / written to (the same buffers on every
// realization: CPU vectors here, device buffers in kernels/device_state.h).
enum class TrunkPart { kWindow, kEntries, kPendKv, kPendScore, kPrevKv, kPrevScore, kLastLogits };

struct TrunkClassSpec {
  std::string name;
  std::vector<int64_t> shape;
  int64_t layer = -1;    // -1: last_logits
  bool indexer = false;  // CSA indexer compressor instead of the main one
  TrunkPart part = TrunkPart::kWindow;
};

// THE table of the trunk's classes at `pos` (names, shapes, order as cache_classes() above) with
// the buffer each maps to. Every realization's trunk component is driven by it.
std::vector<TrunkClassSpec> trunk_class_specs(const ModelConfig& config, int64_t pos);

// A part a later position only appends to, past the live rows at `pos` (the compressors' closed
// entries): a speculative mark (StateComponent::export_mark) need not copy it to come back to pos.
inline bool append_only(TrunkPart part) { return part == TrunkPart::kEntries; }
// trunk_class_specs without the append-only parts: what a mark at `pos` holds.
std::vector<TrunkClassSpec> trunk_mark_specs(const ModelConfig& config, int64_t pos);

// A mark of `state` (its classes but the append-only ones), and back to it: `state` (at a position
// ≥ pos, same capacity) gets every buffer but the entries reset as make_decode_state leaves them,
// then the mark's classes; the entries' rows live at pos were never written since. Throws Error
// naming the first class that is not trunk_mark_specs(config, pos)'s.
std::vector<CacheClass> mark_classes(const ModelConfig& config, const DecodeState& state);
void rewind_decode_state(const ModelConfig& config, DecodeState& state, int64_t pos, const std::vector<CacheClass>& mark);

// What a journaled forward (SequenceStep::journal) keeps beside the state, per row of the forward:
// each layer's window kv row, each compressor's PEND row (kv and score with ape: what PEND takes) and
// the row's logits. Rows past the first `rows` of the forward can then be dropped by position
// (keep_journal_rows) instead of by running the kept rows again: a CSA window closes every 4
// positions, so neither the mark nor the forward's final state holds the PEND rows a kept prefix
// ends with.
struct CompressorJournal {
  std::vector<float> kv, score;  // [rows, c·w]
};
struct LayerJournal {
  std::vector<float> window;  // [rows, d]
  CompressorJournal compressor, indexer;
};
struct TrunkJournal {
  int64_t pos0 = -1;  // the journaled forward's first position; -1: none (a later forward or import drops it)
  int64_t rows = 0;
  std::vector<LayerJournal> layers;
  std::vector<float> logits;  // [rows, V]

  // Starts a journal of `rows` rows from `pos0` (buffers sized for `config`).
  void start(const ModelConfig& config, int64_t pos0, int64_t rows);
  void drop() { pos0 = -1, rows = 0; }
};

// A compressor's step at `pos` that PEND and PREV take, shared by the forward and the journal's
// replay: the row goes to PEND slot pos % m; when the window closes at pos, the entry it closes (≥ 0,
// the forward pools it; −1 when none) and, for CSA, PREV ← the window's Ca half (carry_window, after
// the entry is pooled).
void put_pending_row(CompressorState& cs, int64_t pos, const float* kv, const float* score_with_ape);
int64_t closing_entry(const CompressorState& cs, int64_t pos);
void carry_window(CompressorState& cs);

// `state` ran the journaled forward from `pos` (journal.pos0 == pos, state.pos == pos + journal.rows):
// back to `mark` (rewind_decode_state), then its first `rows` rows put back by position: window rows,
// PEND rows and the carries of the windows they close (the entries they closed were never touched by
// the rewind), last_logits from row rows − 1. The result is the state of running only those rows,
// bit for bit (chunk invariance). Throws Error when the journal does not fit; drops the journal.
void keep_journal_rows(const ModelConfig& config, DecodeState& state, TrunkJournal& journal, int64_t pos,
                       const std::vector<CacheClass>& mark, int64_t rows);

// The classes that a trunk state at `pos` holds: names, dtypes (F32) and shapes, in cache_classes()
// order (trunk_class_specs without the buffer mapping).
std::vector<ClassLayout> trunk_layout(const ModelConfig& config, int64_t pos);

// Rebuilds a state at `pos` with `capacity` ≥ pos from classes (names and shapes must be exactly
// trunk_layout(config, pos); throws Error naming the first disagreement).
DecodeState decode_state_from_classes(const ModelConfig& config, int64_t pos, int64_t capacity,
                                      const std::vector<CacheClass>& classes);

}  // namespace memra
