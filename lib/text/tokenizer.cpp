// tokenizer.json → Tokenizer, and the encode/decode pipeline of the `tokenizers` library for
// byte-level BPE: added-token split (leftmost-longest, lstrip/rstrip), Split/ByteLevel
// pre-tokenizers, BPE merges (lowest rank first, leftmost on ties; tokenizers' Word::merge_all),
// TemplateProcessing, ByteLevel decoding with lossy UTF-8.
#include "text/tokenizer.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <queue>
#include <unordered_map>

#include "core/error.h"
#include "format/json_guard.h"
#include "text/regex.h"
#include "text/utf8.h"

namespace memra {

namespace {

using nlohmann::json;

const char* kHint = "memra reads byte-level BPE tokenizer.json files as DeepSeek ships them (docs/tokenizer.md)";

// GPT-2's byte ↔ printable-character table (the ByteLevel alphabet).
struct ByteTable {
  std::array<std::string, 256> to_char;
  std::unordered_map<char32_t, uint8_t> to_byte;
  ByteTable() {
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++);
      utf8_append(to_char[b], cp);
      to_byte[cp] = static_cast<uint8_t>(b);
    }
  }
};
const ByteTable& byte_table() {
  static const ByteTable t;
  return t;
}

const char* kGpt2Pattern = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

struct PreStep {
  enum Kind { kSplit, kByteLevel } kind = kSplit;
  Regex regex;  // kSplit; kByteLevel with use_regex
  bool has_regex = false;
  bool removed = false;  // Split behavior Removed (else Isolated)
  bool invert = false;
  bool add_prefix_space = false;  // kByteLevel
};

struct Piece {
  std::string text;
  int32_t id = -1;  // >= 0: an added token
};

bool json_bool(const json& j, const char* key, bool def) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return def;
  return it->is_boolean() ? it->get<bool>() : def;
}

}  // namespace

struct Tokenizer::Impl {
  std::string path;
  std::vector<AddedToken> added;
  std::unordered_map<std::string, size_t> added_by_content;
  std::unordered_map<int32_t, size_t> added_by_id;
  // Added tokens matched on the raw text (normalized: false) and then on normalised pieces, indexed
  // by first byte, longest content first.
  using ByFirstByte = std::array<std::vector<size_t>, 256>;
  ByFirstByte first_pass, second_pass;
  std::unordered_map<std::string, int32_t> vocab;
  std::unordered_map<int32_t, std::string> vocab_r;
  std::unordered_map<uint64_t, std::pair<uint32_t, int32_t>> merges;  // (left id, right id) → (rank, merged id)
  std::optional<int32_t> unk;
  bool fuse_unk = false;
  bool ignore_merges = false;
  std::vector<PreStep> pre;
  std::vector<std::vector<int32_t>> template_single;  // post-processor items; an empty entry stands for $A
  bool has_template = false;
  bool byte_level_decoder = false;
  int64_t id_limit = 0;

  [[noreturn]] void bad(const std::string& what) const { throw Error(path + ": " + what, kHint); }

  void parse_pre(const json& j, const std::string& where);
  void parse_post(const json& j, const std::string& where);
  std::vector<Piece> split_added(std::string_view text, const ByFirstByte& set) const;
  std::vector<std::string> pre_tokenize(const std::string& text) const;
  void bpe(const std::string& word, std::vector<int32_t>& out) const;
};

