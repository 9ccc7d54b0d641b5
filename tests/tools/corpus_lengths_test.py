#!/usr/bin/env python3
"""tools/corpus_lengths.py on tests/data/chat-sample.jsonl with a stand-in tokenizer, and its CSV through
`stepcast plan` (STEPCAST_EXE and STEPCAST_SCENARIOS from ctest).

tests/data/chat-sample.jsonl: 40 synthetic chat conversations (system prompts, 1-4 turns, 12 source
documents) generated for this test from a seeded word list; no third-party text, same licence as stepcast.

The stand-in tokenizer is one token per whitespace-separated word, with a template of one BOS token, then
per message <role> words... <end>; the assistant's words and its <end> are inside {% generation %}, as in
the chat templates that support assistant_masks. Its counts are what the test computes independently below.
"""
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import corpus_lengths  # noqa: E402

DATA = os.path.join(ROOT, "tests", "data", "chat-sample.jsonl")


class StandInTokenizer:
    """The parts of a transformers tokenizer corpus_lengths.py uses: chat_template, apply_chat_template."""

    def __init__(self, generation_tags=True):
        self.chat_template = ("{{ bos }}{% for m in messages %}<{{ m.role }}>"
                              + ("{% generation %}{{ m.content }}<end>{% endgeneration %}" if generation_tags
                                 else "{{ m.content }}<end>") + "{% endfor %}")

    def apply_chat_template(self, messages, tokenize=True, return_dict=True, add_generation_prompt=False,
                            return_assistant_tokens_mask=False):
        assert tokenize and return_dict
        ids, mask = [1], [0]  # BOS
        for m in messages:
            words = m["content"].split()
            ids += [2] + [100 + len(w) for w in words] + [3]
            in_loss = 1 if m["role"] == "assistant" else 0
            mask += [0] + [in_loss] * (len(words) + 1)
        if add_generation_prompt:
            ids.append(2)
            mask.append(0)
        out = {"input_ids": ids, "attention_mask": [1] * len(ids)}
        if return_assistant_tokens_mask:
            out["assistant_masks"] = mask
        return out


def read_jsonl(path, config=None, split="train", streaming=False):
    """Stands in for datasets.load_dataset("json", data_files=path, split=split)."""
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def expected(row):
    """(length, kept) of a row by the stand-in's rule, computed here without the tool."""
    length = 1 + sum(2 + len(m["content"].split()) for m in row["messages"])
    kept = sum(1 + len(m["content"].split()) for m in row["messages"] if m["role"] == "assistant")
    return length, kept


def run_tool(argv, tokenizer=None, rows_loader=read_jsonl):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = corpus_lengths.main(argv, rows_loader=rows_loader,
                                       tokenizer_loader=lambda name, revision: tokenizer or StandInTokenizer())
        except SystemExit as e:
            code = e.code
    return code, out.getvalue(), err.getvalue()


