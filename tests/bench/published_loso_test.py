#!/usr/bin/env python3
"""bench/published_loso.py: the folds refit exactly the values fitted on the left-out source, on
the other sources' points only, fall back to another entry's value when none remain, and never
let a left-out point inform its own prediction.

The planner is replaced by a model written here: each point's error is a closed-form function of
the values assigned, so the expected refit values are worked out by hand.
"""
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import published_loso as loso  # noqa: E402

HOPPER_PASSES = ("h100-sxm5", "fa3", "ring_step_partial_passes")
A100_PASSES = ("a100-sxm4-80gb", "fa2", "ring_step_partial_passes")


def point(pid, source, scheme="ring"):
    return {"id": pid, "source": source, "meshplan_scheme": scheme}


# MAGI's two ring points want 12 passes; USP-A's ring point wants 4, USP-G's 6: the error of a
# ring point is (passes - wanted) / 100 with the passes of its GPU's entry.
WANTED = {"M1": 12, "M2": 12, "A1": 4, "G1": 6}
SOURCE_ENTRY = {"MAGI": "h100-sxm5", "USP-A": "a100-sxm4-80gb", "USP-G": "a100-sxm4-80gb"}
# The A100's shipped passes are read from its catalog file: the fold without MAGI falls back to
# that real value (FALLBACK), so the fake suite uses the same one.
A100_SHIPPED = float(loso.entry_value("a100-sxm4-80gb", "fa2", "ring_step_partial_passes"))
SHIPPED = {"h100-sxm5": 12.0, "a100-sxm4-80gb": A100_SHIPPED}
POINTS = [point("M1", "MAGI"), point("M2", "MAGI"), point("A1", "USP-A"), point("G1", "USP-G")]


class FakeSuite:
    """evaluate(points, cluster_files): reads the passes back from the override files written."""

    def __init__(self):
        self.seen = []

    def passes(self, cluster_files, entry):
        for path in cluster_files.values():
            with open(path, encoding="utf-8") as f:
                text = f.read()
            if f'catalog = "{entry}"' in text and "ring_step_partial_passes = " in text:
                tail = text.rsplit("ring_step_partial_passes = ", 1)[1]
                return float(tail.split()[0])
        return SHIPPED[entry]

    def evaluate(self, pts, cluster_files):
        self.seen.append(([p["id"] for p in pts], dict(cluster_files)))
        out = []
        for p in pts:
            passes = self.passes(cluster_files, SOURCE_ENTRY[p["source"]])
            out.append({"id": p["id"], "source": p["source"],
                        "estimate_error": (passes - WANTED[p["id"]]) / 100.0})
        return out


def cluster_for(p):
    return "dgx-h100-1node" if p["source"] == "MAGI" else "dgx-a100-1node"


class Folds(unittest.TestCase):
    def setUp(self):
        # Only the two ring-merge values, so the hand model covers every value refit.
        self.saved = loso.FITTED
        loso.FITTED = [v for v in self.saved if "ring_step_partial_passes" in v["name"]]
        self.suite = FakeSuite()
        self.rows, self.records = loso.leave_one_source_out(self.suite.evaluate, POINTS,
                                                            cluster_for)
        self.by_source = {r["source"]: r for r in self.rows}

    def tearDown(self):
        loso.FITTED = self.saved

    def test_in_sample_uses_the_shipped_values(self):
        # MAGI at 12 passes: 0; USP-A at the A100's shipped s: |s - 4|%; USP-G |s - 6|%.
        self.assertAlmostEqual(self.by_source["MAGI"]["in_sample"], 0.0)
        self.assertAlmostEqual(self.by_source["USP-A"]["in_sample"], abs(A100_SHIPPED - 4) / 100)
        self.assertAlmostEqual(self.by_source["USP-G"]["in_sample"], abs(A100_SHIPPED - 6) / 100)

    def test_a_value_fitted_only_on_the_left_out_source_falls_back(self):
        # Without MAGI nothing is left to fit the Hopper passes on: they take the A100's shipped
        # s, so MAGI's points (wanting 12) are off by |12 - s|%.
        self.assertAlmostEqual(self.by_source["MAGI"]["out_of_sample"],
                               abs(12 - A100_SHIPPED) / 100)
        self.assertIn("no data left", self.by_source["MAGI"]["changes"][0])

    def test_a_shared_value_is_refit_on_the_other_source_only(self):
        # Without USP-A the A100 passes are refit on USP-G's point alone: 6, so USP-A's point
        # (wanting 4) is off by 2%; without USP-G, refit on USP-A's: 4, USP-G off by 2%.
        self.assertAlmostEqual(self.by_source["USP-A"]["out_of_sample"], 0.02)
        self.assertAlmostEqual(self.by_source["USP-G"]["out_of_sample"], 0.02)
        self.assertIn("-> 6 (refit on 1 points of USP-G)", self.by_source["USP-A"]["changes"][0])

    def test_no_left_out_point_is_evaluated_while_fitting(self):
        # Every evaluation with an override is either a fit (no left-out point) or the fold's
        # prediction (only left-out points); the first call is the in-sample run.
        for ids, files in self.suite.seen[1:]:
            sources = {p["source"] for p in POINTS if p["id"] in ids}
            self.assertEqual(len(sources), 1, ids)
        self.assertEqual(len(self.records), len(POINTS))


class OverrideText(unittest.TestCase):
    def test_a_scale_multiplies_the_entrys_curve_and_a_key_is_set(self):
        # The A100 fa2 curve's first point is [512, 0.468] (topologies/gpus/a100-sxm4-80gb.toml):
        # scaled by 1.1, 0.5148.
        text = loso.override_text("a100-sxm4-80gb", {("fa2", "efficiency"): 1.1,
                                                     ("fa2", "backward_rate_ratio"): 0.9})
        self.assertIn("[gpu.attention_kernels.fa2]", text)
        self.assertIn("efficiency = [[512, 0.5148], ", text)
        self.assertIn("backward_rate_ratio = 0.9", text)

    def test_shipped_clusters_name_their_entry(self):
        self.assertEqual(loso.catalog_entry("dgx-h100-8node"), "h100-sxm5")
        self.assertEqual(loso.catalog_entry("dgx-a100-1node"), "a100-sxm4-80gb")


if __name__ == "__main__":
    unittest.main()
