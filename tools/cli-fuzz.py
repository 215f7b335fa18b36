#!/usr/bin/env python3
"""Black-box command-line fuzzer for meshplan (docs/cli-fuzz.md).

Generates random command lines for every subcommand (flags learned from each command's --help),
with valid, edge-case and path values and mutated plan, topology, sweep, model, document and
nccl-tests log files, runs each one in a fresh directory under resource limits, and classifies
the outcome:

  ok          exit 0
  refused     exit 2, exactly one `meshplan: error: ` line on stderr, and it is the last one
  failed-run  exit 1, the same single error line (a run that failed after it started)
  bad-exit    any other exit status, or exit 1/2 without exactly one final error line
  crash       killed by a signal, or a sanitizer/abort/terminate message on stderr
  timeout     still running after --case-timeout-s (its whole process group is killed)
  leftover    a file whose name contains `.tmp` remains in the case directory
  bad-output  exit 0, but what the run wrote is wrong: a topology file (topo from-nccl-tests,
              topo new) that `topo validate` refuses, or a CSV that concurrent --append runs
              left without exactly one header and one row per run

A small share of cases are concurrent --append cases: N copies of `simulate` (or `execute`)
with `--format csv --append -o rows.csv` run at once into one file; every copy must exit 0.

Only ok, refused and failed-run pass. Exit status: 0 when every case passed, 1 when any failed,
2 for bad usage of the fuzzer itself (missing binary, a setup command that fails).

Cases are deterministic: case N of seed S draws everything from random.Random(S + N), so the
number of parallel jobs and the time budget change how many cases run, never what a case is.
Python 3 standard library only.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import dataclasses
import io
import itertools
import os
import random
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Callable, Iterable, Iterator, Optional, Sequence, Tuple

# ---------------------------------------------------------------------------------------------
# Limits and defaults

DEFAULT_SECONDS = 60.0
DEFAULT_SEED = 1
DEFAULT_JOBS = 2
DEFAULT_CASE_TIMEOUT_S = 10.0
DEFAULT_MEMORY_MIB = 2048
KEPT_OUTPUT_BYTES = 64 * 1024  # stdout/stderr kept per case
MAX_FAILURES_SHOWN = 20
STDERR_LINES_SHOWN = 5
SHOWN_LINE_CHARS = 400  # a stderr line in the report (the command is always shown whole)
SETUP_TIMEOUT_S = 60.0  # --help and fixture commands at start-up
KILL_GRACE_S = 5.0  # waiting for a killed case's pipes to close
LAUNCH_ATTEMPTS = 5  # a binary being relinked cannot be run for a moment (EACCES, ETXTBSY)
LAUNCH_RETRY_S = 1.0

# ---------------------------------------------------------------------------------------------
# Outcome classes

CLASS_OK = "ok"
CLASS_REFUSED = "refused"
CLASS_FAILED_RUN = "failed-run"
CLASS_BAD_EXIT = "bad-exit"
CLASS_CRASH = "crash"
CLASS_TIMEOUT = "timeout"
CLASS_LEFTOVER = "leftover"
CLASS_BAD_OUTPUT = "bad-output"
ALL_CLASSES = (CLASS_OK, CLASS_REFUSED, CLASS_FAILED_RUN, CLASS_BAD_EXIT, CLASS_CRASH,
               CLASS_TIMEOUT, CLASS_LEFTOVER, CLASS_BAD_OUTPUT)
PASSING_CLASSES = frozenset((CLASS_OK, CLASS_REFUSED, CLASS_FAILED_RUN))

ERROR_PREFIX = "meshplan: error: "
CRASH_MARKERS = ("Segmentation fault", "AddressSanitizer", "runtime error:",
                 "terminate called", "Aborted")
LEFTOVER_MARK = ".tmp"

# ---------------------------------------------------------------------------------------------
# Commands


@dataclasses.dataclass(frozen=True)
class CommandSpec:
    """A subcommand: its words after the binary, its positional argument and its draw weight.

    positional is None, "plan", "topology" or "nccl-log"; positional_required says whether a
    case leaves it out only rarely (as a deliberate error) or often (an optional positional).
    writes_topology: on exit 0 the run wrote a cluster file (to -o FILE, or to stdout), which
    `topo validate` must accept (else the case is bad-output)."""
    words: tuple[str, ...]
    positional: Optional[str]
    positional_required: bool
    weight: int
    writes_topology: bool = False

    @property
    def name(self) -> str:
        """The command as one string ("topo show"); "" for the top level."""
        return " ".join(self.words)


COMMANDS = (
    CommandSpec(("plan",), None, False, 20),
    CommandSpec(("simulate",), "plan", True, 12),
    CommandSpec(("execute",), "plan", True, 12),
    CommandSpec(("sweep",), None, False, 10),
    CommandSpec(("fit",), None, False, 8),
    CommandSpec(("bench",), None, False, 5),
    CommandSpec(("calibrate",), None, False, 4),
    CommandSpec(("step",), None, False, 8),
    CommandSpec(("topo", "list"), None, False, 2),
    CommandSpec(("topo", "show"), "topology", False, 5),
    CommandSpec(("topo", "validate"), "topology", True, 8),
    CommandSpec(("topo", "new"), None, False, 6, writes_topology=True),
    CommandSpec(("topo", "from-nccl-tests"), "nccl-log", True, 10, writes_topology=True),
    CommandSpec((), None, False, 2),  # the top level: --help, --version and friends
)

TOP_LEVEL_ARGVS = (["--help"], ["-h"], ["--version"], [], ["--version", "plan"], ["help"],
                   ["no-such-command"], ["topo"], ["--bogus"])

# ---------------------------------------------------------------------------------------------
# Fixture files (every case directory gets a fresh copy of each)

PLAN_FILE = "plan.toml"
TOPOLOGY_FILE = "topo.toml"
SWEEP_FILE = "sweep.toml"
DOCS_FILE = "docs.txt"
MODEL_FILE = "config.json"
NCCL_LOG_FILE = "all_reduce.log"
READ_ONLY_FILE = "readonly.toml"
EMPTY_DIR = "adir"
APPEND_CSV_FILE = "rows.csv"

PLAN_FIXTURE_ARGS = ("plan", "-t", "dgx-h100-4gpu", "--seq", "256", "--heads", "4", "--kv-heads",
                     "2", "--head-dim", "16", "--schemes", "ring", "-q", "--out", PLAN_FILE)
TOPOLOGY_FIXTURE_ARGS = ("topo", "show", "dgx-h100-4gpu", "--format", "toml")
SWEEP_FIXTURE_TEXT = (b'topologies = ["dgx-h100-4gpu"]\ngpus = "4,8"\nseq = ["4K", 16384]\n'
                      b'schemes = ["ring", "ulysses"]\nheads = 8\nkv_heads = 4\n'
                      b'mask = "causal"\n')
DOCS_FIXTURE_TEXT = b"# document lengths summing to 256\n64 64\n128\n"
MODEL_FIXTURE_TEXT = (b'{\n  "hidden_size": 64,\n  "num_attention_heads": 4,\n'
                      b'  "num_key_value_heads": 2,\n  "num_hidden_layers": 2,\n'
                      b'  "model_type": "llama",\n  "torch_dtype": "bfloat16"\n}\n')
# all_reduce_perf -b 8 -e 128M -f 4 -g 4 on one host (rows cut down); busbw peaks at 329.56.
NCCL_LOG_FIXTURE_TEXT = (
    b"# Collective test starting: all_reduce_perf\n"
    b"# nThread 1 nGpus 4 minBytes 8 maxBytes 134217728 step: 4(factor) warmup iters: 5 "
    b"iters: 20 agg iters: 1 validation: 1 graph: 0\n"
    b"#\n"
    b"# Using devices\n"
    b"#  Rank  0 Group  0 Pid   4242 on     node-a device  0 [0x18] NVIDIA H100 80GB HBM3\n"
    b"#  Rank  1 Group  0 Pid   4242 on     node-a device  1 [0x2a] NVIDIA H100 80GB HBM3\n"
    b"#  Rank  2 Group  0 Pid   4242 on     node-a device  2 [0x3a] NVIDIA H100 80GB HBM3\n"
    b"#  Rank  3 Group  0 Pid   4242 on     node-a device  3 [0x5d] NVIDIA H100 80GB HBM3\n"
    b"#\n"
    b"#                                                              out-of-place            "
    b"           in-place\n"
    b"#       size         count      type   redop    root     time   algbw   busbw #wrong     "
    b"time   algbw   busbw #wrong\n"
    b"#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            "
    b"(us)  (GB/s)  (GB/s)\n"
    b"           8             2     float     sum      -1    20.31    0.00    0.00      0    "
    b"19.87    0.00    0.00      0\n"
    b"        2048           512     float     sum      -1    21.05    0.10    0.15      0    "
    b"20.90    0.10    0.15      0\n"
    b"      524288        131072     float     sum      -1    30.44   17.22   25.84      0    "
    b"30.12   17.41   26.11      0\n"
    b"   134217728      33554432     float     sum      -1    612.3  219.20  328.81      0    "
    b"610.9  219.71  329.56      0\n"
    b"# Out of bounds values : 0 OK\n"
    b"# Avg bus bandwidth    : 95.3349\n"
    b"#\n")

# ---------------------------------------------------------------------------------------------
# Values

LONG_STRING = "x" * 5000
LONG_NUMBER = "9" * 400
LONG_PATH = "d/" * 200 + "f.toml"  # shallow enough for recursive os.walk and rmtree
LONG_NAME = "n" * 300 + ".toml"  # longer than NAME_MAX
# Over 400 characters through directories that exist (each name under NAME_MAX): a long path
# that opens. The log's path is quoted into the written file's provenance.
LONG_NCCL_LOG = "l" * 200 + "/" + "m" * 200 + ".log"
LONG_TOPOLOGY_OUTPUT = "o" * 200 + "/" + "p" * 200 + ".toml"
# Under /proc nothing can be created: a command must refuse such an output (exit 2) before it
# does any work (see must_refuse).
PROC_OUTPUT = "/proc/nonexistent/x"
EDGE_VALUES = ("0", "-1", "", "1e308", "nan", "inf", "-inf", "2^62", "9999999999999999999999",
               "1.5", "-0", "0x10", " 8", "8 ", "1K1K", "1e-300", LONG_STRING, LONG_NUMBER,
               "\x1b[31mred\x1b[0m", "bell\x07del\x7f", "naïve-ünïcödé-名前-🚀", "a\tb\rc\nd",
               "-", "--", "=")
# --gpus and --max-gpus: never above 4096 (cost), so no huge or unbounded numbers here.
GPU_EDGE_VALUES = ("0", "-1", "", "nan", "abc", "8..", "..8", "8..4", "8..64:+0", "4096..8",
                   "1.5", "\x1b[31m8", "8,,16", "4,4096,0", "ünï")
NUMBER_EDGE_VALUES = (b"0", b"-1", b"1e308", b"nan", b"inf", b"-inf", b"4611686018427387904",
                      b"9999999999999999999999", b"-0", b"1.5", b"", b"0x10", b"1e-300")

GENERIC_PATHS = ("missing.toml", EMPTY_DIR, "/dev/null", "/dev/full", READ_ONLY_FILE,
                 "nodir/sub/file.toml", LONG_PATH, LONG_NAME)
OUTPUT_PATHS = ("out.txt", "out.json", "out.toml", "nodir/sub/out.toml", "/dev/null",
                "/dev/full", EMPTY_DIR, READ_ONLY_FILE, "-", "", ".", LONG_PATH, LONG_NAME,
                PROC_OUTPUT)
OUTPUT_DIRS = ("outdir", EMPTY_DIR, "nodir/sub", "/dev/null", READ_ONLY_FILE, "", ".",
               PROC_OUTPUT)
# -o of the commands that write a cluster file: mostly files that can be written, so that the
# written file is checked with `topo validate` often.
TOPOLOGY_OUTPUT_PATHS = ("measured.toml", "out.toml", LONG_TOPOLOGY_OUTPUT, "-", READ_ONLY_FILE)
TOPOLOGY_OUTPUT_SHARE = 0.6  # the rest: OUTPUT_PATHS
# The nccl-tests log positional, besides the fixture and its mutants. No FIFO: a FIFO with no
# writer blocks open() for ever, which is a hang of the fuzzer's making, not of the reader.
NCCL_LOG_EDGE_PATHS = ("/dev/zero", PLAN_FILE, TOPOLOGY_FILE, DOCS_FILE)
INPUT_DIRS = (EMPTY_DIR, ".", "missing-dir", "/dev/null", PLAN_FILE)

SHIPPED_TOPOLOGIES = ("dgx-h100-4gpu", "dgx-h100-1node", "dgx-h100-4node", "dgx-a100-1node",
                      "gb200-nvl72-4rack", "hypothetical-torus-16x16", "dgx-h100-128node",
                      "mi300x-8gpu")
SMALL_TOPOLOGIES = ("dgx-h100-4gpu", "dgx-h100-1node", "dgx-a100-1node")
BENCH_TOPOLOGIES = ("dgx-h100-4gpu", "dgx-h100-1node")
SHIPPED_MODELS = ("llama-3.1-8b", "llama-3.1-70b", "gemma-2-27b", "qwen2.5-72b", "llama-2-7b",
                  "llama-3.1-405b", "no-such-model")
SMALL_SEQS = ("256", "1K", "4K", "8K", "16K", "32K", "64K", "4096", "2^12", "1k", "4097")
LARGE_SEQS = ("256K", "1M", "2^20", "1G")
SMALL_SEQ_SHARE = 0.85  # --seq values <= 64K most of the time

VALID_VALUES = {
    "count": ("1", "2", "4", "8", "16", "32", "64", "128"),
    "small-count": ("1", "2", "4", "8"),
    "seq-list": ("4K", "1K,4K", "1K..64K", "64K..256K:+64K", "16K,32K", "1M", "8K..32K"),
    "sim-seq": ("1K", "4K", "16K"),
    "bench-seq": ("256", "512", "256,512", "128"),
    "bench-count": ("1", "2", "4"),
    "bench-head-dim": ("8", "16", "32"),
    "bench-repeat": ("1", "2"),
    "bench-mask": ("full", "causal", "window:64", "full,causal", "docs:" + DOCS_FILE),
    "gpus": ("4", "8", "8,16,32", "8..1024", "8..64:+8", "4096", "16..4096", "1"),
    "sim-gpus": ("4", "8", "4,8"),
    "tp": ("1", "2", "4", "8"),
    "tp-list": ("1", "1,2", "1..8"),
    "step-gpus": ("4", "8", "16", "64", "256", "1024", "16384"),
    "gemm-dtype": ("bf16", "fp8", "fp16", "fp32"),
    "recompute": ("none", "selective", "full", "auto", "sometimes"),
    "dtype": ("bf16", "fp16", "fp32", "fp8"),
    "partial-dtype": ("fp32", "bf16"),
    "mask": ("full", "causal", "window:512", "window:1", "prefix:1K", "prefix:64",
             "docs:" + DOCS_FILE, "docs-full:" + DOCS_FILE, "docs:missing.txt",
             "docs-sampled:lognormal:median=8K:sigma=1.2:seed=7", "window:", "prefix:"),
    "pass": ("fwd", "bwd", "fwd+bwd"),
    "seq-round": ("up", "down"),
    "framework": ("megatron", "yunchang", "internevo", "magi", "any"),
    # "schemes" is drawn from `meshplan plan --list-schemes` (Fixtures.schemes): scheme names
    # live in the registry alone (tests/meta/scheme_units_test.cc).
    "format": ("json", "csv", "table", "text", "toml"),
    "attention-kernel": ("fa2", "fa3", "cudnn", "own"),
    "float-small": ("0", "0.5", "12", "0.001"),
    "gib": ("0", "10", "79.5", "80"),
    "small-int": ("0", "1", "2", "3", "8"),
    "trace-ranks": ("all", "0-15,100", "0", "1-2", "3-1"),
    "memory": ("16G", "1G", "1M", "1", "0", "512K"),
    "backend": ("cpu", "cuda"),
    "transport": ("threads", "mpi", "local", "nccl"),
    "kernels": ("auto", "cudnn", "tensor", "simt"),
    "seed": ("0", "1", "42", "18446744073709551615"),
    "timeout": ("2", "0.5", "5", "0.01"),
    "repeat": ("1", "2", "3"),
    "inject-fail": ("0:0", "0:3", "3:5", "1:22", "4:0", "1:9999", "0:", "x"),
    "rank": ("0", "1", "3", "4"),
    "budget": ("0.001", "0.1", "1", "10"),
    "name": ("mycluster", "x", "cluster with spaces"),
    "gpu-model": ("h100", "h200", "h800", "a100", "gb200", "b200", "l40s", "rtx4090", "mi300x"),
    "nic": ("400", "100", "0.5", "1600"),
    "topo-format": ("text", "toml"),
    "calibrate-ranks": ("1", "2", "4"),
    # nvlink and ib are levels of the shipped clusters and the fixture (most draws, so that
    # runs get as far as writing); torus is the torus cluster's only level; the rest name no
    # level of any of them.
    "level": ("nvlink", "ib") * 6 + ("torus", "net", "NVLink", "pcie", "ib,nvlink"),
    "net-name": ("ib", "roce", "net", "nvlink", "pcie", "socket", "x y"),
    # PCIe nodes (topo new --node-link pcie): valid values, and wrong ones.
    "node-link": ("nvlink", "pcie", "pcie", "xgmi", "PCIe", "x"),
    "pcie-gen": ("3", "4", "5", "6", "0", "-1"),
    "sockets": ("1", "2", "2", "4", "3", "0", "9999999999"),
    "cpu": ("amd", "intel-skl", "intel-spr", "intel-emr", "intel-bdw", "arm", ""),
    "gpus-per-switch": ("1", "2", "4", "3", "0", "8"),
    "p2p": ("on", "off", "maybe"),
    # Mixed fabrics (NAME:NODES:GBPS[:US]): valid ones, and each part wrong in turn.
    "fabric": ("roce:0:200", "roce:1:200:8", "eth:0-1:100", "x:0,0:200", "x:9:200", "bad",
               "a:0:0", ":0:200", "a:1-0:200", "a:0:200:-1", "a b:0:200"),
    "text": ("x", "1", "all", "auto"),
    "int": ("0", "1", "2", "8"),
    "float": ("0", "0.5", "1", "2"),
}

FLAG_DOMAINS = {
    "--topology": "topology", "--attention-kernel": "attention-kernel",
    "--step-overhead-ms": "float-small", "--model": "model", "--batch": "count", "--seq": "seq",
    "--heads": "count", "--kv-heads": "count", "--head-dim": "count", "--dtype": "dtype",
    "--partial-dtype": "partial-dtype", "--mask": "mask", "--pass": "pass", "--tp": "tp",
    "--dp": "tp", "--seq-round": "seq-round", "--framework": "framework",
    "--schemes": "schemes", "--format": "format", "--top": "small-int", "--out": "output",
    "--pick": "small-int", "--explain": "small-int", "--reserve-gib": "gib",
    "--simulate": "small-int", "--trace": "output", "--timeline": "output",
    "--slowest": "small-int", "--ranks": "small-int", "--trace-ranks": "trace-ranks",
    "--max-memory": "memory", "--backend": "backend", "--transport": "transport",
    "--kernels": "kernels", "--devices": "small-int", "--seed": "seed",
    "--inputs": "input-dir", "--outputs": "output-dir", "--timeout-s": "timeout",
    "--repeat": "repeat", "--inject-fail": "inject-fail", "--inject-silent": "rank",
    "--gpus": "gpus", "--plot": "output-dir", "--charts": "output-dir",
    "--sweep-file": "sweep-file", "--max-seq": "seq", "--budget-s": "budget",
    "--max-gpus": "gpus", "--name": "name", "--gpu": "gpu-model", "--nodes": "small-count",
    "--gpus-per-node": "small-count", "--nic-gbps": "nic",
}
COMMAND_FLAG_DOMAINS = {
    ("sweep", "--seq"): "seq-list", ("sweep", "--tp"): "tp-list",
    ("bench", "--seq"): "bench-seq", ("bench", "--mask"): "bench-mask",
    ("bench", "--topology"): "bench-topology", ("bench", "--heads"): "bench-count",
    ("bench", "--kv-heads"): "bench-count", ("bench", "--head-dim"): "bench-head-dim",
    ("bench", "--batch"): "bench-count", ("bench", "--repeat"): "bench-repeat",
    ("execute", "--topology"): "topology", ("topo show", "--format"): "topo-format",
    ("calibrate", "--ranks"): "calibrate-ranks", ("calibrate", "--heads"): "small-count",
    ("step", "--gpus"): "step-gpus", ("step", "--cp"): "tp", ("step", "--pp"): "tp",
    ("step", "--vpp"): "tp", ("step", "--micro-batch"): "small-count",
    ("step", "--global-batch"): "count", ("step", "--gemm-dtype"): "gemm-dtype",
    ("step", "--recompute"): "recompute", ("step", "--topology"): "topology",
    ("topo from-nccl-tests", "--level"): "level", ("topo from-nccl-tests", "--out"): "topo-output",
    ("topo new", "--out"): "topo-output", ("topo new", "--net-name"): "net-name",
    ("topo new", "--fabric"): "fabric", ("topo new", "--node-link"): "node-link",
    ("topo new", "--pcie-gen"): "pcie-gen", ("topo new", "--sockets"): "sockets",
    ("topo new", "--cpu"): "cpu", ("topo new", "--gpus-per-switch"): "gpus-per-switch",
    ("topo new", "--p2p"): "p2p",
}
# Replays in the simulator are the expensive part of plan and sweep (8 replays of 256-GPU plans
# take seconds): with --simulate, clusters, GPU counts and lengths come from small pools, and
# these flags are added when the case did not draw them.
SIMULATION_DOMAINS = {
    "plan": {"--topology": "sim-topology", "--seq": "sim-seq"},
    "sweep": {"--topology": "sim-topology", "--gpus": "sim-gpus", "--seq": "sim-seq"},
}
SIMULATION_DEFAULTS = {
    "plan": (("--topology", "dgx-h100-1node"),),
    "sweep": (("--gpus", "8"),),
}
TYPE_DOMAINS = {"INT": "int", "UINT": "int", "FLOAT": "float", "NUMBER": "float",
                "TEXT": "text"}
PATH_DOMAINS = frozenset(("topology", "bench-topology", "sim-topology", "model", "output",
                          "output-dir", "input-dir", "sweep-file", "topo-output"))

# Cost guards: flags a bench case gets unless it draws them itself (bench runs every scheme's
# plan for real; these keep it well under a second).
BENCH_DEFAULTS = (("--seq", "256"), ("--repeat", "1"), ("--heads", "4"), ("--kv-heads", "2"),
                  ("--head-dim", "16"))
# calibrate with valid flags measures for ~30 s: a case always carries one of these refusals.
CALIBRATE_POISON = (("--ranks", "0"), ("--ranks", "257"), ("--ranks", "-3"), ("--heads", "0"),
                    ("--head-dim", "0"), ("--head-dim", "1e308"), ("--backend", "cuda"),
                    ("--transport", "mpi"), ("--no-such-flag", None))
CALIBRATE_VALID_SHARE = 0.0  # never run a full (valid) calibration by default
EXECUTE_TIMEOUT_ARGS = ("--timeout-s", "2")
EXECUTE_TIMEOUT_SHARE = 0.5

# Concurrent --append cases: N copies of one command append a CSV row each to one file at once.
APPEND_CASE_SHARE = 0.02
APPEND_COPIES = (4, 8, 8, 16)
APPEND_EXECUTE_SHARE = 0.4  # the rest run simulate
APPEND_EXISTING_SHARE = 0.25  # one copy runs alone first, so the file exists when the N start
APPEND_COMMANDS = {
    "simulate": ("simulate", PLAN_FILE, "--format", "csv", "--append", "-o", APPEND_CSV_FILE,
                 "-q"),
    "execute": ("execute", PLAN_FILE, "--format", "csv", "--append", "-o", APPEND_CSV_FILE, "-q",
                "--timeout-s", "5"),
}
# Flags after which a run only prints (help, a list) and exits 0 whatever else it was given.
INFO_FLAGS = frozenset(("-h", "--help", "--list-schemes"))

# Draw probabilities.
VALUE_VALID_SHARE = 0.75
VALUE_EDGE_SHARE = 0.17  # the rest: a generic path
MAX_DRAWN_FLAGS = 5
HELP_FLAG_SHARE = 0.03
REQUIRED_FLAG_SHARE = 0.9
EQUALS_FORM_SHARE = 0.1
SHORT_FORM_SHARE = 0.5
ODDITY_SHARE = 0.06  # each of: unknown flag, repeated flag, missing value, extra positional
MUTATIONS_PER_FILE = (1, 3)

# A flag line: indented names, then (one space away) the value type, then the description.
FLAG_LINE = re.compile(r"^\s{1,8}(-{1,2}[A-Za-z0-9][\w-]*(?:,\s*-{1,2}[A-Za-z0-9][\w-]*)*)"
                       r"(?: (\S+))?(.*)$")
VALUE_TYPE = re.compile(r"^(?:[A-Z][A-Z_]+(?:=.*)?|\[[^\]]*\])$")
NUMBER_IN_TEXT = re.compile(rb"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
KEY_LINE = re.compile(rb"^(\s*)([\w.\-\"]+)(\s*=.*)$")

# ---------------------------------------------------------------------------------------------
# Help parsing


@dataclasses.dataclass(frozen=True)
class Flag:
    """An option from a --help listing.

    names: every spelling ("-t", "--topology"); arity: "none" (a switch), "one" (takes a value)
    or "optional" (a value in brackets, `--explain [N]`); type_name: the help's value type
    (TEXT, INT, ...), "" for a switch; required: marked REQUIRED."""
    names: tuple[str, ...]
    arity: str
    type_name: str
    required: bool

    @property
    def key(self) -> str:
        """The first long spelling (or the only one): the flag's identity in a case."""
        longs = [name for name in self.names if name.startswith("--")]
        return longs[0] if longs else self.names[0]

    @property
    def short(self) -> Optional[str]:
        """A one-dash spelling, if the flag has one."""
        shorts = [name for name in self.names if not name.startswith("--")]
        return shorts[0] if shorts else None

    def is_help(self) -> bool:
        """True for -h/--help."""
        return "--help" in self.names


