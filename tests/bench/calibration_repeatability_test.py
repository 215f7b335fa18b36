"""bench/calibration_repeatability.py's arithmetic: a plan's spread over calibrations, and what it
reads from a calibrated file (values written here by hand)."""
import importlib.util
import os
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location(
    "calibration_repeatability", os.path.join(ROOT, "bench", "calibration_repeatability.py"))
rep = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rep)


class SpreadTest(unittest.TestCase):
    def test_spread_is_max_over_min_and_only_over_plans_every_calibration_has(self):
        a = ("full fwd", "ring", "zigzag")
        b = ("full fwd", "ulysses", "")
        c = ("causal fwd", "ring", "zigzag")  # missing from the second calibration
        preds = [{a: 1.0, b: 2.0, c: 5.0}, {a: 1.1, b: 2.0}, {a: 0.9, b: 2.1}]
        spreads = rep.spreads_of(preds)
        self.assertEqual([s[1] for s in spreads], [a, b])  # c dropped; largest first
        self.assertAlmostEqual(spreads[0][0], 1.1 / 0.9 - 1)  # 22.2%
        self.assertAlmostEqual(spreads[1][0], 2.1 / 2.0 - 1)  # 5%
        self.assertEqual(spreads[0][2], [1.0, 1.1, 0.9])
        self.assertEqual(rep.spreads_of([]), [])

    def test_one_speed_scales_each_calibration_by_its_reference(self):
        a = ("full fwd", "ring", "zigzag")
        # References 4, 5 and 6 ms: median 5. The first calibration timed the block 20% fast
        # (4 against 5) and predicted 0.8 s: at the median speed 0.8 x 5 / 4 = 1.0 s; the third
        # 1.2 x 5 / 6 = 1.0 s. The drift gone, the spread is 0.
        preds = [{a: 0.8}, {a: 1.0}, {a: 1.2}]
        steady = rep.at_one_speed(preds, [4000, 5000, 6000])
        self.assertAlmostEqual(steady[0][a], 1.0)
        self.assertAlmostEqual(steady[2][a], 1.0)
        self.assertAlmostEqual(rep.spreads_of(steady)[0][0], 0.0)
        self.assertAlmostEqual(rep.spreads_of(preds)[0][0], 1.2 / 0.8 - 1)  # 50% before
        # A calibration without a reference (an older file): nothing scaled.
        self.assertIs(rep.at_one_speed(preds, [4000, None, 6000]), preds)

    def test_fitted_reads_the_values_that_move(self):
        text = """name = "machine"
[gpu]
model = "CPU"
memory_GB = 8
hbm_GBps = 13.4
peak_tflops = { fp32 = 0.02 }
attention_efficiency = [[128, 0.9], [4096, 1]]
backward_rate_ratio = 1.3
concurrent_kernels = 1.9
sharing = "processor"
sharing_end_lag_us = 500
[calibration]
other_processes_cores = 0.25
reference_block_us = 4410
reference_head_dim = 64
speed_spread = 0.062
draws = 3
draw_range = [0.93, 1.08]
[[level]]
name = "shm"
kind = "switch"
group_size = 4
bandwidth_GBps = 5.5
latency_us = 3
"""
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.toml")
            with open(path, "w") as f:
                f.write(text)
            got = rep.fitted(path)
        self.assertEqual(got["peak_tflops"], 0.02)
        self.assertEqual((got["eff_first"], got["eff_last"]), (0.9, 1))
        self.assertEqual(got["concurrent"], 1.9)
        self.assertEqual(got["lag_us"], 500)
        self.assertIsNone(got["lag_fraction"])
        self.assertEqual((got["msg_us"], got["msg_GBps"]), (3, 5.5))
        self.assertEqual(got["other_cores"], 0.25)
        self.assertEqual((got["reference_us"], got["speed_spread"]), (4410, 0.062))
        self.assertEqual(got["draw_range"], [0.93, 1.08])


if __name__ == "__main__":
    sys.exit(unittest.main())
