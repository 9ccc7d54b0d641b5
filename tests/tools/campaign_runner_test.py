#!/usr/bin/env python3
"""tools/device/campaign.sh with a stand-in executor (tests/tools/stand_in_executor.py), end to end: `stepcast
campaign predict --out` writes the plan of tests/data/campaigns/runner.yaml, the runner runs it in a copy of the
runner (a folder without .git, as on the GPU machine, or with a stale one), and `stepcast
campaign report` reads what came back. Needs STEPCAST_EXE and STEPCAST_ROOT (the source tree)."""
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import unittest

EXE = os.environ["STEPCAST_EXE"]
ROOT = os.environ["STEPCAST_ROOT"]
CAMPAIGN = os.path.join(ROOT, "tests/data/campaigns/runner.yaml")
STAND_IN = os.path.join(ROOT, "tests/tools/stand_in_executor.py")


def lines(path):
    with open(path) as f:
        return f.readlines()


def load(path):
    with open(path) as f:
        return json.load(f)


def stepcast(*args):
    return subprocess.run([EXE, *args], capture_output=True, text=True, cwd=ROOT)


class Runner(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="campaign-runner-")
        predicted = stepcast("campaign", "predict", CAMPAIGN, "--out", os.path.join(self.tmp, "pred"))
        self.assertEqual(predicted.returncode, 0, predicted.stderr)
        self.plan = os.path.join(self.tmp, "pred", "runner.plan.json")
        self.prediction = os.path.join(self.tmp, "pred", "runner-test.jsonl")
        # The runner cds to the folder two above itself: a copy of it in a tree of its own, without .git.
        self.tree = os.path.join(self.tmp, "tree")
        os.makedirs(os.path.join(self.tree, "tools/device"))
        shutil.copy(os.path.join(ROOT, "tools/device/campaign.sh"), os.path.join(self.tree, "tools/device"))
        self.out = os.path.join(self.tmp, "out")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def run_campaign(self, *extra, **env):
        full = dict(os.environ, OUT=self.out, HF_EXECUTOR=STAND_IN, STEPCAST=EXE, **env)
        return subprocess.run(["bash", os.path.join(self.tree, "tools/device/campaign.sh"), self.plan, *extra],
                              capture_output=True, text=True, env=full, timeout=120)

    def unpack(self):
        folder = os.path.join(self.tmp, "unpacked")
        with tarfile.open(os.path.join(self.out, "runner.tar.gz")) as tar:
            tar.extractall(folder)
        with open(os.path.join(folder, "items.tsv")) as f:
            rows = [line.rstrip("\n").split("\t") for line in f][1:]
        return folder, {r[0]: r for r in rows}

    def report(self, records):
        return stepcast("campaign", "report", CAMPAIGN, "--records", records, "--prediction", self.prediction,
                        "--format", "json")

    def test_every_process_runs_once_into_one_archive(self):
        done = self.run_campaign()
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertEqual(sorted(os.listdir(self.out)), ["runner.log", "runner.tar.gz"])
        folder, items = self.unpack()
        self.assertEqual(list(items), ["tiny/pad-to-longest", "tiny/bucket-to-pair", "tiny-probes/probes"])
        self.assertTrue(all(r[2] == "0" for r in items.values()), items)
        plan = load(self.plan)
        for item in plan["items"]:
            records = [json.loads(l) for l in lines(os.path.join(folder, "records", item["records"]))]
            if "run" in item:  # the planner's micro-batches, in order
                self.assertEqual([[r["rows"], r["width"]] for r in records],
                                 [[mb["rows"], mb["width"]] for mb in item["run"]["micro_batches"]])
            else:
                self.assertEqual(len(records), len(item["probes"]))
        self.assertIn("campaign runner done", "".join(lines(os.path.join(folder, "console.log"))))
        # The stand-in's figures are made up (1e-6 s a token): the report compares them and misses, exit 1.
        report = self.report(os.path.join(folder, "records"))
        self.assertEqual(report.returncode, 1, report.stderr)
        rows = json.loads(report.stdout)["rows"]
        walls = [r for r in rows if r["metric"] == "run_wall_clock"]
        self.assertTrue(any(r["item"] == "tiny/pad-to-longest" and not r["judged"] for r in walls),
                        "the first process is labelled cold: its wall clock is set apart")
        self.assertTrue(any(r["item"] == "tiny/bucket-to-pair" and r["judged"] and r["n"] == 1 for r in walls))
        probes = [r for r in rows if r["item"] == "tiny-probes/probes" and r["metric"] == "step_time"]
        self.assertEqual(probes[0]["n"], 2, "two timed points; the kernel-table point is not a check point")

    def test_a_failed_and_a_hung_process_do_not_stop_the_others(self):
        done = self.run_campaign(STAND_IN_FAIL="tiny/pad-to-longest", STAND_IN_HANG="tiny/bucket-to-pair")
        self.assertEqual(done.returncode, 1)
        folder, items = self.unpack()
        self.assertEqual(items["tiny/pad-to-longest"][2], "1")
        self.assertEqual(items["tiny/bucket-to-pair"][2], "124")
        self.assertIn("timed out", items["tiny/bucket-to-pair"][4])
        self.assertEqual(items["tiny-probes/probes"][2], "0")
        records = os.path.join(folder, "records")
        self.assertEqual(len(lines(os.path.join(records, "tiny__bucket-to-pair.jsonl"))), 1,
                         "the hung process's first record is kept")
        half = len(lines(os.path.join(records, "tiny__pad-to-longest.jsonl")))
        self.assertEqual(half, 6)
        report = json.loads(self.report(records).stdout)
        notes = [r["note"] for r in report["rows"] if r["metric"] == "run_wall_clock"]
        self.assertTrue(any("partial run: 6 of 12" in n for n in notes), notes)

    def test_dry_run_asks_the_executor_for_its_dry_run(self):
        done = self.run_campaign("--dry-run")
        self.assertEqual(done.returncode, 0, done.stdout)
        self.assertEqual(done.stdout.count("would run: "), 3)
        folder, _ = self.unpack()
        self.assertEqual(os.listdir(os.path.join(folder, "records")), [])

    def test_a_stale_git_in_the_tree_is_not_asked(self):
        # The device's copy of the tree may carry a .git that says nothing about this checkout: the gate is
        # `stepcast campaign ready` before the call (docs/campaigns.md), so the runner measures with nothing committed.
        subprocess.run(["git", "init", "-q", self.tree], check=True)
        done = self.run_campaign()
        self.assertEqual(done.returncode, 0, done.stdout)
        self.assertIn("registration is checked before the call: stepcast campaign ready", done.stdout)


if __name__ == "__main__":
    unittest.main()
