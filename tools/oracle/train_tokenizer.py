#!/usr/bin/env python3
"""Trains a small byte-level BPE tokenizer shaped like DeepSeek-V3/V4's and writes tokenizer.json.

    train_tokenizer.py --vocab-size V --out FILE [--bos-template] [--seed S]

The structure is DeepSeek-V3's tokenizer.json (deepseek-ai/DeepSeek-V3, the V4 releases ship the
same pipeline): no normalizer (an empty Sequence), a pre_tokenizer Sequence of three Split(Isolated)
regexes — digits in runs of 1-3, CJK runs, then words / punctuation / whitespace with Unicode
classes — then ByteLevel(add_prefix_space=false, use_regex=false); a BPE model without byte
fallback; the ByteLevel decoder. Special tokens come first, so <｜begin▁of▁sentence｜> is id 0 and
<｜end▁of▁sentence｜> id 1 (the fixtures' bos/eos ids), then the chat-template markers.
--bos-template adds a TemplateProcessing post-processor that prepends the BOS (DeepSeek-V3's
add_bos_token behaviour); without it encode adds nothing (V4: the chat template writes the BOS).

The training text is generated from the seed (words, code, digits, CJK, kana, Cyrillic, Greek,
Arabic, emoji, whitespace runs), so the file is reproducible with the pinned `tokenizers` version
and nothing is downloaded. The vocabulary is exactly V entries (checked).
"""
import argparse
import json
import os
import random
import sys

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

# DeepSeek-V3's three Split patterns, as written in its tokenizer.json (CR and LF literal).
SPLIT_PATTERNS = [
    "\\p{N}{1,3}",
    "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
]
BOS, EOS = "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"
# (content, special, normalized): bos/eos as DeepSeek-V3 marks them; chat markers of the V4 template.
SPECIAL = [(BOS, True, True), (EOS, True, True), ("<｜▁pad▁｜>", True, False), ("<｜User｜>", True, False),
           ("<｜Assistant｜>", True, False), ("<think>", False, False), ("</think>", False, False)]

WORDS = ("the of and to in is was for on that with as by at from it his an were are which this be or has had not "
         "but first one their its new after who they two her she been other when there all during into school "
         "time may years more most only over city some world would where later up such used many can state "
         "about national out known university united then made model memory state token layer window expert "
         "attention compressed sparse hash router gate kernel tensor weight scale block shard prefill decode").split()
CODE = ["def f(x):\n    return x * 2\n", "for (int i = 0; i < n; ++i) {\n  y[i] += a * x[i];\n}\n",
        "if err != nil {\n\treturn err\n}\n", "const auto& w = model.tensor(\"embed.weight\");\n",
        "SELECT id, name FROM users WHERE age >= 21;\n", "x = [1, 2, 3]  # list\nprint(sum(x))\n",
        "<div class=\"row\">{{ value }}</div>\n", "fn main() { println!(\"{}\", 42); }\n"]
SCRIPTS = [(0x4E00, 0x4FFF), (0x3041, 0x3096), (0x30A1, 0x30FA), (0x0410, 0x044F), (0x03B1, 0x03C9),
           (0x0627, 0x064A), (0xAC00, 0xAC80)]
EMOJI = ["\U0001F600", "\U0001F680", "\U0001F44D", "\u2764\ufe0f", "\U0001F1EF\U0001F1F5", "\U0001F468\u200d\U0001F4BB"]


def corpus(seed, lines=4000):
    r = random.Random(seed)
    out = []
    for _ in range(lines):
        kind = r.random()
        if kind < 0.45:
            words = [r.choice(WORDS) for _ in range(r.randint(3, 14))]
            if r.random() < 0.3:
                words[0] = words[0].capitalize()
            s = " ".join(words) + r.choice([".", ",", "!", "?", ";", ":", ""])
        elif kind < 0.6:
            s = r.choice(CODE)
        elif kind < 0.72:
            s = " ".join(str(r.randint(0, 10 ** r.randint(1, 9))) for _ in range(r.randint(1, 6)))
        elif kind < 0.9:
            lo, hi = r.choice(SCRIPTS)
            s = "".join(chr(r.randint(lo, hi)) for _ in range(r.randint(2, 12)))
            if r.random() < 0.5:
                s += " " + r.choice(WORDS)
        else:
            s = r.choice(EMOJI) + " " + r.choice(WORDS) + r.choice(["  ", "\t", "\n\n", "   \n"])
        out.append(s)
    return out


def build(vocab_size, seed, bos_template):
    tok = Tokenizer(models.BPE(unk_token=None, byte_fallback=False))
    tok.normalizer = normalizers.Sequence([])
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Split(Regex(p), behavior="isolated", invert=False) for p in SPLIT_PATTERNS]
        + [pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    specials = [AddedToken(c, special=s, normalized=n) for c, s, n in SPECIAL]
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, show_progress=False,
                                  special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus(seed), trainer=trainer)
    if bos_template:
        tok.post_processor = processors.TemplateProcessing(single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B",
                                                           special_tokens=[(BOS, tok.token_to_id(BOS))])
    # The trainer marks every token it is given as special; <think>/</think> are plain added tokens in
    # DeepSeek's files (decode keeps them), so set the flags as listed.
    data = json.loads(tok.to_str())
    flags = {c: s for c, s, _ in SPECIAL}
    for a in data["added_tokens"]:
        a["special"] = flags[a["content"]]
    tok = Tokenizer.from_str(json.dumps(data))
    got = tok.get_vocab_size(with_added_tokens=True)
    if got != vocab_size:
        raise SystemExit(f"train_tokenizer: error: trained {got} entries, wanted {vocab_size} (corpus too small?)")
    for i, (c, _, _) in enumerate(SPECIAL):
        if tok.token_to_id(c) != i:
            raise SystemExit(f"train_tokenizer: error: {c} is id {tok.token_to_id(c)}, expected {i}")
    return tok


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--vocab-size", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--bos-template", action="store_true")
    args = p.parse_args(argv)
    tok = build(args.vocab_size, args.seed, args.bos_template)
    text = json.dumps(json.loads(tok.to_str()), ensure_ascii=False, indent=1) + "\n"
    tmp = f"{args.out}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, args.out)
    import tokenizers
    print(f"train_tokenizer: {args.out}: {args.vocab_size} entries, tokenizers {tokenizers.__version__}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