class CorpusLengthsTest(unittest.TestCase):
    def setUp(self):
        self.rows = read_jsonl(DATA)

    def test_help_teaches_the_output_and_the_use(self):
        code, out, _ = run_tool(["--help"])
        self.assertEqual(code, 0)
        for words in ("length,kept,root", "assistant", "--corpus -", "Examples:", "--kept", "pip install"):
            self.assertIn(words, out)

    def test_every_row_gives_its_length_and_assistant_tokens(self):
        code, out, err = run_tool(["--dataset", DATA, "--tokenizer", "stand-in"])
        self.assertEqual(code, 0, err)
        lines = out.splitlines()
        self.assertEqual(lines[0], "length,kept,root")
        self.assertEqual(len(lines), 1 + len(self.rows))
        for i, (line, row) in enumerate(zip(lines[1:], self.rows), start=1):
            self.assertEqual(line, "%d,%d,%d" % (*expected(row), i))
        self.assertIn("40 samples", err)

    def test_prefix_method_agrees_with_the_mask_where_both_apply(self):
        _, by_mask, _ = run_tool(["--dataset", DATA, "--tokenizer", "t", "--kept", "mask"])
        code, by_prefix, err = run_tool(["--dataset", DATA, "--tokenizer", "t"],
                                        tokenizer=StandInTokenizer(generation_tags=False))
        self.assertEqual(code, 0, err)
        self.assertEqual(by_prefix, by_mask)

    def test_root_field_all_and_none(self):
        _, out, _ = run_tool(["--dataset", DATA, "--tokenizer", "t", "--root-field", "source", "--kept", "all"])
        rows = [line.split(",") for line in out.splitlines()[1:]]
        self.assertEqual(len({r[2] for r in rows}), 12)
        self.assertTrue(all(r[0] == r[1] for r in rows))
        _, out, _ = run_tool(["--dataset", DATA, "--tokenizer", "t", "--kept", "none", "--max-samples", "5"])
        self.assertEqual(out.splitlines()[0], "length,root")
        self.assertEqual(len(out.splitlines()), 6)

    def test_out_file_is_written_whole_or_not_at_all(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "c.csv")
            self.assertEqual(run_tool(["--dataset", DATA, "--tokenizer", "t", "--out", path])[0], 0)
            with open(path) as f:
                self.assertEqual(len(f.read().splitlines()), 41)
            bad = self.rows[:3] + [{"id": "x", "text": "no messages"}]
            code, _, err = run_tool(["--dataset", "bad.jsonl", "--tokenizer", "t", "--out", path + "2"],
                                    rows_loader=lambda *a: bad)
            self.assertEqual(code, 2)
            self.assertFalse(os.path.exists(path + "2") or os.path.exists(path + "2.tmp"))

    def test_bad_input_exits_2_naming_the_row_and_the_rule(self):
        bad = self.rows[:2] + [{"id": "x", "text": "hello"}]
        code, _, err = run_tool(["--dataset", "bad.jsonl", "--tokenizer", "t"], rows_loader=lambda *a: bad)
        self.assertEqual(code, 2)
        self.assertIn("row 3: no 'messages' list (keys: id, text)", err)
        code, _, err = run_tool(["--dataset", DATA, "--tokenizer", "t", "--kept", "mask"],
                                tokenizer=StandInTokenizer(generation_tags=False))
        self.assertEqual(code, 2)
        self.assertIn("no {% generation %} block", err)
        plain = StandInTokenizer()
        plain.chat_template = None
        code, _, err = run_tool(["--dataset", DATA, "--tokenizer", "base-model"], tokenizer=plain)
        self.assertEqual(code, 2)
        self.assertIn("has no chat template", err)
        code, _, err = run_tool(["--dataset", DATA, "--tokenizer", "t", "--root-field", "missing"])
        self.assertEqual(code, 2)
        self.assertIn("row 1: no 'missing' value", err)

    def test_a_missing_package_is_named(self):
        def no_datasets(*args):
            raise ModuleNotFoundError("No module named 'datasets'", name="datasets")
        code, _, err = run_tool(["--dataset", DATA, "--tokenizer", "t"], rows_loader=no_datasets)
        self.assertEqual(code, 2)
        self.assertIn("datasets: not installed", err)


@unittest.skipUnless(os.environ.get("STEPCAST_EXE"), "STEPCAST_EXE is set by ctest")
class ThroughPlanTest(unittest.TestCase):
    """The CSV the tool writes is a corpus stepcast plan reads, from a file and from a pipe."""

    def plan(self, corpus_arg, stdin=None):
        scenario = os.path.join(os.environ["STEPCAST_SCENARIOS"], "h200-hf-peft-64.yaml")
        r = subprocess.run([os.environ["STEPCAST_EXE"], "plan", scenario, "--corpus", corpus_arg, "--no-sweep",
                            "--format", "json"], input=stdin, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def test_the_plan_reads_every_sample_and_its_kept_tokens(self):
        code, out, err = run_tool(["--dataset", DATA, "--tokenizer", "t", "--root-field", "source"])
        self.assertEqual(code, 0, err)
        rows = read_jsonl(DATA)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "chat.csv")
            with open(path, "w") as f:
                f.write(out)
            j = self.plan(path)
        self.assertEqual(j["corpus"]["samples"], len(rows))
        self.assertEqual(j["corpus"]["tokens"], sum(expected(r)[0] for r in rows))
        self.assertEqual(j["corpus"]["roots"], 12)
        self.assertEqual(j["baseline"]["kept_tokens"], sum(expected(r)[1] for r in rows))
        self.assertEqual(self.plan("-", stdin=out)["corpus"]["tokens"], j["corpus"]["tokens"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
