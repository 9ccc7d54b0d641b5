#!/usr/bin/env python3
"""Token lengths of a chat dataset, as stepcast reads a corpus: CSV `length,kept,root`.

For every conversation of a Hugging Face dataset, renders it with the tokenizer's chat template (as a
trainer does) and writes one row:
  length  tokens of the whole rendered conversation (what the GPU processes, before padding)
  kept    tokens that count in the loss under assistant-only loss: the tokens of the assistant turns
          (from the template's {% generation %} mask where it has one, else by rendering each assistant turn's
          prefix and subtracting; see --kept)
  root    the sample's source document (--root-field), else its row number (every sample its own document);
          stepcast reports how many roots each accumulation window mixes
The CSV feeds `stepcast plan SCENARIO.yaml --corpus FILE` (or `--corpus -` from a pipe).

Examples:
  tools/corpus_lengths.py --dataset HuggingFaceH4/ultrachat_200k --split train_sft \\
      --tokenizer Qwen/Qwen2.5-7B-Instruct --out ultrachat.csv
  tools/corpus_lengths.py --dataset my-chats.jsonl --tokenizer ./my-model --max-samples 1000 \\
      | build/cli/stepcast plan scenarios/h200-gemma-4-26b-a4b.yaml --corpus -

Needs the `datasets` and `transformers` Python packages (pip install datasets transformers); the
tokenizer and dataset come from the Hugging Face cache or the hub, or from local paths. A local .jsonl,
.json, .csv or .parquet file is read through datasets' own builders.
"""
import argparse
import csv
import os
import sys

LOCAL_BUILDERS = {".jsonl": "json", ".json": "json", ".csv": "csv", ".parquet": "parquet"}


# ---- the two outside services, behind small functions (the test injects stand-ins) -----------------

def load_rows(dataset, config=None, split="train", streaming=False):
    """The rows of a dataset: a hub name, or a local file read by datasets' builder for its extension."""
    import datasets  # imported here so that --help works without it

    for ending, builder in LOCAL_BUILDERS.items():
        if dataset.endswith(ending) or dataset.endswith(ending + ".gz"):
            return datasets.load_dataset(builder, data_files=dataset, split=split, streaming=streaming)
    return datasets.load_dataset(dataset, config, split=split, streaming=streaming)


def load_tokenizer(name, revision=None):
    """A tokenizer with a chat template: a hub name or a local directory."""
    import transformers

    return transformers.AutoTokenizer.from_pretrained(name, revision=revision)


# ---- counting ------------------------------------------------------------------------------------

class InputProblem(Exception):
    """Bad input: the message names the row and the rule; the tool exits 2."""


def ids_of(rendered):
    """input_ids of apply_chat_template(tokenize=True, return_dict=True), as a list (batch of one or not)."""
    ids = rendered["input_ids"]
    if hasattr(ids, "tolist"):
        ids = ids.tolist()
    if ids and isinstance(ids[0], list):
        ids = ids[0]
    return ids


def render(tokenizer, messages, **kwargs):
    return tokenizer.apply_chat_template(messages, tokenize=True, return_dict=True, **kwargs)


def has_generation_tags(tokenizer):
    template = getattr(tokenizer, "chat_template", None) or ""
    if isinstance(template, dict):  # several named templates
        template = template.get("default", "")
    return "generation" in template and "endgeneration" in template


def kept_by_mask(tokenizer, messages):
    """Assistant tokens from the template's {% generation %} mask."""
    rendered = render(tokenizer, messages, return_assistant_tokens_mask=True)
    mask = rendered["assistant_masks"]
    if hasattr(mask, "tolist"):
        mask = mask.tolist()
    if mask and isinstance(mask[0], list):
        mask = mask[0]
    return len(ids_of(rendered)), sum(1 for m in mask if m)


def kept_by_prefix(tokenizer, messages):
    """Assistant tokens as the growth of the rendering over each assistant turn: what the turn adds beyond
    the prompt that asks for it (the prefix rendered with add_generation_prompt=True)."""
    length = len(ids_of(render(tokenizer, messages)))
    kept = 0
    for i, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        with_turn = len(ids_of(render(tokenizer, messages[: i + 1])))
        prompt = len(ids_of(render(tokenizer, messages[:i], add_generation_prompt=True))) if i > 0 else 0
        kept += max(0, with_turn - prompt)
    return length, min(kept, length)


def sample_tokens(tokenizer, messages, kept_mode):
    """(length, kept) of one conversation; kept is None for --kept none."""
    if kept_mode == "none":
        return len(ids_of(render(tokenizer, messages))), None
    if kept_mode == "all":
        length = len(ids_of(render(tokenizer, messages)))
        return length, length
    if kept_mode == "mask" or (kept_mode == "auto" and has_generation_tags(tokenizer)):
        return kept_by_mask(tokenizer, messages)
    return kept_by_prefix(tokenizer, messages)