void Tokenizer::Impl::parse_pre(const json& j, const std::string& where) {
  if (j.is_null()) return;
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) bad(where + " is not an object with a type");
  const std::string type = j["type"];
  if (type == "Sequence") {
    if (!j.contains("pretokenizers") || !j["pretokenizers"].is_array()) bad(where + ".pretokenizers is not a list");
    for (size_t i = 0; i < j["pretokenizers"].size(); ++i)
      parse_pre(j["pretokenizers"][i], where + ".pretokenizers[" + std::to_string(i) + "]");
    return;
  }
  PreStep s;
  if (type == "Split") {
    const json& p = j.value("pattern", json());
    const std::string behavior = j.value("behavior", std::string("Isolated"));
    if (behavior != "Isolated" && behavior != "Removed")
      bad(where + ": Split behavior '" + printable(behavior) + "' is not supported (Isolated or Removed)");
    s.removed = behavior == "Removed";
    s.invert = json_bool(j, "invert", false);
    if (p.is_object() && p.contains("Regex") && p["Regex"].is_string())
      s.regex = Regex::compile(p["Regex"].get<std::string>(), path + ": " + where);
    else if (p.is_object() && p.contains("String") && p["String"].is_string())
      s.regex = Regex::compile(p["String"].get<std::string>(), path + ": " + where, /*literal=*/true);
    else
      bad(where + ".pattern is not {\"Regex\": ...} or {\"String\": ...}");
    s.has_regex = true;
  } else if (type == "ByteLevel") {
    s.kind = PreStep::kByteLevel;
    s.add_prefix_space = json_bool(j, "add_prefix_space", true);
    if (json_bool(j, "use_regex", true)) {
      s.regex = Regex::compile(kGpt2Pattern, "the ByteLevel pre-tokenizer");
      s.has_regex = true;
    }
  } else {
    bad(where + ": pre-tokenizer '" + printable(type) + "' is not supported (Sequence, Split, ByteLevel)");
  }
  pre.push_back(std::move(s));
}

void Tokenizer::Impl::parse_post(const json& j, const std::string& where) {
  if (j.is_null()) return;
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) bad(where + " is not an object with a type");
  const std::string type = j["type"];
  if (type == "ByteLevel") return;  // offsets only
  if (type == "Sequence") {
    if (!j.contains("processors") || !j["processors"].is_array()) bad(where + ".processors is not a list");
    for (size_t i = 0; i < j["processors"].size(); ++i)
      parse_post(j["processors"][i], where + ".processors[" + std::to_string(i) + "]");
    return;
  }
  if (type != "TemplateProcessing")
    bad(where + ": post-processor '" + printable(type) + "' is not supported (TemplateProcessing, ByteLevel)");
  if (has_template) bad(where + ": two TemplateProcessing post-processors");
  const json& single = j.value("single", json());
  const json& specials = j.value("special_tokens", json::object());
  if (!single.is_array()) bad(where + ".single is not a list");
  bool has_a = false;
  for (const auto& item : single) {
    if (item.contains("Sequence")) {
      if (item["Sequence"].value("id", std::string()) != "A")
        bad(where + ".single: a single template can only hold $A");
      template_single.emplace_back();
      has_a = true;
    } else if (item.contains("SpecialToken")) {
      const std::string name = item["SpecialToken"].value("id", std::string());
      if (!specials.contains(name) || !specials[name].contains("ids") || !specials[name]["ids"].is_array())
        bad(where + ": special token " + printable(name) + " has no ids in special_tokens");
      std::vector<int32_t> ids;
      for (const auto& v : specials[name]["ids"]) {
        if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX)
          bad(where + ": bad id of " + printable(name));
        ids.push_back(v.get<int32_t>());
      }
      if (ids.empty()) bad(where + ": special token " + printable(name) + " has no ids");
      template_single.push_back(std::move(ids));
    } else {
      bad(where + ".single: an item is neither Sequence nor SpecialToken");
    }
  }
  if (!has_a) bad(where + ".single has no $A");
  has_template = true;
}

