#!/usr/bin/env python3
"""bench/gpu_model_probe.py's sizing and bench/gpu_probe_catalog.py's arithmetic and catalog edit,
on inputs whose answers are derived here by hand (no GPU: the measuring half needs torch and CUDA).

Usage: gpu_probe_test.py [MESHPLAN]   (with the binary, the end-to-end check runs too)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import gpu_model_probe as probe  # noqa: E402
import gpu_probe_catalog as catalog  # noqa: E402

MESHPLAN = sys.argv.pop(1) if len(sys.argv) > 1 else ""


class ProbePlan(unittest.TestCase):
    def test_grid_sizes(self):
        # With no FLOP cap every combination stays: 2 backends x 2 dims x 4 lengths x 8 head counts
        # x 3 batches x 2 masks x 2 passes = 1536; merge 2 forms x 2 compilations (eager, scripted)
        # x 3 row counts x 2 head counts x 2 dtypes = 48; share 2 backends x 7 SM counts = 14.
        self.assertEqual(len(probe.occupancy_points(float("inf"))), 1536)
        self.assertEqual(len(probe.merge_points()), 48)
        self.assertEqual(len(probe.share_points()), 14)

    def test_cap_drops_only_calls_over_it(self):
        cap = 1e12
        kept = probe.occupancy_points(cap)
        self.assertTrue(all(p["flops"] <= cap for p in kept))
        # 64K tokens, d = 128, one head, batch 1, full forward: 4 x 65536^2 x 128 = 2.2e12 > 1e12.
        self.assertFalse(any(p["n"] == 65536 and p["d"] == 128 and p["mask"] == "full" and
                             p["pass"] == "fwd" for p in kept))
        # 1K tokens, 64 heads, batch 4, d = 128, full backward: 4 x 1024^2 x 128 x 256 x 2.5 = 3.4e11.
        self.assertTrue(any(p["n"] == 1024 and p["heads"] == 64 and p["batch"] == 4 and p["d"] == 128
                            and p["mask"] == "full" and p["pass"] == "bwd" for p in kept))

    def test_planned_seconds(self):
        # A call far shorter than do_bench's loops costs the loops (5 + 20 ms) and the overhead
        # (50 ms); cuDNN adds its plan build (300 ms).
        small = {"part": "occupancy", "backend": "flash", "flops": 1e9}
        self.assertAlmostEqual(probe.planned_seconds(small), 0.075)
        self.assertAlmostEqual(probe.planned_seconds({**small, "backend": "cudnn"}), 0.375)
        # A 3e14-FLOP call at the planning rate (300 TFLOP/s) is 1 s: 8 calls outlast the loops.
        self.assertAlmostEqual(probe.planned_seconds({**small, "flops": 3e14}), 8.05)
        # A share point of 3e12 FLOPs is a 10 ms call: a warm call and 5 loops of 10 alone, the
        # same beside the copy, and the copies' 50 calls' worth after the loops: 152 calls, 1.52
        # s, plus the copy's do_bench (25 ms) and the overhead (50 ms).
        share = {"part": "share", "backend": "flash", "flops": 3e12}
        self.assertAlmostEqual(probe.planned_seconds(share), 1.595)

    def test_llama2_shapes(self):
        # models/llama-2-7b.json: hidden 4096, MLP 11008 (gated), 32 heads of 128, 32 KV heads.
        shapes = [s for s in probe.model_shapes(os.path.join(ROOT, "models")) if s[0] == "llama-2-7b"]
        tp1 = {name: (k, n) for _, tp, name, k, n in shapes if tp == 1}
        self.assertEqual(tp1, {"qkv": (4096, 3 * 4096), "out": (4096, 4096),
                               "mlp_in": (4096, 2 * 11008), "mlp_out": (11008, 4096)})
        tp8 = {name: (k, n) for _, tp, name, k, n in shapes if tp == 8}
        self.assertEqual(tp8["qkv"], (4096, 3 * 4096 // 8))
        self.assertEqual(tp8["mlp_out"], (11008 // 8, 4096))

    def test_bad_parts_exit_2(self):
        with self.assertRaises(SystemExit) as e:
            probe.parse_args(["--plan", "--parts", "occupancy,speed"])
        self.assertEqual(e.exception.code, 2)


class MeasureWithStubs(unittest.TestCase):
    """The measuring half run with torch and Triton stood in for by mocks that return fixed times
    (do_bench 2 ms, a loop of 10 calls between events 40 ms): every planned point must come back as a row without an
    'error' (a mistake in the script's own code would be caught per point and recorded as one),
    and each part's arithmetic must give the stubs' numbers."""

    def test_every_point_measures_without_error(self):
        torch = mock.MagicMock()
        torch.__version__ = "stub"
        torch.version.cuda = "stub"
        torch.backends.cudnn.version.return_value = 0
        torch.cuda.is_available.return_value = True
        torch.cuda.get_device_name.return_value = "Stub GPU"
        torch.cuda.get_device_properties.return_value.multi_processor_count = 132
        torch.cuda.Event.return_value.elapsed_time.return_value = 40.0  # 10 calls: 4 ms each
        torch.randn.return_value.numel.return_value = 1 << 28
        testing = mock.MagicMock()
        testing.do_bench = lambda fn, warmup, rep, return_mode: (fn(), 2.0)[1]
        modules = {"torch": torch, "torch.nn": torch.nn, "torch.nn.functional": torch.nn.functional,
                   "torch.nn.attention": torch.nn.attention, "triton": mock.MagicMock(),
                   "triton.language": mock.MagicMock(), "triton.testing": testing}
        with tempfile.TemporaryDirectory() as tmp, mock.patch.dict(sys.modules, modules), \
                mock.patch("subprocess.run", side_effect=OSError("no nvidia-smi")):
            self.assertEqual(probe.main(["--out", tmp]), 0)
            with open(os.path.join(tmp, "probe.json")) as f:
                doc = json.load(f)
        planned = probe.plan(probe.parse_args(["--plan"]))
        self.assertEqual(len(doc["rows"]), len(planned))
        self.assertEqual([r for r in doc["rows"] if "error" in r], [])
        self.assertEqual(doc["driver"], "unknown")
        # The copy: 2 x 2^28 x 4 bytes over 2 ms = 1073.7 GB/s.
        self.assertAlmostEqual(doc["copy_gbps"], 2 * (1 << 28) * 4 / 2e-3 / 1e9)
        merge = next(r for r in doc["rows"] if r["part"] == "merge")
        # 2 ms at that bandwidth over rows x heads x 128 x 4 bytes.
        self.assertAlmostEqual(merge["passes"], 2e-3 * doc["copy_gbps"] * 1e9 /
                               (merge["rows"] * merge["heads"] * 128 * 4))
        # Half the merge rows (24 of 48) are the scripted form: torch.jit.script once each, on
        # the sigmoid or the exp function, and never for the eager half.
        scripted = [r for r in doc["rows"] if r["part"] == "merge" and r["compile"] == "script"]
        self.assertEqual(len(scripted), 24)
        self.assertEqual(torch.jit.script.call_count, 24)
        self.assertEqual({c.args[0].__name__ for c in torch.jit.script.call_args_list},
                         {"sigmoid_merge", "exp_merge"})
        # The share part times the call alone and beside the copy by the same event loop (10
        # calls: 40 ms / 10 = 4 ms each), never alone with do_bench (2 ms here): a slowdown of
        # exactly 1 with both at 4 ms. The 2026-11-30 run timed alone with do_bench, which gave
        # 2.0 here and a "slowdown" under 1 on the GPU.
        share = [r for r in doc["rows"] if r["part"] == "share" and r["sms"] > 0]
        self.assertTrue(share)
        for r in share:
            self.assertAlmostEqual(r["ms"], 4.0)
            self.assertAlmostEqual(r["beside_ms"], 4.0)
            self.assertAlmostEqual(r["slowdown"], 1.0)
        gemm = next(r for r in doc["rows"] if r["part"] == "gemm")
        self.assertAlmostEqual(gemm["tflops"], gemm["flops"] / 2e-3 / 1e12)
        # And the catalog script reads what the probe wrote.
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "probe.json")
            with open(path, "w") as f:
                json.dump(doc, f)
            self.assertEqual(len(catalog.load_probe(path)["rows"]), len(planned))


def occ(heads, batch, ms):
    return {"part": "occupancy", "backend": "flash", "d": 128, "n": 1024, "mask": "full",
            "pass": "fwd", "heads": heads, "batch": batch, "ms": ms}


class CatalogArithmetic(unittest.TestCase):
    def test_occupancy_errors(self):
        # Reference: 64 heads x batch 1 at 1.0 ms. One head at 0.05 ms: measured factor (1.0 /
        # 0.05) x (1 / 64) = 0.3125. The model says 0.8 ms and 0.02 ms: factor (0.8 / 0.02) / 64 =
        # 0.625, twice the measured (factor error +100%); time errors 0.8/1.0 - 1 = -20% and
        # 0.02/0.05 - 1 = -60%.
        pred = {64: 0.8e-3, 1: 0.02e-3}
        points = catalog.occupancy_report([occ(64, 1, 1.0), occ(1, 1, 0.05)],
                                          lambda r: pred[r["heads"]])
        by = {p["heads"]: p for p in points}
        self.assertAlmostEqual(by[1]["measured_factor"], 0.3125)
        self.assertAlmostEqual(by[1]["model_factor"], 0.625)
        self.assertAlmostEqual(by[1]["factor_error"], 1.0)
        self.assertAlmostEqual(by[1]["time_error"], -0.6)
        self.assertAlmostEqual(by[64]["time_error"], -0.2)
        self.assertAlmostEqual(by[64]["factor_error"], 0.0)

    def test_misses_by_heads(self):
        # Buckets of sequences x heads: 1 | 2-4 | 5-16 | 17-64 | 65+.
        self.assertEqual([catalog.heads_bucket(x) for x in (1, 2, 4, 5, 16, 17, 64, 65, 512)],
                         ["1", "2-4", "2-4", "5-16", "5-16", "17-64", "17-64", "65+", "65+"])
        # One head, n = 1024, forward: full 1.0 ms measured / 0.5 ms predicted (error -50%),
        # causal 1.0 ms measured / 0.3 ms predicted (-70%): causal over full 1.0 measured, 0.6
        # model. Two heads (bucket 2-4), full only: 2.0 measured, 3.0 predicted (+50%).
        def pt(heads, mask, ms, pred):
            return {**occ(heads, 1, ms), "mask": mask, "predicted_ms": pred,
                    "time_error": pred / ms - 1}
        by_error, by_ratio = catalog.misses_by_heads(
            [pt(1, "full", 1.0, 0.5), pt(1, "causal", 1.0, 0.3), pt(2, "full", 2.0, 3.0)], 132)
        self.assertAlmostEqual(by_error[("fa2", "fwd", "full")]["1"][0], -0.5)
        self.assertAlmostEqual(by_error[("fa2", "fwd", "causal")]["1"][0], -0.7)
        self.assertAlmostEqual(by_error[("fa2", "fwd", "full")]["2-4"][0], 0.5)
        measured, model, schedule, count = by_ratio[("fa2", "fwd")]["1"]
        self.assertAlmostEqual(measured, 1.0)
        self.assertAlmostEqual(model, 0.6)
        # 1024 rows: 8 forward CTAs on 132 x 2 slots, one wave: the causal call lasts as long as
        # its last row tile, which sees all 8 key tiles, as every full CTA does: 1.
        self.assertAlmostEqual(schedule, 1.0)
        self.assertEqual(count, 1)
        self.assertNotIn("2-4", by_ratio[("fa2", "fwd")])  # no causal call at two heads

    def test_greedy_causal_schedule(self):
        # Works 1, 2, 3 on 2 slots: 1 -> A (1), 2 -> B (2), 3 -> A (1 + 3 = 4): makespan 4.
        self.assertEqual(catalog.greedy_makespan([1, 2, 3], 1, 2), 4)
        # Two heads of 256 rows in 128-row tiles (m = 2) on 2 slots, heaviest first: works 2, 1,
        # 2, 1: A = 2, B = 1, then 2 -> B (3), 1 -> A (3): 3. Full: 4 CTAs of 2 tiles, 2 waves:
        # 4. Ratio 0.75. Lightest first: 1 -> A, 2 -> B, 1 -> A (2), 2 -> A or B (4): 1.0.
        self.assertAlmostEqual(catalog.causal_schedule_ratio(2, 256, 128, 2, True), 0.75)
        self.assertAlmostEqual(catalog.causal_schedule_ratio(2, 256, 128, 2, False), 1.0)
        # Past the cap (2^16 CTAs): not simulated.
        self.assertIsNone(catalog.causal_schedule_ratio(1 << 17, 128, 128, 8, False))

    def test_gemm_efficiency_is_the_median_over_peak(self):
        doc = {"rows": [{"part": "gemm", "dtype": "bf16", "tflops": t} for t in (500, 800, 600)] +
               [{"part": "gemm", "dtype": "fp8", "tflops": 1000.0},
                {"part": "gemm", "dtype": "fp8", "error": "refused"}]}
        eff = catalog.gemm_efficiency(doc, {"bf16": 1000.0, "fp8": 2000.0})
        self.assertAlmostEqual(eff["bf16"], 0.6)
        self.assertAlmostEqual(eff["fp8"], 0.5)

    def test_rewrite_replaces_the_line_and_its_comment_only(self):
        text = ("peak_tflops = { bf16 = 989, fp8 = 1979 }\n"
                "# GEMM rates: an old source\n# and its second line\n"
                "gemm_efficiency = { bf16 = 0.8, fp16 = 0.8, fp8 = 0.81, fp32 = 0.5 }\n"
                "# Attention kernels.\nattention_kernel = \"fa3\"\n")
        doc = {"device": "NVIDIA H200", "driver": "580", "torch": "2.11", "date": "2026-12-01",
               "command": "bench/gpu_model_probe.py --out o"}
        out = catalog.rewrite_gemm_efficiency(text, {"bf16": 0.7654}, doc)
        self.assertNotIn("an old source", out)
        self.assertIn("gemm_efficiency = { bf16 = 0.765, fp16 = 0.765, fp8 = 0.81, fp32 = 0.5 }\n", out)
        self.assertTrue(out.startswith("peak_tflops = { bf16 = 989, fp8 = 1979 }\n# GEMM rates"))
        self.assertTrue(out.endswith("# Attention kernels.\nattention_kernel = \"fa3\"\n"))
        self.assertIn("NVIDIA H200", out)

    def test_malformed_probe_is_refused_naming_the_key(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "probe.json")
            for doc, needle in (({"rows": 3}, "key 'rows': missing or not a list"),
                                ({"rows": [{"part": "speed"}]}, "rows[0]: key 'part'"),
                                ({"rows": [{"part": "merge", "form": "exp"}]},
                                 "rows[0] (merge): key 'rows' missing")):
                with open(path, "w") as f:
                    json.dump(doc, f)
                with self.assertRaises(catalog.Refusal) as e:
                    catalog.load_probe(path)
                self.assertIn(needle, str(e.exception))
            self.assertEqual(catalog.main([os.path.join(tmp, "absent.json")]), 2)


class MergeTable(unittest.TestCase):
    def test_merge_table_splits_eager_and_scripted(self):
        # A probe from before 2026-12-01 wrote no `compile`: its rows are the eager form. Medians
        # by form, compilation and partial dtype: eager fp32 of 12 and 13 -> 12.5 (12.0-13.0),
        # scripted fp32 3.0.
        doc = {"rows": [{"part": "merge", "form": "sigmoid", "partial_dtype": "fp32", "passes": 12.0},
                        {"part": "merge", "form": "sigmoid", "compile": "eager",
                         "partial_dtype": "fp32", "passes": 13.0},
                        {"part": "merge", "form": "sigmoid", "compile": "script",
                         "partial_dtype": "fp32", "passes": 3.0}]}
        text = catalog.summarize(doc, [], {})
        self.assertIn("| sigmoid | eager | fp32 | 12.5 | 12.0-13.0 |", text)
        self.assertIn("| sigmoid | script | fp32 | 3.0 | 3.0-3.0 |", text)


@unittest.skipUnless(MESHPLAN, "no meshplan binary given")
class EndToEnd(unittest.TestCase):
    def test_report_and_write_on_a_copy(self):
        # Two flash points whose predictions come from the shipped h200-sxm entry; the write goes
        # to a copy of that entry, whose bf16 (and fp16) gemm_efficiency must become 0.708 (the
        # median of 680, 700 and 720 TFLOP/s over the 989 peak, rounded to 3 places).
        with tempfile.TemporaryDirectory() as tmp:
            entry = os.path.join(tmp, "h200-sxm.toml")
            shutil.copy(os.path.join(ROOT, "topologies", "gpus", "h200-sxm.toml"), entry)
            rows = [occ(64, 1, 1.0), occ(1, 1, 0.05)] + [
                {"part": "gemm", "dtype": "bf16", "m": 8192, "k": 4096, "n": 4096, "tflops": t}
                for t in (680.0, 700.0, 720.0)]
            probe_path = os.path.join(tmp, "probe.json")
            with open(probe_path, "w") as f:
                json.dump({"device": "NVIDIA H200", "rows": rows}, f)
            p = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gpu_probe_catalog.py"),
                                probe_path, "--catalog", entry, "--meshplan", MESHPLAN, "--write"],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("| fa2 | fwd | 2 |", p.stdout)
            with open(entry) as f:
                text = f.read()
            # fp8 was not measured: it keeps the entry's own value (0.652 in the shipped entry).
            self.assertIn("gemm_efficiency = { bf16 = 0.708, fp16 = 0.708, fp8 = 0.652 }", text)
            self.assertIn("[gpu.attention_kernels.fa3]", text)  # the rest kept


if __name__ == "__main__":
    unittest.main()
