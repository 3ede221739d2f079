// The CPU realizations' trunk component: export and import through the host layout (cpu_state.h).
#include "engine/cpu_state.h"

#include "core/error.h"

namespace memra {

std::vector<CacheClass> CpuTrunk::export_classes(int64_t pos) const {
  if (pos != host.pos) throw Error("trunk state is at position " + std::to_string(host.pos) + ", not " + std::to_string(pos));
  return cache_classes(config_, host);
}

void CpuTrunk::import_classes(int64_t pos, const std::vector<CacheClass>& classes) {
  host = decode_state_from_classes(config_, pos, host.capacity, classes);
  journal.drop();
}

std::shared_ptr<const ComponentMark> CpuTrunk::export_mark(int64_t pos) const {
  if (pos != host.pos) throw Error("trunk state is at position " + std::to_string(host.pos) + ", not " + std::to_string(pos));
  return std::make_shared<ClassesMark>(mark_classes(config_, host));
}

void CpuTrunk::import_mark(int64_t pos, const ComponentMark& mark) {
  rewind_decode_state(config_, host, pos, mark_classes_of(mark));
  journal.drop();
}

void CpuTrunk::import_mark_keeping(int64_t pos, const ComponentMark& mark, int64_t rows) {
  keep_journal_rows(config_, host, journal, pos, mark_classes_of(mark), rows);
}

CpuState& cpu_state(State& state, const ModelConfig& config) {
  auto* s = dynamic_cast<CpuState*>(&state);
  if (!s) throw Error("this state was not made by a CPU backend", "run it on the backend that made it");
  if (s->config() != &config) throw Error("this state belongs to another model");
  return *s;
}

const CpuState& cpu_state(const State& state, const ModelConfig& config) {
  return cpu_state(const_cast<State&>(state), config);
}

}  // namespace memra