Tokenizer::Tokenizer() : impl_(std::make_unique<Impl>()) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::load(const std::string& path_in) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string path = path_in;
  if (fs::is_directory(path, ec)) {
    path = (fs::path(path) / "tokenizer.json").string();
    if (!fs::is_regular_file(path, ec))
      throw Error("no tokenizer.json in " + path_in, "released model folders ship tokenizer.json next to config.json");
  }
  Tokenizer t;
  Impl& m = *t.impl_;
  m.path = path;
  const json j = read_json_file(path, 256u << 20);
  if (!j.is_object()) m.bad("is not a JSON object");

  if (j.contains("truncation") && !j["truncation"].is_null()) m.bad("sets truncation, which memra does not apply");
  const json& norm = j.value("normalizer", json());
  if (!norm.is_null()) {
    const bool empty_sequence = norm.is_object() && norm.value("type", std::string()) == "Sequence" &&
                                norm.contains("normalizers") && norm["normalizers"].is_array() &&
                                norm["normalizers"].empty();
    if (!empty_sequence)
      m.bad("normalizer '" + printable(norm.is_object() ? norm.value("type", std::string("?")) : std::string("?")) +
            "' is not supported (DeepSeek's tokenizer.json has none: null or an empty Sequence)");
  }

  // Model.
  const json& model = j.value("model", json());
  if (!model.is_object() || model.value("type", std::string("BPE")) != "BPE") m.bad("model is not BPE");
  if (model.contains("dropout") && !model["dropout"].is_null())
    m.bad("model.dropout is set (sampling BPE is not supported)");
  if (json_bool(model, "byte_fallback", false)) m.bad("model.byte_fallback is true (not supported)");
  for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (model.contains(k) && !model[k].is_null() && !(model[k].is_string() && model[k].get<std::string>().empty()))
      m.bad(std::string("model.") + k + " is set (not supported)");
  m.fuse_unk = json_bool(model, "fuse_unk", false);
  m.ignore_merges = json_bool(model, "ignore_merges", false);
  const json& vocab = model.value("vocab", json());
  if (!vocab.is_object() || vocab.empty()) m.bad("model.vocab is not a non-empty object");
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 || it.value().get<int64_t>() > INT32_MAX)
      m.bad("model.vocab[" + printable(it.key()) + "] is not an id");
    const int32_t id = it.value().get<int32_t>();
    if (!m.vocab_r.emplace(id, it.key()).second) m.bad("model.vocab gives id " + std::to_string(id) + " twice");
    m.vocab.emplace(it.key(), id);
    m.id_limit = std::max<int64_t>(m.id_limit, int64_t{id} + 1);
  }
  if (model.contains("unk_token") && model["unk_token"].is_string()) {
    auto u = m.vocab.find(model["unk_token"].get<std::string>());
    if (u == m.vocab.end()) m.bad("model.unk_token is not in the vocabulary");
    m.unk = u->second;
  }
  const json& merges = model.value("merges", json::array());
  if (!merges.is_array()) m.bad("model.merges is not a list");
  for (size_t r = 0; r < merges.size(); ++r) {
    std::string a, b;
    const json& e = merges[r];
    if (e.is_string()) {
      const std::string s = e.get<std::string>();
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
        m.bad("model.merges[" + std::to_string(r) + "] is not \"a b\"");
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
      a = e[0].get<std::string>();
      b = e[1].get<std::string>();
    } else {
      m.bad("model.merges[" + std::to_string(r) + "] is neither \"a b\" nor [a, b]");
    }
    auto ia = m.vocab.find(a), ib = m.vocab.find(b), iab = m.vocab.find(a + b);
    if (ia == m.vocab.end() || ib == m.vocab.end() || iab == m.vocab.end())
      m.bad("model.merges[" + std::to_string(r) + "] (" + printable(a) + " " + printable(b) +
            ") uses a token the vocabulary lacks");
    const uint64_t key =
        (static_cast<uint64_t>(static_cast<uint32_t>(ia->second)) << 32) | static_cast<uint32_t>(ib->second);
    m.merges.emplace(key, std::make_pair(static_cast<uint32_t>(r), iab->second));  // the first rank wins
  }

  // Added tokens.
  const json& added = j.value("added_tokens", json::array());
  if (!added.is_array()) m.bad("added_tokens is not a list");
  for (size_t i = 0; i < added.size(); ++i) {
    const json& a = added[i];
    const std::string where = "added_tokens[" + std::to_string(i) + "]";
    if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") ||
        !a["content"].is_string())
      m.bad(where + " has no id and content");
    AddedToken t2;
    const int64_t id = a["id"].get<int64_t>();
    if (id < 0 || id > INT32_MAX) m.bad(where + " has id " + std::to_string(id));
    t2.id = static_cast<int32_t>(id);
    t2.content = a["content"].get<std::string>();
    if (t2.content.empty()) m.bad(where + " is empty");
    t2.special = json_bool(a, "special", false);
    t2.lstrip = json_bool(a, "lstrip", false);
    t2.rstrip = json_bool(a, "rstrip", false);
    t2.normalized = json_bool(a, "normalized", !t2.special);
    if (json_bool(a, "single_word", false))
      m.bad(where + " (" + printable(t2.content) + ") is single_word, which memra does not support");
    if (m.added_by_content.count(t2.content) || m.added_by_id.count(t2.id)) m.bad(where + " repeats an id or content");
    m.added_by_content[t2.content] = m.added.size();
    m.added_by_id[t2.id] = m.added.size();
    (t2.normalized ? m.second_pass : m.first_pass)[static_cast<uint8_t>(t2.content[0])].push_back(m.added.size());
    m.id_limit = std::max<int64_t>(m.id_limit, int64_t{t2.id} + 1);
    m.added.push_back(std::move(t2));
  }
  // Longest content first, so the first match found at a position is the longest one there.
  for (auto* set : {&m.first_pass, &m.second_pass})
    for (auto& list : *set)
      std::stable_sort(list.begin(), list.end(),
                       [&](size_t x, size_t y) { return m.added[x].content.size() > m.added[y].content.size(); });

  m.parse_pre(j.value("pre_tokenizer", json()), "pre_tokenizer");
  m.parse_post(j.value("post_processor", json()), "post_processor");
  const json& dec = j.value("decoder", json());
  if (!dec.is_null()) {
    if (!dec.is_object() || dec.value("type", std::string()) != "ByteLevel")
      m.bad("decoder '" + printable(dec.is_object() ? dec.value("type", std::string("?")) : std::string("?")) +
            "' is not supported (ByteLevel)");
    m.byte_level_decoder = true;
  }
  return t;
}

