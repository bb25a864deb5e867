#!/usr/bin/env python3
"""hnswlib peer for `engram bench ann`.

Reads the same TEXMEX files as the Go harness (base and query .fvecs, a
ground-truth .ivecs of each query's nearest base ids), builds an hnswlib
cosine index on one thread, sweeps ef, and prints a JSON array of rows in the
harness's schema on stdout. Everything else goes to stderr.

Exit status: 0 on success, 3 when hnswlib or numpy cannot be imported (the
harness then skips the peer), 2 for bad arguments or files, 1 otherwise.

Memory: bytes_per_vector is the growth of this process's resident set
(/proc/self/statm) across init_index and add_items, divided by n, so it
counts everything hnswlib allocates, fixed costs included (hnswlib 0.6
keeps 65536 update mutexes, ~2.6 MB, whatever n is). Each row also carries
bytes_per_vector_formula, hnswlib's own layout arithmetic: the level-0
block (4*dim + 4 + 4*2M + 8 label bytes), the expected upper-level link
lists (4 + 4M bytes per level, 1/(M-1) levels per element on average) and
per-element bookkeeping (linkLists_ pointer, element level, a link-list
mutex, a label hash-map node: about 8 + 4 + 40 + 32 bytes).
"""

import argparse
import json
import os
import sys
import time


def read_vecs(np, path, dtype):
    """Returns the rows of a .fvecs (float32) or .ivecs (int32) file."""
    raw = np.fromfile(path, dtype=np.int32)
    if raw.size == 0:
        raise ValueError(f"{path}: empty")
    d = int(raw[0])
    if d < 1 or d > 1 << 16:
        raise ValueError(f"{path}: dimension {d} outside [1, 65536]")
    if raw.size % (d + 1) != 0:
        raise ValueError(f"{path}: size is not a whole number of {d}-dimensional vectors")
    rows = raw.reshape(-1, d + 1)
    if not (rows[:, 0] == d).all():
        raise ValueError(f"{path}: vectors of different dimensions")
    return np.ascontiguousarray(rows[:, 1:]).view(dtype)


def resident_bytes():
    """Resident set size of this process, or None off Linux."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base")
    ap.add_argument("--query")
    ap.add_argument("--truth")
    ap.add_argument("--dataset")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--M", type=int, default=16)
    ap.add_argument("--efc", type=int, default=200)
    ap.add_argument("--ef", default="10,16,24,32,48,64,96,128,192,256")
    ap.add_argument("--seed", type=int, default=100)
    ap.add_argument("--check", action="store_true", help="only check that hnswlib and numpy import")
    args = ap.parse_args()

    # Run as `python3 bench/hnswlib.py`, this file's directory comes first on
    # sys.path and `import hnswlib` would import this script itself.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    try:
        import hnswlib
        import numpy as np
    except ImportError as e:
        print(f"hnswlib.py: {e}", file=sys.stderr)
        return 3
    if args.check:
        print(json.dumps({"hnswlib": getattr(hnswlib, "__version__", "unknown"), "numpy": np.__version__}))
        return 0

    if not (args.base and args.query and args.truth and args.dataset):
        print("hnswlib.py: --base, --query, --truth and --dataset are required", file=sys.stderr)
        return 2
    try:
        efs = [int(x) for x in args.ef.split(",") if x]
        base = read_vecs(np, args.base, np.float32)
        queries = read_vecs(np, args.query, np.float32)
        truth = read_vecs(np, args.truth, np.int32)
    except (OSError, ValueError) as e:
        print(f"hnswlib.py: {e}", file=sys.stderr)
        return 2
    n, dim = base.shape
    k = args.k
    if queries.shape[1] != dim or truth.shape[0] != queries.shape[0] or truth.shape[1] < k or k < 1 or k > n:
        print(f"hnswlib.py: shapes do not fit: base {base.shape}, queries {queries.shape}, truth {truth.shape}, k {k}",
              file=sys.stderr)
        return 2
    truth_sets = [set(row[:k].tolist()) for row in truth]

    rss0 = resident_bytes()
    t0 = time.perf_counter()
    index = hnswlib.Index(space="cosine", dim=dim)
    index.init_index(max_elements=n, ef_construction=args.efc, M=args.M, random_seed=args.seed)
    index.set_num_threads(1)
    index.add_items(base, np.arange(n), num_threads=1)
    build = time.perf_counter() - t0
    rss1 = resident_bytes()
    m = args.M
    formula = (4 * dim + 4 + 4 * 2 * m + 8) + (4 + 4 * m) / (m - 1) + (8 + 4 + 40 + 32)
    bpv = (rss1 - rss0) / n if rss0 is not None and rss1 is not None else formula

    rows = []
    for ef in efs:
        index.set_ef(max(ef, k))
        index.knn_query(queries[: min(10, len(queries))], k=k, num_threads=1)  # warm-up
        # As the Go harness: up to 5 passes until 0.1 s, the fastest counts,
        # recall from the first.
        best, total, labels = None, 0.0, None
        for _ in range(5):
            t0 = time.perf_counter()
            got, _ = index.knn_query(queries, k=k, num_threads=1)
            elapsed = time.perf_counter() - t0
            if labels is None:
                labels = got
            best = elapsed if best is None else min(best, elapsed)
            total += elapsed
            if total >= 0.1:
                break
        hits = sum(len(truth_sets[i].intersection(labels[i].tolist())) for i in range(len(queries)))
        rows.append({
            "system": "hnswlib",
            "dataset": args.dataset,
            "n": int(n),
            "dim": int(dim),
            "k": k,
            "params": f"M={m},efc={args.efc},ef={ef},mem={'rss' if rss0 is not None else 'formula'}",
            "recall_at_k": hits / (k * len(queries)),
            "qps": len(queries) / best if best > 0 else 0.0,
            "build_seconds": build,
            "bytes_per_vector": bpv,
            "bytes_per_vector_formula": formula,
        })
    json.dump(rows, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
