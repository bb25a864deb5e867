// Package bench measures Engram's vector indexes against their peers:
// recall@k against exact ground truth, single-thread queries per second,
// build time and memory per vector, every system in the same run on the
// same data. The command line is engram bench ann. It also times Recall
// on a synthetic store (engram bench recall) and loads the HTTP API
// (engram bench load).
//
// # Basics
//
// A [Dataset] comes from [LoadDir] (TEXMEX files: NAME_base.fvecs,
// NAME_query.fvecs and an optional NAME_groundtruth_cosine.ivecs) or from
// [Synthetic] (a seeded Gaussian mixture); either way it carries the exact
// cosine neighbours of every query, computed by [GroundTruth] when no file
// gives them. [Run] measures the systems named in [Options] and returns a
// [Report] of [Row] values, which [WriteJSON] and [WriteTable] render.
// [ReadFvecs], [ReadIvecs], [WriteFvecs] and [WriteIvecs] handle the file
// format.
//
//	Dataset ──▶ Run ──▶ Report ──▶ WriteJSON / WriteTable
//	             │
//	             ├─ engram-flat   index.Flat, exact
//	             ├─ engram-hnsw   index.HNSW, ef swept, also built on every core
//	             ├─ chromem-go    exact, at most 100 queries
//	             ├─ hnswlib       python3-hnswlib via hnswlib.py, ef swept
//	             └─ Options.Extra any other System, such as coder-hnsw (bench/peers)
//
// [RunLoad] is the other kind of benchmark here: a bounded load on a
// running engram serve (engram bench load starts one in process). Its
// clients send appends and recalls over loopback HTTP for a fixed time,
// one request each at a time, and it reports throughput and p50/p99 per
// operation in a [LoadResult], which [WriteLoadTable] and [WriteLoadJSON]
// render; then [Verify] reads every acknowledged append back through the
// API. It refuses a server off the loopback ([ErrNotLoopback]). A [Sweep]
// (append only, recall only, their mix, one client) judges issue 15's
// targets from four such runs, and a [ClientsCurve] sets append-only runs
// at several client counts beside [ProbeFsync], the disk's fsync rate.
//
// [RunLocomo] and [RunLongMemEval] score Recall itself on published
// conversation benchmarks (engram bench locomo, engram bench
// longmemeval): each conversation or question haystack goes into a
// fresh in-memory store through the normal pipeline (Write, extraction,
// Flush), every question is asked from a new session of the same user,
// and the turns (LoCoMo) or sessions (LongMemEval) of the recalled items
// are ranked and scored, in one of the [ConversationModes].
//
// Every in-process system satisfies [System] (and optionally
// [ParallelBuilder] and [Sizer]); more can be passed in Options.Extra.
// Peers that only a benchmark needs live in the nested module bench/peers,
// so that their dependencies stay out of Engram's go.mod: its command runs
// the same comparison with github.com/coder/hnsw v0.6.1 (coder-hnsw) added
// in Options.Extra, and draws recall against QPS as a PNG with gonum's
// plot package.
//
// How each figure is measured:
//
//   - recall_at_k: for each query, the share of its exact k nearest ids
//     among the k returned; the mean over queries.
//   - qps: the queries run one after another on one goroutine under
//     GOMAXPROCS 1 (so libraries that fan out, and the garbage collector,
//     share one core), up to five passes until 0.1 s has passed; the
//     fastest pass counts. hnswlib.py does the same with
//     knn_query(num_threads=1) over the whole query batch.
//   - build_seconds: inserting every base vector on one goroutine under
//     GOMAXPROCS 1 (hnswlib: num_threads=1); rows with build_threads=N
//     come from a second build with N goroutines calling Add at once.
//   - bytes_per_vector: the index's own Bytes() where it has one
//     (params say mem=index); otherwise the growth of the live Go heap
//     across the build, each side measured after two GCs (mem=heap),
//     counting the copy of the vectors every system is given; for hnswlib
//     the growth of the Python process's resident set across the build
//     (mem=rss), which includes hnswlib's fixed costs. The run's log also
//     shows the heap growth of Sizer systems and hnswlib's own layout
//     arithmetic, for comparison.
//
// The hnswlib peer needs a python3 that imports hnswlib and numpy: on
// Debian, apt-get install python3-hnswlib python3-numpy. The interpreter is
// Options.Python if set, else the first of /usr/bin/python3 (Debian's,
// which sees dist-packages) and python3 on PATH (a pyenv or venv python3
// usually comes first on PATH and cannot see Debian's packages) that
// imports both. Without one, the peer is skipped with a message naming
// what was tried. The script is embedded in the binary.
//
// # Caveats
//
// Run changes GOMAXPROCS while it times; run nothing else in the process.
// Timings on a shared or small machine vary by several per cent between
// runs; compare systems within one run, as the report does.
//
// Peers are measured as released, and some releases are weak: coder/hnsw
// v0.6.1 evicts arbitrary candidates from its bounded heaps (fixed upstream
// after the release), so its recall stays near 0.2 at any ef; see the
// coderSystem notes in bench/peers/coder.go. chromem-go scans in plain Go
// without SIMD and is capped at Options.SlowQueries queries (its rows say
// queries=N). Debian's python3-hnswlib is compiled for the x86-64
// baseline (SSE, no AVX instructions in the shared object), so a pip build
// with -march=native may be faster than the hnswlib measured here.
//
// The synthetic generator's noise is isotropic inside each cluster, where
// real embeddings have decaying spectra; it stands in for their scale and
// cluster structure, not their fine geometry, so confirm conclusions on
// real data (--data).
//
// A load run's clients share the machine with the server they measure
// (in engram bench load, the same process), so its throughput is a floor
// for a server with cores of its own, and on a shared machine it varies
// by tens of per cent between runs; compare runs made back to back.
//
// Harnesses never need ../shared/data: tests that use it skip without it,
// and everything else runs on synthetic data.
package bench