// tokenizers' AddedVocabulary::find_matches: leftmost-longest matches of `set`, whitespace
// absorbed by lstrip/rstrip tokens, the rest left as text pieces.
std::vector<Piece> Tokenizer::Impl::split_added(std::string_view text, const ByFirstByte& set) const {
  std::vector<Piece> out;
  size_t start_offset = 0, i = 0;
  while (i < text.size()) {
    const AddedToken* hit = nullptr;
    for (size_t k : set[static_cast<uint8_t>(text[i])]) {
      const std::string& c = added[k].content;
      if (text.compare(i, c.size(), c) == 0) {
        hit = &added[k];
        break;
      }
    }
    if (!hit) {
      ++i;
      continue;
    }
    size_t start = i, stop = i + hit->content.size();
    if (hit->lstrip) {  // back over whitespace to the left, not past the previous split
      size_t s = start;
      while (s > start_offset) {
        size_t b = s - 1;
        while (b > start_offset && (static_cast<uint8_t>(text[b]) & 0xC0) == 0x80) --b;
        size_t q = b;
        if (!is_unicode_whitespace(utf8_next(text, q))) break;
        s = b;
      }
      start = s;
    }
    if (hit->rstrip) {
      while (stop < text.size()) {
        size_t q = stop;
        if (!is_unicode_whitespace(utf8_next(text, q))) break;
        stop = q;
      }
    }
    if (start > start_offset) out.push_back({std::string(text.substr(start_offset, start - start_offset)), -1});
    out.push_back({std::string(text.substr(start, stop - start)), hit->id});
    start_offset = i = stop;
  }
  if (start_offset < text.size()) out.push_back({std::string(text.substr(start_offset)), -1});
  return out;
}