def parse_help_flags(text: str) -> list[Flag]:
    """Flags listed in a CLI11-style --help text, in order, each once.

    A flag line is indented by 1 to 8 spaces and starts with a dash; names are comma-separated.
    A word one space after the names, in capitals (TEXT, INT=1) or in brackets ([N]), is the
    value type; otherwise (the description starts further away) the flag is a switch. Lines
    that do not look like flags (descriptions, positionals, headings) are ignored."""
    flags: list[Flag] = []
    seen: set[str] = set()
    for line in text.splitlines():
        match = FLAG_LINE.match(line)
        if not match:
            continue
        names = tuple(name.strip() for name in match.group(1).split(","))
        flag = make_flag(names, match.group(2) or "", match.group(3) or "")
        if flag.key not in seen:
            seen.add(flag.key)
            flags.append(flag)
    return flags


def make_flag(names: tuple[str, ...], type_word: str, rest: str) -> Flag:
    """A Flag from its names, the word after them and the rest of its help line."""
    if type_word.startswith("["):
        return Flag(names, "optional", type_word.strip("[]"), "REQUIRED" in rest)
    if VALUE_TYPE.match(type_word):
        type_name = type_word.split("=", 1)[0]
        return Flag(names, "one", type_name, "REQUIRED" in rest)
    return Flag(names, "none", "", False)


