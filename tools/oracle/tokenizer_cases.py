#!/usr/bin/env python3
"""Reference encodings and decodings from the `tokenizers` library, for memra's tokenizer test.

    tokenizer_cases.py TOKENIZER_JSON [--seed S] [--strings N] [--decodes N]
    tokenizer_cases.py --train-gpt2 OUT_JSON      (a GPT-2-style ByteLevel(use_regex, add_prefix_space) tokenizer)

Prints one JSON document: {"tokenizers": version, "cases": [{"bytes": base64 of the input bytes,
"pieces": the pre-tokenizer's pieces of the whole text, "ids": encode(text).ids, "ids_plain": encode(text, add_special_tokens=False).ids,
"text": decode(ids), "text_all": decode(ids, skip_special_tokens=False)}], "decodes": [{"ids": [...],
"text": ..., "text_all": ...}]}. The text fed to tokenizers is bytes.decode("utf-8", "replace"), so
inputs with invalid UTF-8 check memra's lossy reading too. Strings: a fixed list (whitespace runs,
digits, code, CJK, emoji, the special tokens, Unicode spaces) and N random ones from the seed mixing
scripts, marks, emoji, controls and invalid bytes; decodes: random id lists, unknown ids included.
"""
import argparse
import base64
import json
import random
import sys

import tokenizers
from tokenizers import Tokenizer

FIXED = [
    "", " ", "  ", "\n", "\n\n\n", "\t\t x", "Hello world", "Hello, world! How are you?", "  leading and trailing  ",
    "a  b   c    d", "1", "12", "123", "1234", "1234567890", "3.14159 and 2,718,281", "x1y22z333w4444",
    "def f(x):\n    return x * 2\n", "for (int i = 0; i < n; ++i) { y[i] += a * x[i]; }",
    "if (a && b || !c) { return -1; }", "<div class=\"row\">{{ value }}</div>", "SELECT * FROM t WHERE a >= 21;",
    "日本語のテキスト", "中文分词测试，数字123和English混合。", "カタカナとひらがな", "한국어 문장", "Привет, мир!",
    "Γειά σου Κόσμε", "مرحبا بالعالم", "नमस्ते दुनिया", "e\u0301 a\u0300 n\u0303", "😀", "👨‍💻 coding", "🇯🇵🇫🇷",
    "❤️ love", "<｜begin▁of▁sentence｜>Hi<｜end▁of▁sentence｜>", "<｜User｜>What is 2+2?<｜Assistant｜></think>4",
    "<think>reasoning</think>answer", "<｜User", "｜>", "text<|endoftext|>more", "<|endoftext|>", "a\u0085\nb", "a\u00a0\nb", "a\u2003b\u3000c", "a\u200b\nb",
    "a\ufeff\nb", "\x1c\x1d\x1e\x1f", "tab\there", "CR\r\nLF", "'s 're 've 'll 'd", "don't won't it's",
    "Unicode 15/16: \U0001F6DC wifi \U0001FACE moose \u1C89 \U00031350 end", "HTTP/1.1 200 OK", "email@example.com", "https://example.com/path?q=1&r=2#frag", "a" * 300, "-- // ## ** !!",
]
RANGES = [(0x20, 0x7E), (0x20, 0x7E), (0x20, 0x7E), (0x4E00, 0x9FA5), (0x3040, 0x30FF), (0xAC00, 0xD7A3),
          (0x0400, 0x04FF), (0x0370, 0x03FF), (0x0600, 0x06FF), (0x0900, 0x097F), (0x0300, 0x036F),
          (0x1F300, 0x1F6FF), (0x2000, 0x206F), (0x00A0, 0x00FF), (0xFF00, 0xFFEF), (0x0000, 0x001F)]
PIECES = ["<｜begin▁of▁sentence｜>", "<|endoftext|>", "<｜User｜>", "<｜Assistant｜>", "<think>", "</think>", "  ", "\n", "\t", "123",
          "4567", " the", "ing", "\u200d", "\ufe0f", "\u0085", "\u3000"]
BAD = [b"\xff", b"\xc0\xaf", b"\xe0\x80\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe6\x97", b"\x80", b"\xf0\x9f\x98"]


def random_string(r):
    out = []
    for _ in range(r.randint(1, 24)):
        x = r.random()
        if x < 0.15:
            out.append(r.choice(PIECES))
        elif x < 0.25:
            out.append(" " * r.randint(1, 6))
        elif x < 0.3:
            out.append(str(r.randint(0, 10 ** r.randint(1, 12))))
        else:
            lo, hi = r.choice(RANGES)
            out.append("".join(chr(r.randint(lo, hi)) for _ in range(r.randint(1, 8))))
    s = "".join(out).encode("utf-8", "surrogatepass")
    if r.random() < 0.25:  # splice invalid UTF-8 in
        k = r.randint(0, len(s))
        s = s[:k] + r.choice(BAD) + s[k:]
    return s


def cases(tok, seed, n_strings, n_decodes):
    r = random.Random(seed)
    inputs = [s.encode("utf-8") for s in FIXED] + [random_string(r) for _ in range(n_strings)] + [
        b"ok" + b + b"ok" for b in BAD]
    out = []
    for raw in inputs:
        text = raw.decode("utf-8", "replace")
        ids = tok.encode(text).ids
        pieces = [p for p, _ in tok.pre_tokenizer.pre_tokenize_str(text)] if tok.pre_tokenizer else [text]
        out.append({"bytes": base64.b64encode(raw).decode(), "ids": ids, "pieces": pieces,
                    "ids_plain": tok.encode(text, add_special_tokens=False).ids,
                    "text": tok.decode(ids), "text_all": tok.decode(ids, skip_special_tokens=False)})
    limit = tok.get_vocab_size(with_added_tokens=True)
    decodes = []
    for _ in range(n_decodes):
        ids = [r.randrange(limit + 8) for _ in range(r.randint(1, 16))]
        decodes.append({"ids": ids, "text": tok.decode(ids), "text_all": tok.decode(ids, skip_special_tokens=False)})
    return {"tokenizers": tokenizers.__version__, "cases": out, "decodes": decodes}


def train_gpt2(path):
    from tokenizers import decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    r = random.Random(5)
    corpus = FIXED * 20 + [random_string(r).decode("utf-8", "replace") for _ in range(500)]
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus, trainer)
    tok.save(path)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("tokenizer", nargs="?")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--strings", type=int, default=300)
    p.add_argument("--decodes", type=int, default=200)
    p.add_argument("--train-gpt2", metavar="OUT_JSON")
    args = p.parse_args(argv)
    if args.train_gpt2:
        train_gpt2(args.train_gpt2)
        return 0
    if not args.tokenizer:
        p.error("give TOKENIZER_JSON or --train-gpt2")
    tok = Tokenizer.from_file(args.tokenizer)
    json.dump(cases(tok, args.seed, args.strings, args.decodes), sys.stdout, ensure_ascii=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