std::vector<std::string> Tokenizer::Impl::pre_tokenize(const std::string& text) const {
  if (text.empty()) return {};  // no pieces at all (not one empty piece a prefix space would fill)
  std::vector<std::string> pieces{text};
  for (const PreStep& s : pre) {
    std::vector<std::string> next;
    for (std::string& p : pieces) {
      if (s.kind == PreStep::kByteLevel && s.add_prefix_space && (p.empty() || p[0] != ' ')) p.insert(p.begin(), ' ');
      if (!s.has_regex) {
        next.push_back(std::move(p));
        continue;
      }
      size_t prev = 0;
      auto emit = [&](size_t b, size_t e, bool matched) {
        if (s.invert) matched = !matched;
        if (e > b && !(s.removed && matched)) next.push_back(p.substr(b, e - b));
      };
      for (const auto& [b, e] : s.regex.find_all(p)) {
        emit(prev, b, false);
        emit(b, e, true);
        prev = e;
      }
      emit(prev, p.size(), false);
    }
    pieces = std::move(next);
    if (s.kind == PreStep::kByteLevel) {
      const ByteTable& t = byte_table();
      for (std::string& p : pieces) {
        std::string mapped;
        mapped.reserve(p.size() * 2);
        for (unsigned char c : p) mapped += t.to_char[c];
        p = std::move(mapped);
      }
    }
  }
  return pieces;
}

// tokenizers' BPE::merge_word + Word::merge_all: symbols are the word's characters; the pair with
// the lowest merge rank is merged first, the leftmost among equal ranks.
void Tokenizer::Impl::bpe(const std::string& word, std::vector<int32_t>& out) const {
  if (ignore_merges) {
    auto it = vocab.find(word);
    if (it != vocab.end()) {
      out.push_back(it->second);
      return;
    }
  }
  struct Sym {
    int32_t id;
    int64_t prev, next;
    size_t len;
  };
  std::vector<Sym> syms;
  bool pending = false;  // an unknown-character run waiting to be added (fused when fuse_unk)
  size_t pending_len = 0;
  auto add = [&](int32_t id, size_t len) {
    const int64_t n = static_cast<int64_t>(syms.size());
    syms.push_back({id, n - 1, n + 1, len});
  };
  for (size_t i = 0; i < word.size();) {
    size_t j = i;
    utf8_next(word, j);
    auto it = vocab.find(word.substr(i, j - i));
    if (it != vocab.end()) {
      if (pending) add(*unk, pending_len);
      pending = false;
      add(it->second, j - i);
    } else if (unk) {
      if (pending && fuse_unk) {
        pending_len += j - i;
      } else {
        if (pending) add(*unk, pending_len);
        pending = true;
        pending_len = j - i;
      }
    }
    i = j;
  }
  if (pending) add(*unk, pending_len);
  if (!syms.empty()) syms.back().next = -1;

  struct Merge {
    size_t pos;
    uint32_t rank;
    int32_t id;
    bool operator<(const Merge& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }  // min-heap
  };
  auto lookup = [&](int32_t a, int32_t b) -> const std::pair<uint32_t, int32_t>* {
    auto it = merges.find((static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b));
    return it == merges.end() ? nullptr : &it->second;
  };
  std::priority_queue<Merge> queue;
  for (size_t i = 0; i + 1 < syms.size(); ++i)
    if (auto m = lookup(syms[i].id, syms[i + 1].id)) queue.push({i, m->first, m->second});
  while (!queue.empty()) {
    const Merge top = queue.top();
    queue.pop();
    Sym& cur = syms[top.pos];
    if (cur.len == 0 || cur.next == -1) continue;
    const size_t next_pos = static_cast<size_t>(cur.next);
    const Sym right = syms[next_pos];
    auto m = lookup(cur.id, right.id);
    if (!m || m->second != top.id) continue;  // stale entry
    cur.id = top.id;
    cur.len += right.len;
    cur.next = right.next;
    syms[next_pos].len = 0;
    if (right.next >= 0 && static_cast<size_t>(right.next) < syms.size())
      syms[static_cast<size_t>(right.next)].prev = static_cast<int64_t>(top.pos);
    if (cur.prev >= 0)
      if (auto pm = lookup(syms[static_cast<size_t>(cur.prev)].id, cur.id))
        queue.push({static_cast<size_t>(cur.prev), pm->first, pm->second});
    if (cur.next >= 0 && static_cast<size_t>(cur.next) < syms.size())
      if (auto nm = lookup(cur.id, syms[static_cast<size_t>(cur.next)].id))
        queue.push({top.pos, nm->first, nm->second});
  }
  for (const Sym& s : syms)
    if (s.len > 0) out.push_back(s.id);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  const Impl& m = *impl_;
  std::vector<int32_t> ids;
  for (const Piece& outer : m.split_added(text, m.first_pass)) {
    if (outer.id >= 0) {
      ids.push_back(outer.id);
      continue;
    }
    for (const Piece& inner : m.split_added(outer.text, m.second_pass)) {
      if (inner.id >= 0) {
        ids.push_back(inner.id);
        continue;
      }
      for (const std::string& word : m.pre_tokenize(inner.text)) m.bpe(word, ids);
    }
  }
  if (!add_special_tokens || !m.has_template) return ids;
  std::vector<int32_t> out;
  for (const auto& item : m.template_single)
    out.insert(out.end(), item.empty() ? ids.begin() : item.begin(), item.empty() ? ids.end() : item.end());
  return out;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens, size_t* unknown) const {
  return utf8_lossy(decode_bytes(ids, skip_special_tokens, unknown));
}