def read_command_flags(binary: str, spec: CommandSpec, env: dict[str, str]) -> list[Flag]:
    """The flags `binary <command> --help` lists; [] (and a warning) when that fails."""
    try:
        result = subprocess.run([binary, *spec.words, "--help"], stdin=subprocess.DEVNULL,
                                capture_output=True, env=env, timeout=SETUP_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as error:
        print(f"cli-fuzz: warning: {spec.name or 'meshplan'} --help: {error}", file=sys.stderr)
        return []
    if result.returncode != 0:
        print(f"cli-fuzz: warning: {spec.name or 'meshplan'} --help exited "
              f"{result.returncode}; fuzzing it without flags", file=sys.stderr)
    return parse_help_flags(result.stdout.decode("utf-8", "replace"))

# ---------------------------------------------------------------------------------------------
# Fixtures


@dataclasses.dataclass(frozen=True)
class Fixtures:
    """The pristine input files every case directory starts with (name -> bytes).

    mutable: the kinds of file a case may mutate ("plan", "topology", ...) -> fixture name;
    topology is absent when `topo show` failed at start-up."""
    files: dict[str, bytes]
    mutable: dict[str, str]
    schemes: tuple[str, ...] = ()  # `plan --list-schemes`: the first word of each line


def make_fixtures(binary: str, env: dict[str, str], workdir: str) -> Fixtures:
    """Creates the plan and topology files with the binary itself (in workdir/fixtures).

    Raises SetupError when the plan cannot be made; a topology that cannot be shown only
    disables topology mutation (with a warning)."""
    directory = os.path.join(workdir, "fixtures")
    os.mkdir(directory)
    plan = subprocess.run([binary, *PLAN_FIXTURE_ARGS], cwd=directory, stdin=subprocess.DEVNULL,
                          capture_output=True, env=env, timeout=SETUP_TIMEOUT_S)
    plan_path = os.path.join(directory, PLAN_FILE)
    if plan.returncode != 0 or not os.path.isfile(plan_path):
        raise SetupError(f"cannot make the seed plan ({shlex.join(PLAN_FIXTURE_ARGS)}): exit "
                         f"{plan.returncode}: {plan.stderr.decode('utf-8', 'replace').strip()}")
    with open(plan_path, "rb") as handle:
        files = {PLAN_FILE: handle.read()}
    mutable = {"plan": PLAN_FILE}
    topology = subprocess.run([binary, *TOPOLOGY_FIXTURE_ARGS], cwd=directory,
                              stdin=subprocess.DEVNULL, capture_output=True, env=env,
                              timeout=SETUP_TIMEOUT_S)
    if topology.returncode == 0 and topology.stdout:
        files[TOPOLOGY_FILE] = topology.stdout
        mutable["topology"] = TOPOLOGY_FILE
    else:
        print(f"cli-fuzz: warning: {shlex.join(TOPOLOGY_FIXTURE_ARGS)} failed (exit "
              f"{topology.returncode}); no topology mutation", file=sys.stderr)
    files.update({SWEEP_FILE: SWEEP_FIXTURE_TEXT, DOCS_FILE: DOCS_FIXTURE_TEXT,
                  MODEL_FILE: MODEL_FIXTURE_TEXT, NCCL_LOG_FILE: NCCL_LOG_FIXTURE_TEXT,
                  READ_ONLY_FILE: files.get(TOPOLOGY_FILE, files[PLAN_FILE])})
    mutable.update({"sweep": SWEEP_FILE, "docs": DOCS_FILE, "model": MODEL_FILE,
                    "nccl-log": NCCL_LOG_FILE})
    listing = subprocess.run([binary, "plan", "--list-schemes"], stdin=subprocess.DEVNULL,
                             capture_output=True, env=env, timeout=SETUP_TIMEOUT_S)
    schemes = tuple(line.split()[0] for line in listing.stdout.decode("utf-8", "replace").splitlines()
                    if line.strip())
    if listing.returncode != 0 or not schemes:
        raise SetupError(f"cannot list the schemes (plan --list-schemes): exit {listing.returncode}")
    return Fixtures(files, mutable, schemes)

# ---------------------------------------------------------------------------------------------
# File mutation


def split_lines(data: bytes) -> list[bytes]:
    """data as lines with their newlines kept (so joining them gives data back)."""
    return data.splitlines(keepends=True) or [b""]


def delete_line(rng: random.Random, data: bytes) -> bytes:
    """data without one of its lines."""
    lines = split_lines(data)
    del lines[rng.randrange(len(lines))]
    return b"".join(lines)


def duplicate_line(rng: random.Random, data: bytes) -> bytes:
    """data with one line repeated (a duplicate TOML key or table, usually)."""
    lines = split_lines(data)
    index = rng.randrange(len(lines))
    line = lines[index] if lines[index].endswith(b"\n") else lines[index] + b"\n"
    lines.insert(index, line)
    return b"".join(lines)


def change_number(rng: random.Random, data: bytes) -> bytes:
    """data with one number replaced by an edge value or a neighbour (unchanged: no number)."""
    matches = list(NUMBER_IN_TEXT.finditer(data))
    if not matches:
        return data
    match = rng.choice(matches)
    try:
        number = int(match.group(0))
        neighbours = [str(number + 1).encode(), str(number * 2).encode(),
                      str(number - 1).encode()]
    except ValueError:
        neighbours = [match.group(0) + b"1"]
    replacement = rng.choice(NUMBER_EDGE_VALUES + tuple(neighbours))
    return data[:match.start()] + replacement + data[match.end():]


def truncate(rng: random.Random, data: bytes) -> bytes:
    """A prefix of data."""
    return data[:rng.randrange(len(data) + 1)]


def insert_bytes(rng: random.Random, data: bytes) -> bytes:
    """data with 1 to 16 random or TOML-structural bytes inserted somewhere."""
    structural = b'[]="\n#{},.\\\'\x00\xff'
    count = rng.randint(1, 16)
    noise = bytes(rng.choice(structural) if rng.random() < 0.5 else rng.randrange(256)
                  for _ in range(count))
    position = rng.randrange(len(data) + 1)
    return data[:position] + noise + data[position:]


def swap_keys(rng: random.Random, data: bytes) -> bytes:
    """data with the keys of two `key = value` lines swapped (unchanged: fewer than two)."""
    lines = split_lines(data)
    keyed = [index for index, line in enumerate(lines) if KEY_LINE.match(line)]
    if len(keyed) < 2:
        return data
    first, second = rng.sample(keyed, 2)
    a, b = KEY_LINE.match(lines[first]), KEY_LINE.match(lines[second])
    lines[first] = a.group(1) + b.group(2) + a.group(3) + lines[first][a.end():]
    lines[second] = b.group(1) + a.group(2) + b.group(3) + lines[second][b.end():]
    return b"".join(lines)


MUTATORS: tuple[Callable[[random.Random, bytes], bytes], ...] = (
    delete_line, duplicate_line, change_number, truncate, insert_bytes, swap_keys)


def mutate(rng: random.Random, data: bytes) -> bytes:
    """data after 1 to 3 random mutations; the same rng state gives the same result."""
    for _ in range(rng.randint(*MUTATIONS_PER_FILE)):
        data = rng.choice(MUTATORS)(rng, data)
    return data

# ---------------------------------------------------------------------------------------------
# Case generation


@dataclasses.dataclass(frozen=True)
class Case:
    """One command line to run.

    argv: the full command, binary first; files: the inputs its directory starts with
    (relative name -> bytes, possibly in subdirectories, which are made; READ_ONLY_FILE gets
    mode 0444, EMPTY_DIR is always created); directories: more (empty) directories to make.
    checks_topology: on exit 0, the cluster file the run wrote (a new or changed file in the
    case directory, else its stdout) must pass `topo validate`.
    copies: 0 for an ordinary case; N for a concurrent --append case, which runs argv N times at
    once (after one run alone first when append_existing) and then checks append_file."""
    index: int
    argv: tuple[str, ...]
    files: dict[str, bytes]
    directories: tuple[str, ...] = ()
    checks_topology: bool = False
    copies: int = 0
    append_existing: bool = False
    append_file: str = ""

    @property
    def command_line(self) -> str:
        """The command, shell-quoted (shell_word): pasted into bash, it runs this argv (a
        concurrent case: its copies in the background, then `wait`)."""
        command = " ".join(shell_word(arg) for arg in self.argv)
        if not self.copies:
            return command
        alone = f"{command}; " if self.append_existing else ""
        return f"{alone}for i in $(seq {self.copies}); do {command} & done; wait"

    @property
    def expected_rows(self) -> int:
        """The data rows a concurrent --append case's file must end with."""
        return self.copies + (1 if self.append_existing else 0)


def shell_word(arg: str) -> str:
    """arg quoted for bash: shlex.quote when every character is printable, else an ANSI-C
    quoted $'...' word with the unprintable characters escaped (so no raw control byte
    reaches a terminal)."""
    if arg.isprintable():
        return shlex.quote(arg)
    pieces = []
    for char in arg:
        code = ord(char)
        if char in "\\'":
            pieces.append("\\" + char)
        elif char.isprintable():
            pieces.append(char)
        elif code < 0x100:
            pieces.append(f"\\x{code:02x}")
        elif code < 0x10000:
            pieces.append(f"\\u{code:04x}")
        else:
            pieces.append(f"\\U{code:08x}")
    return "$'" + "".join(pieces) + "'"


class CaseBuilder:
    """Draws one case's arguments from its own rng; collects the mutated files it refers to.

    Holds no state across cases: build_case makes a new builder per case."""

    def __init__(self, rng: random.Random, command: CommandSpec, fixtures: Fixtures):
        self.rng = rng
        self.command = command
        self.fixtures = fixtures
        self.files = dict(fixtures.files)
        self.mutant_count = 0

    # -- files --

    def mutant(self, kind: str) -> str:
        """The name of a new mutated copy of the fixture of this kind, added to the case."""
        self.mutant_count += 1
        source = self.fixtures.mutable[kind]
        stem, dot, extension = source.rpartition(".")
        name = f"mut{self.mutant_count}-{stem}{dot}{extension}"
        self.files[name] = mutate(self.rng, self.fixtures.files[source])
        return name

    def file_value(self, kind: str, valid: Sequence[str] = ()) -> str:
        """A file argument of this kind: the valid fixture, a mutant, a listed name or a bad
        path."""
        roll = self.rng.random()
        has_kind = kind in self.fixtures.mutable
        if has_kind and roll < 0.3:
            return self.fixtures.mutable[kind]
        if has_kind and roll < 0.75:
            return self.mutant(kind)
        if valid and roll < 0.9:
            return self.rng.choice(valid)
        return self.rng.choice(GENERIC_PATHS)

    def topology_value(self, shipped: Sequence[str] = SHIPPED_TOPOLOGIES) -> str:
        """A cluster argument: a shipped name, the topology file, a mutant or a bad value."""
        roll = self.rng.random()
        if roll < 0.4:
            return self.rng.choice(shipped)
        if roll < 0.9 and "topology" in self.fixtures.mutable:
            return self.file_value("topology")
        return self.rng.choice(("no-such-cluster",) + GENERIC_PATHS + EDGE_VALUES[:4])

    def positional(self) -> list[str]:
        """The command's positional argument (possibly none, possibly a bad one)."""
        kind = self.command.positional
        if kind is None:
            return []
        leave_out = 0.03 if self.command.positional_required else 0.25
        if self.rng.random() < leave_out:
            return []
        if kind == "plan":
            return [self.file_value("plan")]
        if kind == "nccl-log":
            return [self.nccl_log_value()]
        return [self.topology_value()]

    def nccl_log_value(self) -> str:
        """A nccl-tests log path: the fixture, a mutant, the fixture under a path over 400
        characters, /dev/zero (the reader stops at its cap), another kind of file or a bad
        path."""
        roll = self.rng.random()
        if roll < 0.3:
            return NCCL_LOG_FILE
        if roll < 0.65:
            return self.mutant("nccl-log")
        if roll < 0.75:
            self.files[LONG_NCCL_LOG] = self.fixtures.files[NCCL_LOG_FILE]
            return LONG_NCCL_LOG
        if roll < 0.88:
            return self.rng.choice(NCCL_LOG_EDGE_PATHS)
        return self.rng.choice(GENERIC_PATHS)

    # -- values --

    def domain(self, flag: Flag, chosen: set[str]) -> str:
        """Which value pool a flag draws from, given the command and the other chosen flags."""
        if "--simulate" in chosen:
            simulated = SIMULATION_DOMAINS.get(self.command.name, {})
            for name in flag.names:
                if name in simulated:
                    return simulated[name]
        for name in flag.names:
            if (self.command.name, name) in COMMAND_FLAG_DOMAINS:
                return COMMAND_FLAG_DOMAINS[(self.command.name, name)]
        for name in flag.names:
            if name in FLAG_DOMAINS:
                return FLAG_DOMAINS[name]
        return TYPE_DOMAINS.get(flag.type_name, "text")

    def valid_value(self, domain: str) -> str:
        """A plausible value of the domain (files and clusters included)."""
        if domain == "seq":
            pool = SMALL_SEQS if self.rng.random() < SMALL_SEQ_SHARE else LARGE_SEQS
            return self.rng.choice(pool)
        if domain == "topology":
            return self.topology_value()
        if domain == "bench-topology":
            return self.topology_value(BENCH_TOPOLOGIES)
        if domain == "sim-topology":
            return self.topology_value(SMALL_TOPOLOGIES)
        if domain == "model":
            return self.file_value("model", SHIPPED_MODELS)
        if domain == "sweep-file":
            return self.file_value("sweep", (TOPOLOGY_FILE, PLAN_FILE))
        if domain == "output":
            return self.rng.choice(OUTPUT_PATHS)
        if domain == "output-dir":
            return self.rng.choice(OUTPUT_DIRS)
        if domain == "topo-output":
            if self.rng.random() < TOPOLOGY_OUTPUT_SHARE:
                return self.rng.choice(TOPOLOGY_OUTPUT_PATHS)
            return self.rng.choice(OUTPUT_PATHS)
        if domain == "input-dir":
            return self.rng.choice(INPUT_DIRS)
        if domain == "mask" and self.rng.random() < 0.1:
            return "docs:" + self.mutant("docs")
        if domain == "schemes":
            return self.scheme_list()
        return self.rng.choice(VALID_VALUES.get(domain, VALID_VALUES["text"]))

    def scheme_list(self) -> str:
        """One to three of the binary's schemes, comma-separated; sometimes one twice."""
        names = self.fixtures.schemes
        picked = self.rng.sample(names, self.rng.randint(1, min(3, len(names))))
        if self.rng.random() < 0.1:
            picked.append(picked[0])
        return ",".join(picked)

    def value(self, flag: Flag, chosen: set[str]) -> str:
        """A value for the flag: mostly valid, sometimes an edge value or a path."""
        domain = self.domain(flag, chosen)
        roll = self.rng.random()
        if roll < VALUE_VALID_SHARE or (domain in PATH_DOMAINS and roll < 0.9):
            return self.valid_value(domain)
        if roll < VALUE_VALID_SHARE + VALUE_EDGE_SHARE:
            gpu_domain = domain in ("gpus", "sim-gpus")
            return self.rng.choice(GPU_EDGE_VALUES if gpu_domain else EDGE_VALUES)
        return self.rng.choice(GENERIC_PATHS)

    # -- arguments --

    def spelled(self, flag: Flag, value: Optional[str]) -> list[str]:
        """The tokens for a flag and its value, in one of the spellings the parser accepts."""
        name = flag.key
        if flag.short and self.rng.random() < SHORT_FORM_SHARE:
            name = flag.short
        if value is None:
            return [name]
        if name.startswith("--") and self.rng.random() < EQUALS_FORM_SHARE:
            return [f"{name}={value}"]
        return [name, value]

    def choose_flags(self, flags: Sequence[Flag]) -> list[Flag]:
        """The flags a case sets: 0 to MAX_DRAWN_FLAGS of them, required ones mostly, --help
        rarely."""
        ordinary = [flag for flag in flags if not flag.is_help() and not flag.required]
        chosen = self.rng.sample(ordinary, self.rng.randint(0, min(MAX_DRAWN_FLAGS,
                                                                   len(ordinary))))
        chosen += [flag for flag in flags
                   if flag.required and self.rng.random() < REQUIRED_FLAG_SHARE]
        chosen += [flag for flag in flags
                   if flag.is_help() and self.rng.random() < HELP_FLAG_SHARE]
        return chosen

    def flag_items(self, flags: Sequence[Flag]) -> list[tuple[str, list[str]]]:
        """(flag key, tokens) for each chosen flag."""
        chosen = self.choose_flags(flags)
        keys = {flag.key for flag in chosen}
        items = []
        for flag in chosen:
            if flag.arity == "none" or (flag.arity == "optional" and self.rng.random() < 0.5):
                items.append((flag.key, self.spelled(flag, None)))
            else:
                items.append((flag.key, self.spelled(flag, self.value(flag, keys))))
        return items

    def add_oddities(self, items: list[tuple[str, list[str]]]) -> None:
        """Sometimes appends a structural mistake: an unknown flag, a flag twice, an extra
        positional, or a trailing flag whose value is missing."""
        if self.rng.random() < ODDITY_SHARE:
            items.append(("", ["--no-such-flag"]))
        if items and self.rng.random() < ODDITY_SHARE:
            items.append(self.rng.choice(items))
        if self.rng.random() < ODDITY_SHARE:
            items.append(("", ["extra-argument"]))
        if items and self.rng.random() < ODDITY_SHARE:
            key, tokens = items[-1]
            items[-1] = (key, tokens[:1])

    def apply_cost_guards(self, items: list[tuple[str, list[str]]]) -> None:
        """Keeps the case cheap: small clusters for --simulate, small bench runs, calibrate
        always refused, execute with a short receive timeout half the time (always with
        --inject-silent)."""
        keys = {key for key, _ in items}
        if "--simulate" in keys:
            items.extend((flag, [flag, value])
                         for flag, value in SIMULATION_DEFAULTS.get(self.command.name, ())
                         if flag not in keys)
        if self.command.name == "bench":
            items.extend((flag, [flag, value]) for flag, value in BENCH_DEFAULTS
                         if flag not in keys)
        elif self.command.name == "calibrate":
            if "--help" not in keys:
                items.append(("--quick", ["--quick"]))
                if self.rng.random() >= CALIBRATE_VALID_SHARE:
                    flag, value = self.rng.choice(CALIBRATE_POISON)
                    items.append((flag, [flag] if value is None else [flag, value]))
        elif self.command.name == "execute":
            if "--inject-silent" in keys:
                items[:] = [item for item in items if item[0] != EXECUTE_TIMEOUT_ARGS[0]]
                items.append((EXECUTE_TIMEOUT_ARGS[0], list(EXECUTE_TIMEOUT_ARGS)))
            elif EXECUTE_TIMEOUT_ARGS[0] not in keys and self.rng.random() < EXECUTE_TIMEOUT_SHARE:
                items.append((EXECUTE_TIMEOUT_ARGS[0], list(EXECUTE_TIMEOUT_ARGS)))

    def arguments(self, flags: Sequence[Flag]) -> list[str]:
        """The arguments after the command words: flags in random order, the positional at a
        random place among them."""
        if not self.command.words:
            return list(self.rng.choice(TOP_LEVEL_ARGVS))
        items = self.flag_items(flags)
        self.add_oddities(items)
        self.rng.shuffle(items)
        self.apply_cost_guards(items)  # after the shuffle: a guard must not lose its value
        positional = self.positional()
        if positional:
            items.insert(self.rng.randint(0, len(items)), ("", positional))
        return [token for _, tokens in items for token in tokens]


def build_case(index: int, seed: int, binary: str, command_flags: dict[str, list[Flag]],
               fixtures: Fixtures) -> Case:
    """Case `index` of `seed`: a pure function of its arguments (random.Random(seed + index))."""
    rng = random.Random(seed + index)
    if rng.random() < APPEND_CASE_SHARE:
        return build_append_case(index, rng, binary, fixtures)
    command = rng.choices(COMMANDS, weights=[spec.weight for spec in COMMANDS])[0]
    builder = CaseBuilder(rng, command, fixtures)
    arguments = builder.arguments(command_flags.get(command.name, []))
    # The directory of the long -o path exists, so that a write there can succeed.
    directories = (os.path.dirname(LONG_TOPOLOGY_OUTPUT),) if command.writes_topology else ()
    return Case(index, (binary, *command.words, *arguments), builder.files, directories,
                checks_topology=command.writes_topology)


def build_append_case(index: int, rng: random.Random, binary: str, fixtures: Fixtures) -> Case:
    """A concurrent --append case: copies of `simulate` or `execute` (the 4-rank fixture plan,
    CSV rows appended to APPEND_CSV_FILE) that run at once."""
    command = "execute" if rng.random() < APPEND_EXECUTE_SHARE else "simulate"
    copies = rng.choice(APPEND_COPIES)
    existing = rng.random() < APPEND_EXISTING_SHARE
    return Case(index, (binary, *APPEND_COMMANDS[command]), dict(fixtures.files), copies=copies,
                append_existing=existing, append_file=APPEND_CSV_FILE)

# ---------------------------------------------------------------------------------------------
# Running and classifying


@dataclasses.dataclass(frozen=True)
class Settings:
    """Everything run_case needs besides the case."""
    workdir: str
    case_timeout_s: float
    memory_mib: int
    env: dict[str, str]


@dataclasses.dataclass(frozen=True)
class Outcome:
    """A case's result: its class, exit status (negative: the signal), kept output (at most
    KEPT_OUTPUT_BYTES each), run time, the leftover temporary files found, and detail: why a
    case whose exit status looked right failed (bad-output, an output that had to be refused)."""
    case: Case
    outcome_class: str
    returncode: Optional[int]
    stdout: bytes
    stderr: bytes
    seconds: float
    leftovers: tuple[str, ...]
    detail: str = ""

    @property
    def passed(self) -> bool:
        """True when the class is one of PASSING_CLASSES."""
        return self.outcome_class in PASSING_CLASSES


def case_environment() -> dict[str, str]:
    """The environment every case runs with: ours, with LC_ALL=C."""
    env = dict(os.environ)
    env["LC_ALL"] = "C"
    return env


def resource_limiter(memory_mib: int) -> Callable[[], None]:
    """A preexec_fn that caps the address space at memory_mib and disables core dumps.

    It runs in the forked child before exec and only calls setrlimit (resource is imported at
    module load, so nothing is imported or locked in the child)."""
    limit = memory_mib * 1024 * 1024

    def limit_child() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return limit_child


def materialize(case: Case, directory: str) -> None:
    """Writes the case's input files (making the directories they are in), its extra
    directories and the empty directory into its directory."""
    os.mkdir(os.path.join(directory, EMPTY_DIR))
    for name in case.directories:
        os.makedirs(os.path.join(directory, name), exist_ok=True)
    for name, data in case.files.items():
        path = os.path.join(directory, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(data)
        if name == READ_ONLY_FILE:
            os.chmod(path, 0o444)


def find_leftovers(directory: str) -> tuple[str, ...]:
    """Paths (relative to directory) of files whose name contains LEFTOVER_MARK, sorted."""
    found = []
    for root, _, names in os.walk(directory):
        for name in names:
            if LEFTOVER_MARK in name:
                found.append(os.path.relpath(os.path.join(root, name), directory))
    return tuple(sorted(found))


def kill_group(process: subprocess.Popen) -> None:
    """SIGKILLs the case's process group (its session, started for it alone).

    Called before the leader is reaped, so the group id is still the case's own."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def launch(argv: Sequence[str], cwd: str, settings: Settings, label: str) -> subprocess.Popen:
    """Starts a process: stdin /dev/null, stdout and stderr piped, a new session, the resource
    limits. Retries LAUNCH_ATTEMPTS times (the binary may be in the middle of being rebuilt);
    SetupError (naming label) when it still cannot be started."""
    for attempt in range(LAUNCH_ATTEMPTS):
        try:
            return subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    env=settings.env, start_new_session=True,
                                    preexec_fn=resource_limiter(settings.memory_mib))
        except OSError as error:
            if attempt + 1 == LAUNCH_ATTEMPTS:
                raise SetupError(f"cannot start {label}: {error}") from error
            time.sleep(LAUNCH_RETRY_S)
    raise AssertionError("unreachable")


Run = Tuple[Optional[int], bytes, bytes, bool]  # returncode, stdout, stderr, timed out


def collect_killed(process: subprocess.Popen) -> tuple[bytes, bytes]:
    """The output of a process whose group was killed (a note when its pipes stay open)."""
    try:
        return process.communicate(timeout=KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        return b"", b"cli-fuzz: the killed case kept its output pipes open\n"


def run_process(argv: Sequence[str], cwd: str, settings: Settings, timeout_s: float,
                label: str) -> Run:
    """Runs argv in cwd (see launch): (returncode, stdout, stderr, timed out).

    Past timeout_s the whole process group is killed. returncode is None only when even the
    killed group would not let go."""
    process = launch(argv, cwd, settings, label)
    try:
        stdout, stderr = process.communicate(timeout=timeout_s)
        return process.returncode, stdout, stderr, False
    except subprocess.TimeoutExpired:
        kill_group(process)
    stdout, stderr = collect_killed(process)
    return process.returncode, stdout, stderr, True


def run_concurrently(argv: Sequence[str], copies: int, cwd: str, settings: Settings,
                     timeout_s: float, label: str) -> list[Run]:
    """Starts `copies` processes of argv in cwd at once and waits for all of them; past
    timeout_s (for all together) the groups of those still running are killed."""
    processes: list[subprocess.Popen] = []
    try:
        for copy in range(copies):
            processes.append(launch(argv, cwd, settings, f"{label} copy {copy + 1}"))
    except SetupError:
        for process in processes:
            kill_group(process)
            collect_killed(process)
        raise
    deadline = time.monotonic() + timeout_s
    runs: list[Optional[Run]] = [None] * copies
    for copy, process in enumerate(processes):
        try:
            stdout, stderr = process.communicate(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            break
        runs[copy] = (process.returncode, stdout, stderr, False)
    if all(run is not None for run in runs):
        return runs  # type: ignore[return-value]
    running = [process.poll() is None for process in processes]
    for process, alive in zip(processes, running):
        if alive:
            kill_group(process)
    for copy, process in enumerate(processes):
        if runs[copy] is None:
            stdout, stderr = collect_killed(process)
            runs[copy] = (process.returncode, stdout, stderr, running[copy])
    return runs  # type: ignore[return-value]


def error_lines_ok(stderr_text: str) -> bool:
    """True when stderr has exactly one `meshplan: error: ` line and it is the last non-empty
    line (notes, warnings and progress lines may come before it)."""
    lines = [line for line in stderr_text.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith(ERROR_PREFIX)]
    return len(errors) == 1 and lines[-1] == errors[0]


def crashed(returncode: Optional[int], stderr_text: str) -> bool:
    """True for a run killed by a signal (or never reaped) or with a crash marker on stderr."""
    return returncode is None or returncode < 0 or any(
        marker in stderr_text for marker in CRASH_MARKERS)


def classify(returncode: Optional[int], stderr_text: str, timed_out: bool,
             leftovers: Sequence[str]) -> str:
    """The outcome class (ALL_CLASSES). Precedence: timeout, crash, leftover, then the exit
    status: 0 ok; 2 refused and 1 failed-run when the error line is right; else bad-exit."""
    if timed_out:
        return CLASS_TIMEOUT
    if crashed(returncode, stderr_text):
        return CLASS_CRASH
    if leftovers:
        return CLASS_LEFTOVER
    if returncode == 0:
        return CLASS_OK
    if returncode == 2 and error_lines_ok(stderr_text):
        return CLASS_REFUSED
    if returncode == 1 and error_lines_ok(stderr_text):
        return CLASS_FAILED_RUN
    return CLASS_BAD_EXIT


def must_refuse(argv: Sequence[str]) -> bool:
    """True when the command names PROC_OUTPUT as an output (as a value, or --flag=value) and
    no flag that only prints (help, a listing): it must exit 2, checking its outputs before it
    does any work. The value is drawn only for output flags."""
    if any(arg in INFO_FLAGS for arg in argv):
        return False
    return any(arg == PROC_OUTPUT or arg.endswith("=" + PROC_OUTPUT) for arg in argv[1:])


def written_files(case: Case, directory: str) -> list[str]:
    """Regular files in the case directory (relative paths, sorted) that the run created or
    changed: not among the case's input files, or with other contents."""
    found = []
    for root, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(root, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            relative = os.path.relpath(path, directory)
            if relative in case.files:
                with open(path, "rb") as handle:
                    if handle.read() == case.files[relative]:
                        continue
            found.append(relative)
    return sorted(found)


STDOUT_TOPOLOGY = "cli-fuzz-stdout.toml"  # a run's stdout, saved for topo validate


def check_written_topology(case: Case, directory: str, stdout: bytes,
                           settings: Settings) -> str:
    """For a command that writes a cluster file and exited 0: runs `meshplan topo validate` on
    each file it wrote in its directory (-o FILE) and on its stdout when that is not empty
    (no -o, or -o -). Returns why one was not valid, or "" when all were."""
    targets = written_files(case, directory)
    if stdout.strip():
        with open(os.path.join(directory, STDOUT_TOPOLOGY), "wb") as handle:
            handle.write(stdout)
        targets.append(STDOUT_TOPOLOGY)
    for target in targets:
        argv = (case.argv[0], "topo", "validate", os.path.join(".", target))
        returncode, _, stderr, timed_out = run_process(
            argv, directory, settings, settings.case_timeout_s, f"case {case.index} validate")
        if timed_out or returncode != 0:
            status = "timed out" if timed_out else f"exited {returncode}"
            what = "its stdout" if target == STDOUT_TOPOLOGY else f"the written {target}"
            reason = first_lines(stderr, 1)
            return (f"exit 0, but `topo validate` {status} on {what}"
                    + (f": {reason[0]}" if reason else ""))
    return ""


def check_append_csv(path: str, expected_rows: int) -> str:
    """Why the file concurrent --append runs wrote is wrong, or "" when it is right: UTF-8 CSV
    ending in a newline, one header (the first row, first field `plan`), then expected_rows
    rows with as many fields as the header."""
    name = os.path.basename(path)
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        return f"{name}: cannot be read ({error.strerror})"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return f"{name}: not UTF-8 ({error})"
    if not text.endswith("\n"):
        return f"{name}: does not end with a newline"
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as error:
        return f"{name}: not CSV ({error})"
    headers = [number for number, row in enumerate(rows, 1) if row[:1] == ["plan"]]
    if headers != [1]:
        return f"{name}: header rows at lines {headers or 'none'}, expected line 1 alone"
    width = len(rows[0])
    for number, row in enumerate(rows[1:], 2):
        if len(row) != width:
            return f"{name}: row {number} has {len(row)} fields, the header {width}"
    if len(rows) - 1 != expected_rows:
        return f"{name}: {len(rows) - 1} data rows, expected {expected_rows}"
    return ""


def run_case(case: Case, settings: Settings) -> Outcome:
    """Runs one case in a fresh directory under settings.workdir (removed afterwards) and
    classifies it."""
    if case.copies:
        return run_append_case(case, settings)
    directory = tempfile.mkdtemp(prefix=f"case-{case.index:06d}-", dir=settings.workdir)
    detail = ""
    try:
        materialize(case, directory)
        start = time.monotonic()
        returncode, stdout, stderr, timed_out = run_process(
            case.argv, directory, settings, settings.case_timeout_s, f"case {case.index}")
        seconds = time.monotonic() - start
        leftovers = find_leftovers(directory)
        outcome_class = classify(returncode, stderr.decode("utf-8", "replace"), timed_out,
                                 leftovers)
        if outcome_class in (CLASS_OK, CLASS_FAILED_RUN) and must_refuse(case.argv):
            outcome_class = CLASS_BAD_EXIT
            detail = (f"exit {returncode} with the output {PROC_OUTPUT}: it must be refused "
                      "(exit 2) before any work")
        elif (outcome_class == CLASS_OK and case.checks_topology
              and not any(arg in INFO_FLAGS for arg in case.argv)):
            detail = check_written_topology(case, directory, stdout, settings)
            if detail:
                outcome_class = CLASS_BAD_OUTPUT
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return Outcome(case, outcome_class, returncode, stdout[:KEPT_OUTPUT_BYTES],
                   stderr[:KEPT_OUTPUT_BYTES], seconds, leftovers, detail)


def run_append_case(case: Case, settings: Settings) -> Outcome:
    """Runs a concurrent --append case: argv alone first when append_existing, then `copies`
    of it at once, all within the case timeout. Every run must exit 0 (else bad-exit) and the
    file must then hold one header and one row per run (else bad-output)."""
    directory = tempfile.mkdtemp(prefix=f"case-{case.index:06d}-", dir=settings.workdir)
    label = f"case {case.index}"
    try:
        materialize(case, directory)
        start = time.monotonic()
        runs: list[Run] = []
        if case.append_existing:
            runs.append(run_process(case.argv, directory, settings, settings.case_timeout_s,
                                    label))
        if not any(run[3] for run in runs):
            remaining = max(0.0, settings.case_timeout_s - (time.monotonic() - start))
            runs += run_concurrently(case.argv, case.copies, directory, settings, remaining,
                                     label)
        seconds = time.monotonic() - start
        leftovers = find_leftovers(directory)
        outcome_class, detail = classify_append(case, runs, leftovers, directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    returncode = next((run[0] for run in runs if run[0] != 0), 0)
    stdout = b"".join(run[1] for run in runs)
    stderr = b"".join(b"".join(b"[run %d] %s\n" % (number, line)
                               for line in run[2].splitlines())
                      for number, run in enumerate(runs, 1))
    return Outcome(case, outcome_class, returncode, stdout[:KEPT_OUTPUT_BYTES],
                   stderr[:KEPT_OUTPUT_BYTES], seconds, leftovers, detail)


def classify_append(case: Case, runs: Sequence[Run], leftovers: Sequence[str],
                    directory: str) -> tuple[str, str]:
    """(class, detail) of a concurrent --append case: timeout, crash or leftover as for any
    case; bad-exit when a run did not exit 0; bad-output when the CSV is wrong; else ok."""
    if any(run[3] for run in runs):
        return CLASS_TIMEOUT, ""
    if any(crashed(run[0], run[2].decode("utf-8", "replace")) for run in runs):
        return CLASS_CRASH, ""
    if leftovers:
        return CLASS_LEFTOVER, ""
    failed = [(number, run[0]) for number, run in enumerate(runs, 1) if run[0] != 0]
    if failed:
        return CLASS_BAD_EXIT, (f"{len(failed)} of {len(runs)} runs did not exit 0 (run "
                                f"{failed[0][0]}: exit {failed[0][1]})")
    problem = check_append_csv(os.path.join(directory, case.append_file), case.expected_rows)
    return (CLASS_BAD_OUTPUT, problem) if problem else (CLASS_OK, "")

# ---------------------------------------------------------------------------------------------
# Campaign


@dataclasses.dataclass(frozen=True)
class Campaign:
    """What a fuzzing run produced: outcomes in case order and the wall time it took."""
    outcomes: list[Outcome]
    seconds: float


def case_indices(selected: Sequence[int]) -> Iterator[int]:
    """The cases to run: the selected ones, or 0, 1, 2, ... without end."""
    return iter(selected) if selected else itertools.count()


def run_campaign(cases: Iterable[int], make_case: Callable[[int], Case], settings: Settings,
                 jobs: int, seconds: Optional[float],
                 on_outcome: Callable[[Outcome], None]) -> Campaign:
    """Runs cases on `jobs` threads until they run out or, when seconds is set, until that long
    has passed (no new case starts after it; running ones finish)."""
    start = time.monotonic()
    outcomes: list[Outcome] = []
    pending: set[concurrent.futures.Future] = set()

    def collect(futures: Iterable[concurrent.futures.Future]) -> None:
        for future in futures:
            outcome = future.result()
            outcomes.append(outcome)
            on_outcome(outcome)

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for index in cases:
            if seconds is not None and time.monotonic() - start >= seconds:
                break
            while len(pending) >= jobs:
                done, pending = concurrent.futures.wait(
                    pending, return_when=concurrent.futures.FIRST_COMPLETED)
                collect(done)
            pending.add(pool.submit(run_case, make_case(index), settings))
        collect(concurrent.futures.as_completed(pending))
    outcomes.sort(key=lambda outcome: outcome.case.index)
    return Campaign(outcomes, time.monotonic() - start)

# ---------------------------------------------------------------------------------------------
# Reporting


def first_lines(data: bytes, count: int) -> list[str]:
    """The first count lines of data, decoded, control characters escaped, each shortened to
    SHOWN_LINE_CHARS."""
    text = data.decode("utf-8", "replace")
    lines = [line.encode("unicode_escape").decode("ascii") if not line.isprintable() else line
             for line in text.splitlines()[:count]]
    return [line if len(line) <= SHOWN_LINE_CHARS else line[:SHOWN_LINE_CHARS] + "..."
            for line in lines]


def describe_failure(outcome: Outcome, seed: int) -> str:
    """A failing case for the report: class, exit, command, first stderr lines, leftovers."""
    status = "killed" if outcome.returncode is None else f"exit {outcome.returncode}"
    lines = [f"FAIL [{outcome.outcome_class}] case {outcome.case.index} (seed {seed}): "
             f"{status} after {outcome.seconds:.2f} s",
             f"  command: {outcome.case.command_line}"]
    if outcome.leftovers:
        lines.append(f"  leftover: {', '.join(outcome.leftovers)}")
    if outcome.detail:
        lines.append(f"  check: {outcome.detail}")
    stderr = first_lines(outcome.stderr, STDERR_LINES_SHOWN)
    lines.append("  stderr:" + ("" if stderr else " (empty)"))
    lines.extend(f"    {line}" for line in stderr)
    return "\n".join(lines)


def summary_table(outcomes: Sequence[Outcome]) -> str:
    """class -> count, every class listed, with the total."""
    counts = {name: 0 for name in ALL_CLASSES}
    for outcome in outcomes:
        counts[outcome.outcome_class] += 1
    width = max(len(name) for name in ALL_CLASSES)
    rows = [f"  {'class':<{width}}  cases"]
    rows += [f"  {name:<{width}}  {counts[name]:5d}" for name in ALL_CLASSES]
    rows.append(f"  {'total':<{width}}  {len(outcomes):5d}")
    return "\n".join(rows)


def print_report(campaign: Campaign, seed: int, jobs: int) -> None:
    """The summary and up to MAX_FAILURES_SHOWN failing cases, on stdout."""
    outcomes = campaign.outcomes
    failures = [outcome for outcome in outcomes if not outcome.passed]
    print(f"cli-fuzz: {len(outcomes)} cases ran in {campaign.seconds:.1f} s "
          f"(seed {seed}, jobs {jobs})")
    print(summary_table(outcomes))
    for outcome in failures[:MAX_FAILURES_SHOWN]:
        print(describe_failure(outcome, seed))
    if len(failures) > MAX_FAILURES_SHOWN:
        print(f"... and {len(failures) - MAX_FAILURES_SHOWN} more failing cases (--keep DIR "
              "saves them all)")
    if failures:
        print(f"cli-fuzz: FAIL: {len(failures)} failing cases; the command runs in a directory "
              "holding the case's input files (--keep DIR writes them; --case N reruns one)")
    else:
        print("cli-fuzz: PASS: every case was ok, refused or failed-run")


def keep_failure(outcome: Outcome, directory: str) -> None:
    """Writes a failing case to directory/case-N/: command.txt, run.sh (runs it in files/),
    stdout, stderr, result.txt, and files/ with the inputs it started with."""
    case_dir = os.path.join(directory, f"case-{outcome.case.index:06d}")
    files_dir = os.path.join(case_dir, "files")
    shutil.rmtree(files_dir, ignore_errors=True)  # a copy kept by an earlier run
    os.makedirs(files_dir)
    materialize(outcome.case, files_dir)
    write_file(os.path.join(case_dir, "command.txt"), outcome.case.command_line + "\n")
    write_file(os.path.join(case_dir, "run.sh"),
               "#!/bin/bash\n# Reruns the case in a scratch copy of its input files.\n"
               'set -e\nhere=$(cd "$(dirname "$0")" && pwd)\n'
               'scratch=$(mktemp -d)\ncp -a "$here/files/." "$scratch/"\ncd "$scratch"\n'
               f"export LC_ALL=C\n{outcome.case.command_line}\n", mode=0o755)
    write_file(os.path.join(case_dir, "result.txt"),
               f"class: {outcome.outcome_class}\nexit: {outcome.returncode}\n"
               f"seconds: {outcome.seconds:.3f}\nleftovers: {' '.join(outcome.leftovers)}\n"
               f"check: {outcome.detail}\n")
    with open(os.path.join(case_dir, "stdout"), "wb") as handle:
        handle.write(outcome.stdout)
    with open(os.path.join(case_dir, "stderr"), "wb") as handle:
        handle.write(outcome.stderr)


def write_file(path: str, text: str, mode: int = 0o644) -> None:
    """Writes text to path (UTF-8, control characters as they are) with the given mode."""
    with open(path, "w", encoding="utf-8", errors="surrogateescape") as handle:
        handle.write(text)
    os.chmod(path, mode)


def verbose_line(outcome: Outcome) -> str:
    """One line per case for -v: index, class, time and the command (shortened)."""
    command = outcome.case.command_line
    if len(command) > 200:
        command = command[:200] + "..."
    command = command.encode("unicode_escape").decode("ascii")
    return f"case {outcome.case.index:6d} {outcome.outcome_class:<10} {outcome.seconds:6.2f} s  " \
           f"{command}"

# ---------------------------------------------------------------------------------------------
# Command line


class SetupError(Exception):
    """The fuzzer cannot start: a missing binary, or a fixture the binary cannot make."""


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """The fuzzer's options (argparse exits 2 on bad usage)."""
    parser = argparse.ArgumentParser(
        prog="cli-fuzz.py", description="Black-box command-line fuzzer for meshplan "
        "(docs/cli-fuzz.md). Exit 0: every case passed; 1: some failed; 2: bad usage.")
    parser.add_argument("--meshplan", required=True, metavar="PATH",
                        help="the meshplan binary to fuzz")
    parser.add_argument("--seconds", type=float, default=DEFAULT_SECONDS,
                        help="start no new case after this long (default %(default)s)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED,
                        help="case N draws from random.Random(SEED + N) (default %(default)s)")
    parser.add_argument("--jobs", type=int, default=DEFAULT_JOBS,
                        help="cases run at once (default %(default)s)")
    parser.add_argument("--case-timeout-s", type=float, default=DEFAULT_CASE_TIMEOUT_S,
                        help="a case running longer is a timeout (default %(default)s)")
    parser.add_argument("--memory-mib", type=int, default=DEFAULT_MEMORY_MIB,
                        help="address-space limit per case (default %(default)s)")
    parser.add_argument("--keep", metavar="DIR",
                        help="write every failing case (command, output, input files) here")
    parser.add_argument("--case", type=int, action="append", default=[], metavar="N",
                        help="run only case N (repeatable; ignores --seconds): reproduces a "
                        "failing case")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print the flags learned and one line per case")
    args = parser.parse_args(argv)
    problems = [text for bad, text in (
        (args.seconds < 0, "--seconds must be >= 0"), (args.jobs < 1, "--jobs must be >= 1"),
        (args.case_timeout_s <= 0, "--case-timeout-s must be > 0"),
        (args.memory_mib < 64, "--memory-mib must be >= 64"),
        (any(n < 0 for n in args.case), "--case must be >= 0")) if bad]
    if problems:
        parser.error("; ".join(problems))
    return args


def resolve_binary(path: str) -> str:
    """The absolute path of an executable file; SetupError otherwise."""
    absolute = os.path.abspath(path)
    if not os.path.isfile(absolute) or not os.access(absolute, os.X_OK):
        raise SetupError(f"{path}: not an executable file")
    return absolute


def learn_flags(binary: str, env: dict[str, str], verbose: bool) -> dict[str, list[Flag]]:
    """Each command's flags from its --help (command name -> flags)."""
    command_flags = {}
    for spec in COMMANDS:
        if not spec.words:
            continue
        command_flags[spec.name] = read_command_flags(binary, spec, env)
        if verbose:
            described = " ".join(flag.key + ("=" + flag.type_name if flag.arity != "none" else "")
                                 for flag in command_flags[spec.name])
            print(f"cli-fuzz: {spec.name}: {described}")
    return command_flags


def set_up(args: argparse.Namespace, env: dict[str, str],
           workdir: str) -> tuple[str, dict[str, list[Flag]], Fixtures]:
    """The binary's absolute path, its commands' flags and the fixtures; SetupError when any
    of them cannot be had."""
    binary = resolve_binary(args.meshplan)
    try:
        command_flags = learn_flags(binary, env, args.verbose)
        fixtures = make_fixtures(binary, env, workdir)
    except (OSError, subprocess.SubprocessError) as error:
        raise SetupError(str(error)) from error
    return binary, command_flags, fixtures


def main(argv: Sequence[str]) -> int:
    """Runs the fuzzer; returns the exit status (0 pass, 1 failures, 2 bad usage)."""
    args = parse_args(argv)
    env = case_environment()
    workdir = tempfile.mkdtemp(prefix="meshplan-cli-fuzz-")
    try:
        try:
            binary, command_flags, fixtures = set_up(args, env, workdir)
        except SetupError as error:
            print(f"cli-fuzz: error: {error}", file=sys.stderr)
            return 2
        settings = Settings(workdir, args.case_timeout_s, args.memory_mib, env)

        def make_case(index: int) -> Case:
            return build_case(index, args.seed, binary, command_flags, fixtures)

        def on_outcome(outcome: Outcome) -> None:
            if args.verbose:
                print(verbose_line(outcome), flush=True)

        try:
            campaign = run_campaign(case_indices(args.case), make_case, settings, args.jobs,
                                    None if args.case else args.seconds, on_outcome)
        except SetupError as error:
            print(f"cli-fuzz: error: {error}", file=sys.stderr)
            return 2
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print_report(campaign, args.seed, args.jobs)
    failures = [outcome for outcome in campaign.outcomes if not outcome.passed]
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        for outcome in failures:
            keep_failure(outcome, args.keep)
        print(f"cli-fuzz: wrote {len(failures)} failing cases to {args.keep}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