def check_messages(row, number, field):
    messages = row.get(field)
    if not isinstance(messages, list) or not messages:
        keys = ", ".join(sorted(row.keys())[:8])
        raise InputProblem(f"row {number}: no '{field}' list (keys: {keys}). "
                           f"Violated constraint: a list of {{role, content}} messages (--messages-field names it)")
    for m in messages:
        if not isinstance(m, dict) or "role" not in m or "content" not in m:
            raise InputProblem(f"row {number}: a message without role and content ({str(m)[:60]}). "
                               "Violated constraint: every message is {role, content}")
    return messages


def lengths(rows, tokenizer, messages_field="messages", root_field=None, kept_mode="auto", max_samples=None):
    """Yields (length, kept, root) for each row, in dataset order."""
    if kept_mode in ("mask",) and not has_generation_tags(tokenizer):
        raise InputProblem("--kept mask: the tokenizer's chat template has no {% generation %} block, so "
                           "assistant_masks would be all zero. Violated constraint: use --kept auto or prefix")
    for number, row in enumerate(rows, start=1):
        if max_samples is not None and number > max_samples:
            break
        messages = check_messages(row, number, messages_field)
        length, kept = sample_tokens(tokenizer, messages, kept_mode)
        if root_field is None:
            root = str(number)
        elif row.get(root_field) in (None, ""):
            raise InputProblem(f"row {number}: no '{root_field}' value. Violated constraint: every row has a root")
        else:
            root = str(row[root_field])
        yield length, kept, root


def write_csv(samples, out):
    """CSV with a header; a kept of None leaves the column out. Returns the number of samples."""
    writer = csv.writer(out, lineterminator="\n")
    count = 0
    header_written = False
    for length, kept, root in samples:
        if not header_written:
            writer.writerow(["length", "root"] if kept is None else ["length", "kept", "root"])
            header_written = True
        writer.writerow([length, root] if kept is None else [length, kept, root])
        count += 1
    if count == 0:
        raise InputProblem("the dataset has no rows. Violated constraint: at least one sample")
    return count


# ---- command line ----------------------------------------------------------------------------------

def parser():
    p = argparse.ArgumentParser(
        prog="corpus_lengths.py",
        description=__doc__.split("\n\n")[0],
        epilog="\n\n".join(__doc__.split("\n\n")[1:]),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", required=True,
                   help="Hugging Face dataset name (org/name) or a local .jsonl/.json/.csv/.parquet file")
    p.add_argument("--config", default=None, help="the dataset's configuration (subset), if it has several")
    p.add_argument("--split", default="train", help="split to read (default: train)")
    p.add_argument("--tokenizer", required=True,
                   help="tokenizer with a chat template: hub name (org/name) or local model directory")
    p.add_argument("--revision", default=None, help="tokenizer revision (branch, tag or commit)")
    p.add_argument("--messages-field", default="messages",
                   help="column holding the conversation: a list of {role, content} (default: messages)")
    p.add_argument("--root-field", default=None,
                   help="column naming each sample's source document (default: the row number)")
    p.add_argument("--kept", choices=["auto", "mask", "prefix", "all", "none"], default="auto",
                   help="loss tokens: auto (mask when the template marks {%% generation %%}, else prefix), "
                        "mask, prefix, all (every token: no assistant-only loss), none (no kept column)")
    p.add_argument("--max-samples", type=int, default=None, help="stop after this many rows (streams the dataset)")
    p.add_argument("--out", default="-", help="CSV file to write (default: - for standard output)")
    return p


def main(argv=None, rows_loader=load_rows, tokenizer_loader=load_tokenizer):
    args = parser().parse_args(argv)
    if args.max_samples is not None and args.max_samples < 1:
        print("corpus_lengths.py: --max-samples must be >= 1", file=sys.stderr)
        return 2
    try:
        tokenizer = tokenizer_loader(args.tokenizer, args.revision)
        if not getattr(tokenizer, "chat_template", None):
            raise InputProblem(f"tokenizer {args.tokenizer} has no chat template. Violated constraint: a chat model's "
                               "tokenizer (or one given a chat_template)")
        rows = rows_loader(args.dataset, args.config, args.split, args.max_samples is not None)
        samples = lengths(rows, tokenizer, args.messages_field, args.root_field, args.kept, args.max_samples)
        if args.out == "-":
            count = write_csv(samples, sys.stdout)
        else:  # a temporary file renamed at the end: a failed run leaves no half-written corpus
            with open(args.out + ".tmp", "w", newline="") as out:
                count = write_csv(samples, out)
            os.replace(args.out + ".tmp", args.out)
    except InputProblem as e:
        print(f"corpus_lengths.py: {args.dataset}: {e}", file=sys.stderr)
        return 2
    except ImportError as e:
        print(f"corpus_lengths.py: {e.name or e}: not installed. Violated constraint: pip install datasets "
              "transformers", file=sys.stderr)
        return 2
    except (OSError, ValueError) as e:  # not found on the hub or on disk, no access, a malformed file
        print(f"corpus_lengths.py: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    finally:
        if args.out != "-" and os.path.exists(args.out + ".tmp"):
            os.remove(args.out + ".tmp")
    print(f"corpus_lengths.py: {count} samples from {args.dataset} ({args.split}) with {args.tokenizer}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
