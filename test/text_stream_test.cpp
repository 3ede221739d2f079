// Streaming decode (lib/text/text_stream.h): the pieces a generation prints add up to decode() of
// all its ids, a character split across tokens is held back until it completes, and a tail that
// never completes comes out as U+FFFD at the end — on the bundled tiny tokenizer, whose vocabulary
// holds every single byte (so random ids split characters often).
#include "text/text_stream.h"

#include <catch2/catch.hpp>
#include <random>

#include "text/tokenizer.h"

using namespace memra;

namespace {
const std::string kTiny = std::string(MEMRA_FIXTURES) + "/tiny";
}

TEST_CASE("text stream: the incomplete UTF-8 tail is exactly the completable suffix", "[cpu][tokenizer]") {
  CHECK(utf8_incomplete_tail("") == 0);
  CHECK(utf8_incomplete_tail("abc") == 0);
  CHECK(utf8_incomplete_tail("a\xE6") == 1);
  CHECK(utf8_incomplete_tail("a\xE6\x97") == 2);
  CHECK(utf8_incomplete_tail("a\xE6\x97\xA5") == 0);  // 日 complete
  CHECK(utf8_incomplete_tail("\xF0\x9F\x98") == 3);   // 😀 missing its last byte
  CHECK(utf8_incomplete_tail("\xF0\x9F\x98\x80") == 0);
  CHECK(utf8_incomplete_tail("\xC3") == 1);
  CHECK(utf8_incomplete_tail("\xC0") == 0);      // never a lead
  CHECK(utf8_incomplete_tail("\xE0\x80") == 0);  // E0 needs A0..BF next: already ill-formed
  CHECK(utf8_incomplete_tail("\xED\xA0") == 0);  // a surrogate: ill-formed
  CHECK(utf8_incomplete_tail("\xF4\x90") == 0);  // past U+10FFFF
  CHECK(utf8_incomplete_tail("\x97") == 0);      // a lone continuation
  CHECK(utf8_incomplete_tail("\x80\x80\x80") == 0);
}

TEST_CASE("text stream: a character split across byte tokens prints once it completes", "[cpu][tokenizer]") {
  const Tokenizer tok = Tokenizer::load(kTiny);
  // 日 = E6 97 A5; ByteLevel spells the bytes æ, Ĺ (0x97 is not printable: U+0100 + 57), ¥.
  const auto a = tok.token_to_id("æ"), b = tok.token_to_id("Ĺ"), c = tok.token_to_id("¥"), x = tok.token_to_id("x");
  REQUIRE((a && b && c && x));
  TextStream s(tok);
  CHECK(s.push(*x) == "x");
  CHECK(s.push(*a).empty());
  CHECK(s.push(*b).empty());
  CHECK(s.push(*c) == "日");
  CHECK(s.push(*a).empty());
  CHECK(s.finish() == "\xEF\xBF\xBD");  // never completed: U+FFFD, as decode() gives
  CHECK(tok.decode(s.ids()) == "x日\xEF\xBF\xBD");
}

TEST_CASE("text stream: pieces add up to decode() over random id sequences", "[cpu][tokenizer]") {
  const Tokenizer tok = Tokenizer::load(kTiny);
  std::mt19937 rng(14);
  std::uniform_int_distribution<int32_t> id(0, static_cast<int32_t>(tok.id_limit()) - 1);
  int split_seen = 0;
  for (int n = 0; n < 400; ++n) {
    TextStream s(tok);
    std::string streamed;
    const int len = 1 + n % 40;
    for (int i = 0; i < len; ++i) {
      const std::string piece = s.push(id(rng));
      if (piece.empty()) ++split_seen;
      streamed += piece;
    }
    streamed += s.finish();
    REQUIRE(streamed == tok.decode(s.ids()));
  }
  CHECK(split_seen > 0);  // the sequences did hold characters back
}
