"""tools/corpus_lengths.py against the real transformers + tokenizers APIs (the GPU machine has transformers 5.17 and
tokenizers, but no `datasets` and no hub access): trains a small byte-level BPE tokenizer on the shipped chat
sample, gives it a chat template with {% generation %} tags, saves it as a model directory, and runs
corpus_lengths.main on the sample with that directory and a JSON Lines row reader. Checks, per conversation:
  - length  = len(apply_chat_template(tokenize=True)) computed here independently,
  - kept by the template's assistant mask = kept by the prefix rule (the two ways the tool can count),
and prints the totals. Usage: python3 tools/device/corpus_lengths_real.py tests/data/chat-sample.jsonl OUT.csv
"""
import csv
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import corpus_lengths  # noqa: E402

TEMPLATE = (
    "{% for m in messages %}"
    "{% if m['role'] == 'assistant' %}<|assistant|>{% generation %}{{ m['content'] }}<|end|>{% endgeneration %}"
    "{% else %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def rows_of(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def build_tokenizer(rows, folder):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers, decoders
    import transformers

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    special = ["<|system|>", "<|user|>", "<|assistant|>", "<|end|>"]
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=special,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    texts = [m["content"] for r in rows for m in r["messages"]]
    tok.train_from_iterator(texts, trainer)
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|end|>")
    fast.chat_template = TEMPLATE
    fast.save_pretrained(folder)
    return folder


def main():
    sample, out = sys.argv[1], sys.argv[2]
    rows = rows_of(sample)
    import transformers

    folder = build_tokenizer(rows, tempfile.mkdtemp())
    t0 = time.perf_counter()
    rc = corpus_lengths.main(["--dataset", sample, "--tokenizer", folder, "--root-field", "source", "--out", out],
                             rows_loader=lambda *a, **k: rows)
    elapsed = time.perf_counter() - t0
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    with open(out) as f:
        written = list(csv.DictReader(f))
    mismatches = 0
    for row, got in zip(rows, written):
        length = len(corpus_lengths.ids_of(corpus_lengths.render(tok, row["messages"])))
        _, kept_prefix = corpus_lengths.kept_by_prefix(tok, row["messages"])
        if int(got["length"]) != length or int(got["kept"]) != kept_prefix:
            mismatches += 1
            print("mismatch", row.get("id"), got, length, kept_prefix)
    print(json.dumps({"transformers": transformers.__version__, "rc": rc, "rows": len(written),
                      "samples": len(rows), "tokens": sum(int(r["length"]) for r in written),
                      "kept": sum(int(r["kept"]) for r in written), "mismatches": mismatches,
                      "seconds": round(elapsed, 3)}))
    return 0 if rc == 0 and mismatches == 0 and len(written) == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
