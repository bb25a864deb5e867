package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Row is one measurement: one system at one parameter value. Its JSON form
// is the harness's output schema.
type Row struct {
	// System names the implementation: "engram-hnsw", "hnswlib", ...
	System string `json:"system"`
	// Dataset is [Dataset.Name].
	Dataset string `json:"dataset"`
	// N is the number of base vectors, Dim their dimension.
	N   int `json:"n"`
	Dim int `json:"dim"`
	// K is the number of neighbours asked for and measured.
	K int `json:"k"`
	// Params are the system's settings for this row as comma-separated
	// key=value pairs, such as "M=16,efc=200,ef=64,mem=index". Keys the
	// harness adds: mem (how bytes_per_vector was measured: index = the
	// index's own Bytes, heap = Go heap growth across the build, rss =
	// process resident-set growth), queries (when fewer than the run's
	// were measured) and build_threads.
	Params string `json:"params"`
	// RecallAtK is the mean, over queries, of the share of the exact k
	// nearest neighbours among the k returned.
	RecallAtK float64 `json:"recall_at_k"`
	// QPS is queries per second on one thread: the number of queries over
	// the wall time to run them one after another.
	QPS float64 `json:"qps"`
	// BuildSeconds is the wall time to insert every base vector, on one
	// thread unless Params says build_threads=N with N > 1.
	BuildSeconds float64 `json:"build_seconds"`
	// BytesPerVector is the memory the index holds over N.
	BytesPerVector float64 `json:"bytes_per_vector"`
}

// WriteJSON writes rows to w as an indented JSON array, always an array
// (empty rather than null).
func WriteJSON(w io.Writer, rows []Row) error {
	if rows == nil {
		rows = []Row{}
	}
	b, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteTable writes rep as an aligned text table for a terminal: a header
// naming the data and conditions, one line per row, then the skipped
// systems and why.
func WriteTable(w io.Writer, rep *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: n=%d dim=%d k=%d queries=%d; queries and builds on one thread unless build_threads says otherwise; kernel %s\n\n",
		rep.Dataset, rep.N, rep.Dim, rep.K, rep.Queries, rep.Kernel)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "system\tparams\trecall@%d\tQPS\tbuild s\tbytes/vector\t\n", rep.K)
	for _, r := range rep.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%.4f\t%.0f\t%.3f\t%.1f\t\n", r.System, r.Params, r.RecallAtK, r.QPS, r.BuildSeconds, r.BytesPerVector)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range rep.Skipped {
		fmt.Fprintf(&b, "\nskipped %s: %s", s.System, s.Reason)
	}
	if len(rep.Skipped) > 0 {
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}
