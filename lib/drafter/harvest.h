// Harvest conventions: which of the drafter's b output rows become drafts, and which token each
// predicts (drafters.md §4). Read from the drafter config or the dump manifest, never guessed.
//   dflash  mask-fill: rows 1..b-1, b-1 drafts; row k predicts the token at p+k
//   dspark  shifted:   rows 0..b-1, b drafts;   row k predicts the token at p+k+1
// Verify runs the trunk over [x_0, d_1..d_nd] (nd+1 tokens) either way.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

namespace memra {

enum class Harvest { kDflash, kDspark };

const char* harvest_name(Harvest h);                            // "dflash", "dspark"
std::optional<Harvest> parse_harvest(std::string_view name);  // nullopt when unknown
int64_t harvest_drafts(Harvest h, int64_t block_size);        // nd
int64_t harvest_first_row(Harvest h);                         // row of draft 1

}  // namespace memra
