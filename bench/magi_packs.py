"""Packed documents drawn as MagiAttention's CP benchmark draws them (bench/packed_documents.py).

MagiAttention 2c64135, exps/dist_attn/benchmark/utils.py DatasetSampler, with the settings of
exps/dist_attn/benchmark_conf.py (SAMPLE_CONFIG: chunk_ratio 0.25, binned, no drop): every
dataset sample of the binned length histogram (benchmark/datasets/default/
doc_length_distribution.csv, copied below) takes its bin's midpoint; samples longer than
pack_len x chunk_ratio are cut into chunks of that length plus their tail; the samples are
shuffled and packed in order into packs of pack_len tokens, a sample that does not fit being split
over two packs. The histogram holds 13.5 million samples; drawing them in proportion (DRAW
samples, the histogram's shares) gives the same packs in distribution, not the benchmark's own
(its RNG is numpy's; this is Python's, seeded).

Python 3 standard library only.
"""
import random

# (first, last, samples) per bin of the histogram.
HISTOGRAM = [
    (0, 10, 30254), (11, 50, 391188), (51, 100, 699596), (101, 200, 1377757),
    (201, 500, 3794735), (501, 1024, 3316785), (1025, 2048, 2106566), (2049, 4096, 988525),
    (4097, 8192, 410002), (8193, 16384, 173574), (16385, 32768, 115007),
    (32769, 65536, 18428), (65537, 131072, 22513), (131073, 196608, 18284),
]
CHUNK_RATIO = 0.25
DRAW = 200_000


def packs(pack_len, count, seed=42):
    """`count` packs of pack_len tokens: each a list of document lengths summing to pack_len."""
    rng = random.Random(seed)
    total = sum(n for _, _, n in HISTOGRAM)
    chunk = int(pack_len * CHUNK_RATIO)
    samples = []
    for first, last, n in HISTOGRAM:
        length = (first + last) // 2
        for _ in range(round(DRAW * n / total)):
            samples.extend([chunk] * (length // chunk))
            if length % chunk:
                samples.append(length % chunk)
    rng.shuffle(samples)
    out, tail, i = [], 0, 0
    while len(out) < count and i < len(samples):
        pack, left = [], pack_len
        if tail:
            pack.append(tail)
            left -= tail
            tail = 0
        while left > 0 and i < len(samples):
            if samples[i] <= left:
                pack.append(samples[i])
                left -= samples[i]
            else:
                pack.append(left)
                tail = samples[i] - left
                left = 0
            i += 1
        if left == 0:
            out.append(pack)
    return out


def padded(pack, multiple):
    """The pack's documents padded to `multiple` tokens each (TransformerEngine's THD split pads
    every document to 2 x CP)."""
    return [-(-length // multiple) * multiple for length in pack]


def causal_area(pack):
    """Visible (q, k) pairs of a causal document mask over the pack (MagiAttention's attn_area)."""
    return sum(length * (length + 1) // 2 for length in pack)
