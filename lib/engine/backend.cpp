// State bookkeeping shared by every backend (components, export/import by prefix) and the batch
// check (backend.h).
#include "engine/backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/error.h"

namespace memra {

namespace {

bool has_prefix(const std::string& name, const std::string& prefix) {
  return !prefix.empty() && name.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

StateComponent* State::component(const std::string& name) const {
  for (const auto& c : components_)
    if (c->name() == name) return c.get();
  return nullptr;
}

void State::attach(std::unique_ptr<StateComponent> c) {
  if (!c) throw Error("cannot attach an empty state component");
  if (component(c->name())) throw Error("the state already has a component named " + c->name());
  if (!components_.empty() && c->class_prefix().empty())
    throw Error("state component " + c->name() + " needs a class prefix (only the trunk has none)");
  components_.push_back(std::move(c));
}

void StateComponent::export_stream(int64_t pos, uint8_t* dst, size_t size, const ChunkFn& on_chunk) const {
  const std::vector<CacheClass> classes = export_classes(pos);
  size_t offset = 0;
  for (const auto& c : classes) {
    if (offset + c.bytes.size() > size)
      throw Error("export buffer of " + std::to_string(size) + " bytes is too small for state component " + name());
    std::memcpy(dst + offset, c.bytes.data(), c.bytes.size());
    if (on_chunk) on_chunk(offset, c.bytes.size());
    offset += c.bytes.size();
  }
}

void StateComponent::export_stream_hashed(int64_t, uint8_t*, size_t, const ChunkFn&, std::vector<Hash128>&) const {
  throw Error("state component " + name() + " does not hash its classes in place");
}

void StateComponent::import_stream(int64_t pos, const uint8_t* src, size_t size) {
  std::vector<CacheClass> classes;
  size_t offset = 0;
  for (ClassLayout& l : layout(pos)) {
    const size_t n = l.nbytes();
    if (offset + n > size)
      throw Error("import buffer of " + std::to_string(size) + " bytes is too small for state component " + name());
    classes.emplace_back(std::move(l), std::vector<uint8_t>(src + offset, src + offset + n));
    offset += n;
  }
  import_classes(pos, classes);
}

HostBuffer Backend::host_buffer(size_t bytes) const {
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
  if (!p) throw std::bad_alloc();
  return HostBuffer(static_cast<uint8_t*>(p), bytes, [](uint8_t* q) { std::free(q); });
}

size_t StateMark::bytes() const {
  size_t n = 0;
  for (const auto& c : components) n += c ? c->bytes() : 0;
  return n;
}

StateMark State::mark() const {
  StateMark m{position_, {}};
  for (const auto& c : components_) m.components.push_back(c->export_mark(position_));
  return m;
}

size_t ClassesMark::bytes() const {
  size_t n = 0;
  for (const auto& c : classes) n += c.bytes.size();
  return n;
}

const std::vector<CacheClass>& mark_classes_of(const ComponentMark& mark) {
  const auto* m = dynamic_cast<const ClassesMark*>(&mark);
  if (!m) throw Error("this mark was made by another backend's state", "rewind a state only to its own marks");
  return m->classes;
}

std::shared_ptr<const ComponentMark> StateComponent::export_mark(int64_t pos) const {
  return std::make_shared<ClassesMark>(export_classes(pos));
}

void StateComponent::import_mark(int64_t pos, const ComponentMark& mark) { import_classes(pos, mark_classes_of(mark)); }

void StateComponent::import_mark_keeping(int64_t, const ComponentMark&, int64_t rows) {
  throw Error("state component " + name() + " cannot keep " + std::to_string(rows) +
              " rows of a forward when it rewinds (it keeps no journal)");
}

void State::rewind(const StateMark& mark, int64_t kept_rows) {
  if (mark.position < 0 || mark.position > position_ || mark.components.size() != components_.size() || kept_rows < 0 ||
      kept_rows > position_ - mark.position)
    throw Error("cannot rewind a state at position " + std::to_string(position_) + " with " +
                std::to_string(components_.size()) + " components to a mark at position " +
                std::to_string(mark.position) + " with " + std::to_string(mark.components.size()) + " keeping " +
                std::to_string(kept_rows) + " rows");
  for (const auto& c : mark.components)
    if (!c) throw Error("cannot rewind to a mark with an empty component");
  for (size_t i = 0; i < components_.size(); ++i) {
    if (i == 0 && kept_rows > 0) components_[i]->import_mark_keeping(mark.position, *mark.components[i], kept_rows);
    else components_[i]->import_mark(mark.position, *mark.components[i]);
  }
  position_ = mark.position + kept_rows;
}

namespace {

// Every component's classes end to end into dst; with `hashes`, the classes of components that hash
// in place hashed there (their entries set, the others left as they are).
void export_components(const State& state, uint8_t* dst, size_t size, const ChunkFn& on_chunk,
                       std::vector<Hash128>* hashes) {
  size_t offset = 0, first = 0;
  for (const auto& c : state.components()) {
    const std::vector<ClassLayout> layout = c->layout(state.position());
    size_t n = 0;
    for (const auto& l : layout) n += l.nbytes();
    if (offset + n > size) throw Error("export buffer of " + std::to_string(size) + " bytes is too small for the state");
    const size_t base = offset;
    const ChunkFn landed = [&](size_t at, size_t bytes) {
      if (on_chunk) on_chunk(base + at, bytes);
    };
    if (hashes && c->hashes_in_place()) {
      if (first + layout.size() > hashes->size()) throw Error("class hashes for fewer classes than the state holds");
      std::vector<Hash128> mine;
      c->export_stream_hashed(state.position(), dst + base, n, landed, mine);
      if (mine.size() != layout.size()) throw Error("state component " + c->name() + " hashed a different number of classes");
      std::copy(mine.begin(), mine.end(), hashes->begin() + static_cast<std::ptrdiff_t>(first));
    } else {
      c->export_stream(state.position(), dst + base, n, landed);
    }
    offset += n;
    first += layout.size();
  }
}

}  // namespace

void State::export_stream(uint8_t* dst, size_t size, const ChunkFn& on_chunk) const {
  export_components(*this, dst, size, on_chunk, nullptr);
}

std::vector<bool> State::hashed_in_place() const {
  std::vector<bool> out;
  for (const auto& c : components_) out.resize(out.size() + c->layout(position_).size(), c->hashes_in_place());
  return out;
}

void State::export_stream_hashed(uint8_t* dst, size_t size, const ChunkFn& on_chunk, std::vector<Hash128>& hashes) const {
  export_components(*this, dst, size, on_chunk, &hashes);
}

void State::import_stream(int64_t pos, const uint8_t* src, size_t size) {
  if (pos < 0) throw negative("state position " + std::to_string(pos) + " is negative");
  if (pos > capacity_)
    throw negative("capacity " + std::to_string(capacity_) + " is smaller than the state's position " +
                       std::to_string(pos),
                   "restore with a capacity of at least " + std::to_string(pos));
  size_t offset = 0;
  for (const auto& c : components_) {
    size_t n = 0;
    for (const auto& l : c->layout(pos)) n += l.nbytes();
    if (offset + n > size) throw negative("the state's bytes end before component " + c->name() + "'s classes");
    try {
      c->import_stream(pos, src + offset, n);
    } catch (const Error& e) {
      throw negative("state component " + c->name() + ": " + e.what(), e.hint());
    }
    offset += n;
  }
  if (offset != size)
    throw negative("the state's bytes hold " + std::to_string(size) + " bytes, its classes at position " +
                   std::to_string(pos) + " " + std::to_string(offset));
  position_ = pos;
}

std::vector<ClassLayout> State::layout(int64_t pos) const {
  std::vector<ClassLayout> out;
  for (const auto& c : components_) {
    auto part = c->layout(pos);
    out.insert(out.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
  }
  return out;
}

std::vector<CacheClass> State::export_classes() const {
  std::vector<CacheClass> out;
  for (const auto& c : components_) {
    auto part = c->export_classes(position_);
    out.insert(out.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
  }
  return out;
}

void State::import_classes(int64_t pos, const std::vector<CacheClass>& classes) {
  if (pos < 0) throw negative("state position " + std::to_string(pos) + " is negative");
  if (pos > capacity_)
    throw negative("capacity " + std::to_string(capacity_) + " is smaller than the state's position " +
                       std::to_string(pos),
                   "restore with a capacity of at least " + std::to_string(pos));
  // Each class goes to the component whose prefix it carries; the prefix-less rest to the trunk.
  std::vector<std::vector<CacheClass>> parts(components_.size());
  for (const auto& cls : classes) {
    size_t owner = components_.size();
    for (size_t i = 1; i < components_.size(); ++i)
      if (has_prefix(cls.name, components_[i]->class_prefix())) owner = i;
    if (owner == components_.size()) {
      const auto dot = cls.name.find('.');
      const std::string head = dot == std::string::npos ? cls.name : cls.name.substr(0, dot + 1);
      if (head == kDrafterClassPrefix)  // a known component prefix, but this state has no such component
        throw negative("state class " + cls.name + " belongs to a drafter, and this model has none",
                       "restore with the drafter the state was written with (--drafter)");
      owner = 0;
    }
    if (components_.empty()) throw Error("the state has no components");
    parts[owner].push_back(cls);
  }
  for (size_t i = 0; i < components_.size(); ++i) {
    try {
      components_[i]->import_classes(pos, parts[i]);
    } catch (const Error& e) {
      throw negative("state component " + components_[i]->name() + ": " + e.what(), e.hint());
    }
  }
  position_ = pos;
}

void validate_batch(const ModelConfig& cfg, std::span<const SequenceStep> batch) {
  const int64_t V = cfg.vocab_size;
  for (size_t b = 0; b < batch.size(); ++b) {
    const SequenceStep& s = batch[b];
    if (!s.state) throw Error("batch entry " + std::to_string(b) + " has no state");
    for (size_t c = 0; c < b; ++c)
      if (batch[c].state == s.state) throw Error("a state appears twice in one batch");
    const int64_t T = static_cast<int64_t>(s.tokens.size());
    if (s.state->position() > s.state->capacity() - T)
      throw Error("capacity exceeded: position " + std::to_string(s.state->position()) + " + " + std::to_string(T) +
                      " tokens > capacity " + std::to_string(s.state->capacity()),
                  "plan a larger --capacity");
    for (int64_t t = 0; t < T; ++t)
      if (s.tokens[t] < 0 || s.tokens[t] >= V)
        throw Error("token id " + std::to_string(s.tokens[t]) + " at index " + std::to_string(t) +
                    " is outside the vocabulary [0, " + std::to_string(V) + ")");
  }
}

}  // namespace memra
