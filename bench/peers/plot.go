package main

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/engramdb/engram/bench"
)

// param returns the value of key in a comma-separated key=value list.
func param(params, key string) (string, bool) {
	for _, kv := range strings.Split(params, ",") {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v, true
		}
	}
	return "", false
}

// seriesName names the plot line a row belongs to: its system, and for a
// parallel build, how many threads built it.
func seriesName(r bench.Row) string {
	if t, ok := param(r.Params, "build_threads"); ok && t != "1" {
		return fmt.Sprintf("%s (%s-thread build)", r.System, t)
	}
	return r.System
}

// systemColors fixes each built-in system's colour, so plots of different
// runs read alike; other systems take plotutil's palette.
var systemColors = map[string]color.RGBA{
	"engram-hnsw": {R: 0x1f, G: 0x5f, B: 0xbf, A: 0xff}, // blue
	"engram-flat": {R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, // green
	"chromem-go":  {R: 0xff, G: 0x8c, B: 0x00, A: 0xff}, // orange
	"coder-hnsw":  {R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, // purple
	"hnswlib":     {R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, // red
}

// zoomRecall is the lower recall bound of the plot's zoomed panel.
const zoomRecall = 0.9

// plotSeries is one line of the plot.
type plotSeries struct {
	name     string
	system   string
	parallel bool
	xys      plotter.XYs
}

// writePlot draws rep as a PNG to w: recall@k on the x axis, QPS on a
// logarithmic y axis, one line with points per system (a system's
// parallel-build rows get their own dashed line), in the order first
// measured. When some points sit below recall 0.9 and others above, a
// second panel zooms on the points above, where the systems worth
// comparing crowd together. Rows with no positive QPS cannot sit on a log axis and
// are left out; it returns an error when none is left.
func writePlot(w io.Writer, rep *bench.Report) error {
	var all []*plotSeries
	byName := map[string]*plotSeries{}
	lowest, highest := 1.0, 0.0
	for _, r := range rep.Rows {
		if !(r.QPS > 0) || math.IsInf(r.QPS, 0) || math.IsNaN(r.RecallAtK) {
			continue
		}
		name := seriesName(r)
		ps := byName[name]
		if ps == nil {
			ps = &plotSeries{name: name, system: r.System, parallel: name != r.System}
			byName[name] = ps
			all = append(all, ps)
		}
		ps.xys = append(ps.xys, plotter.XY{X: r.RecallAtK, Y: r.QPS})
		lowest, highest = min(lowest, r.RecallAtK), max(highest, r.RecallAtK)
	}
	if len(all) == 0 {
		return errors.New("plot: no rows with a positive QPS")
	}

	title := fmt.Sprintf("recall@%d against single-thread queries per second\n%s (n=%d, dim=%d)", rep.K, rep.Dataset, rep.N, rep.Dim)
	full, err := recallPlot(all, rep.K, title, max(0, lowest-0.02))
	if err != nil {
		return err
	}
	plots := []*plot.Plot{full}
	width := 10 * vg.Inch
	if lowest < zoomRecall && highest >= zoomRecall {
		from := 1.0 // the lowest recall at or above zoomRecall, rounded down
		for _, ps := range all {
			for _, xy := range ps.xys {
				if xy.X >= zoomRecall {
					from = min(from, xy.X)
				}
			}
		}
		from = max(zoomRecall, math.Floor((from-0.002)*100)/100)
		zoom, err := recallPlot(all, rep.K, fmt.Sprintf("zoom: recall@%d ≥ %.2f\n ", rep.K, from), from)
		if err != nil {
			return err
		}
		zoom.Legend = plot.NewLegend() // one legend is enough
		plots, width = append(plots, zoom), 16*vg.Inch
	}
	height := 6.5 * vg.Inch
	img := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(96))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: vg.Points(12), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(12)}
	canvases := plot.Align([][]*plot.Plot{plots}, tiles, dc)
	for i, p := range plots {
		p.Draw(canvases[0][i])
	}
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}

// recallPlot draws every series with recall ≥ minRecall, the y axis fitted
// to the points shown.
func recallPlot(all []*plotSeries, k int, title string, minRecall float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = fmt.Sprintf("recall@%d", k)
	p.Y.Label.Text = "queries per second (log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	minQ, maxQ := math.Inf(1), math.Inf(-1)
	for _, ps := range all {
		for _, xy := range ps.xys {
			if xy.X >= minRecall {
				minQ, maxQ = min(minQ, xy.Y), max(maxQ, xy.Y)
			}
		}
	}
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = false, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(8), vg.Points(8)
	for i, ps := range all {
		line, points, err := plotter.NewLinePoints(ps.xys)
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", ps.name, err)
		}
		var c color.Color = plotutil.Color(i)
		if sc, ok := systemColors[ps.system]; ok {
			c = sc
		}
		line.Color, line.Width = c, vg.Points(1.5)
		points.Color, points.Shape, points.Radius = c, plotutil.Shape(i), vg.Points(3.5)
		if ps.parallel {
			line.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
			points.Shape = draw.PyramidGlyph{}
		}
		p.Add(line, points)
		p.Legend.Add(ps.name, line, points)
	}
	// After Add, which widens the axes to hold every point.
	p.X.Min, p.X.Max = minRecall, 1+(1-minRecall)*0.01
	p.Y.Min, p.Y.Max = minQ/1.5, maxQ*1.5
	return p, nil
}