std::string Tokenizer::decode_bytes(const std::vector<int32_t>& ids, bool skip_special_tokens, size_t* unknown) const {
  const Impl& m = *impl_;
  const ByteTable& t = byte_table();
  std::vector<const std::string*> tokens;
  size_t missing = 0;
  for (int32_t id : ids) {
    auto a = m.added_by_id.find(id);
    if (a != m.added_by_id.end()) {
      if (!(skip_special_tokens && m.added[a->second].special)) tokens.push_back(&m.added[a->second].content);
      continue;
    }
    auto v = m.vocab_r.find(id);
    if (v == m.vocab_r.end()) {
      ++missing;
      continue;
    }
    auto c = m.added_by_content.find(v->second);  // a vocab entry spelled like a special token
    if (skip_special_tokens && c != m.added_by_content.end() && m.added[c->second].special) continue;
    tokens.push_back(&v->second);
  }
  if (unknown) *unknown = missing;
  std::string bytes;
  if (!m.byte_level_decoder) {
    for (size_t i = 0; i < tokens.size(); ++i) bytes += (i ? " " : "") + *tokens[i];
    return bytes;
  }
  for (const std::string* tok : tokens) {
    // A token whose every character is in the byte alphabet gives those bytes; any other token
    // (an added token such as <｜User｜>) gives its own UTF-8 bytes.
    std::string mapped;
    bool all = true;
    for (size_t i = 0; i < tok->size() && all;) {
      auto b = t.to_byte.find(utf8_next(*tok, i));
      if (b == t.to_byte.end())
        all = false;
      else
        mapped.push_back(static_cast<char>(b->second));
    }
    bytes += all ? mapped : *tok;
  }
  return bytes;
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  auto a = impl_->added_by_content.find(std::string(token));
  if (a != impl_->added_by_content.end()) return impl_->added[a->second].id;
  auto v = impl_->vocab.find(std::string(token));
  if (v != impl_->vocab.end()) return v->second;
  return std::nullopt;
}

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
  auto a = impl_->added_by_id.find(id);
  if (a != impl_->added_by_id.end()) return impl_->added[a->second].content;
  auto v = impl_->vocab_r.find(id);
  if (v != impl_->vocab_r.end()) return v->second;
  return std::nullopt;
}

int64_t Tokenizer::id_limit() const { return impl_->id_limit; }
const std::vector<AddedToken>& Tokenizer::added_tokens() const { return impl_->added; }
const std::string& Tokenizer::path() const { return impl_->path; }
std::vector<std::string> Tokenizer::pre_tokenize(std::string_view text) const {
  return impl_->pre_tokenize(std::string(text));
}

}  // namespace memra
