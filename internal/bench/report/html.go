package report

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"

	"github.com/trussdev/truss/internal/termsafe"
)

// HTML writes the report as one self-contained HTML page: inline CSS, inline
// SVG charts, no script and no external resource (a Content-Security-Policy
// forbids loading any), light and dark by prefers-color-scheme.
//
// The page is written by pageWriter, which escapes every value from the
// results for the one context it is written into (htmlwriter.go). It does
// not use html/template: text/template's reflection would keep every
// exported method of every type in the truss binary (docs/bench.md).
func (r *Report) HTML(w io.Writer) error {
	runs, tasks, how := r.summary()
	charts, tables := r.charts(), r.tables()
	// Control characters in names are shown as <U+XXXX>, as in the
	// terminal; pageWriter escapes the rest.
	warnings := make([]string, len(r.Warnings))
	for i, w := range r.Warnings {
		warnings[i] = termsafe.String(w)
	}
	for i := range charts {
		c := &charts[i]
		for j := range c.Rows {
			row := &c.Rows[j]
			row.Label, row.Full = termsafe.String(row.Label), termsafe.String(row.Full)
			for k := range row.Segs {
				row.Segs[k].Tip = termsafe.String(row.Segs[k].Tip)
			}
		}
		for j := range c.Legend {
			c.Legend[j].Label = termsafe.String(c.Legend[j].Label)
		}
	}
	for i := range tables {
		t := &tables[i]
		for j := range t.Head {
			t.Head[j] = termsafe.String(t.Head[j])
		}
		for _, row := range t.Rows {
			for j := range row {
				c := &row[j]
				c.Text, c.Tip = termsafe.String(c.Text), termsafe.String(c.Tip)
				for k := range c.Marks {
					c.Marks[k].Tip = termsafe.String(c.Marks[k].Tip)
				}
			}
		}
	}

	bw := bufio.NewWriter(w)
	p := &pageWriter{w: bw}
	p.m(pageHead)
	p.m(markup(pageCSS))
	p.m("</style>\n</head>\n<body>\n<h1>Benchmark report</h1>\n<p>")
	p.count(runs, "run")
	p.m(" of ")
	p.count(tasks, "task")
	p.m(" on ")
	p.count(len(r.Arms), "arm")
	p.m(", from <code>")
	p.text(termsafe.String(r.Dir))
	p.m("</code>. ")
	p.text(how)
	p.m("</p>")
	if len(warnings) > 0 {
		p.m("\n<div class=\"warnings\"><p>Warnings:</p><ul>")
		for _, w := range warnings {
			p.m("\n<li>")
			p.text(w)
			p.m("</li>")
		}
		p.m("\n</ul></div>")
	}
	p.m("\n")
	for i := range charts {
		p.chart(&charts[i])
	}
	p.m("\n")
	for i := range tables {
		p.table(&tables[i])
	}
	p.m("\n</body>\n</html>\n")
	if p.err != nil {
		return p.err
	}
	return bw.Flush()
}

// contentSecurityPolicy lets the page load nothing: no script, no request;
// only its inline style sheet and data: images.
const contentSecurityPolicy = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

// pageHead is the page up to its style sheet (report.css), which is
// written next.
const pageHead markup = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="` + contentSecurityPolicy + `">
<meta name="color-scheme" content="light dark">
<title>Benchmark report</title>
<style>
`

// chart writes one chart: a figure with its caption and SVG.
func (p *pageWriter) chart(c *chart) {
	p.m("\n<figure")
	p.attr("id", c.ID)
	p.m(">\n<figcaption>")
	p.text(c.Title)
	p.m("</figcaption>\n<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\"")
	p.attr("viewBox", "0 0 "+f(c.W)+" "+f(c.H))
	p.num("width", c.W)
	p.num("height", c.H)
	p.m(` role="img"`)
	p.attr("aria-labelledby", c.ID+"-t "+c.ID+"-d")
	p.m(">\n<title")
	p.attr("id", c.ID+"-t")
	p.m(">")
	p.text(c.Title)
	p.m("</title>\n<desc")
	p.attr("id", c.ID+"-d")
	p.m(">")
	p.text(c.Desc)
	p.m("</desc>\n<g class=\"ticks\">")
	for _, t := range c.Ticks {
		p.m("\n<g class=\"tick\"><line")
		p.num("x1", t.X)
		p.num("x2", t.X)
		p.m(` y1="0"`)
		p.num("y2", c.AxisY)
		p.m("/><text")
		p.num("x", t.X)
		p.num("y", c.AxisY)
		p.m(` dy="16">`)
		p.text(t.Label)
		p.m("</text></g>")
	}
	p.m("\n</g>\n<line class=\"axis\"")
	p.num("x1", c.PlotX)
	p.num("x2", c.PlotEnd)
	p.num("y1", c.AxisY)
	p.num("y2", c.AxisY)
	p.m("/>")
	for i := range c.Rows {
		row := &c.Rows[i]
		p.m("\n<g class=\"row\">\n<text class=\"label\"")
		p.num("x", c.PlotX)
		p.m(` dx="-8"`)
		p.num("y", row.TextY)
		p.m("><title>")
		p.text(row.Full)
		p.m("</title>")
		p.text(row.Label)
		p.m("</text>")
		for _, s := range row.Segs {
			p.m("\n<rect")
			p.attr("class", s.Class)
			p.num("x", s.X)
			p.num("y", row.BarY)
			p.num("width", s.W)
			p.m(` height="16"><title>`)
			p.text(s.Tip)
			p.m("</title></rect>")
		}
		if row.Whisker {
			p.m("\n<g class=\"whisker\"><line")
			p.num("x1", row.WLo)
			p.num("x2", row.WHi)
			p.num("y1", row.WY)
			p.num("y2", row.WY)
			p.m("/><line")
			p.num("x1", row.WLo)
			p.num("x2", row.WLo)
			p.num("y1", row.CapY1)
			p.num("y2", row.CapY2)
			p.m("/><line")
			p.num("x1", row.WHi)
			p.num("x2", row.WHi)
			p.num("y1", row.CapY1)
			p.num("y2", row.CapY2)
			p.m("/></g>")
		}
		p.m("\n<text class=\"value\"")
		p.num("x", row.ValueX)
		p.num("y", row.TextY)
		p.m(">")
		p.text(row.Value)
		p.m("</text>\n</g>")
	}
	for _, l := range c.Legend {
		p.m("\n<g class=\"legend\"><rect")
		p.attr("class", l.Class)
		p.num("x", l.X)
		p.num("y", l.Y)
		p.m(` width="12" height="12"/><text`)
		p.num("x", l.TextX)
		p.num("y", l.TextY)
		p.m(">")
		p.text(l.Label)
		p.m("</text></g>")
	}
	p.m("\n</svg>\n</figure>")
}

// table writes one section: its heading, note and table (or the words
// said instead of an empty table).
func (p *pageWriter) table(t *table) {
	p.m("\n<section")
	p.attr("id", t.ID)
	p.m(">\n<h2>")
	p.text(t.Title)
	p.m("</h2>")
	if t.Note != "" {
		p.m("\n<p class=\"note\">")
		p.text(t.Note)
		p.m("</p>")
	}
	if len(t.Rows) == 0 && t.Empty != "" {
		p.m("\n<p>")
		p.text(t.Empty)
		p.m("</p>")
		p.m("\n</section>")
		return
	}
	p.m("\n<div class=\"scroll\"><table>\n<thead><tr>")
	left := t.Left()
	for i, h := range t.Head {
		p.m("<th")
		if left[i] {
			p.m(` class="t"`)
		}
		p.m(">")
		p.text(h)
		p.m("</th>")
	}
	p.m("</tr></thead>\n<tbody>")
	for _, row := range t.Rows {
		p.m("\n<tr>")
		for _, c := range row {
			p.cell(c)
		}
		p.m("</tr>")
	}
	p.m("\n</tbody>\n</table></div>")
	for _, a := range t.After {
		p.m("\n<p class=\"note\">")
		p.text(a)
		p.m("</p>")
	}
	p.m("\n</section>")
}

// cell writes one table cell: its marks (each a link to its run's ledger
// when it has one), or its text, linked when it has a link.
func (p *pageWriter) cell(c cell) {
	p.m("<td")
	if cl := c.Classes(); cl != "" {
		p.attr("class", cl)
	}
	p.m(">")
	switch {
	case len(c.Marks) > 0:
		for _, m := range c.Marks {
			if m.Link != "" {
				p.m("<a")
				p.attr("class", "m "+m.Class)
				p.href(m.Link)
				p.attr("title", m.Tip)
				p.m(">")
				p.text(m.Mark)
				p.m("</a>")
			} else {
				p.m("<span")
				p.attr("class", "m "+m.Class)
				p.attr("title", m.Tip)
				p.m(">")
				p.text(m.Mark)
				p.m("</span>")
			}
		}
	case c.Link != "":
		p.m("<a")
		p.href(c.Link)
		p.m("><code>")
		p.text(c.Text)
		p.m("</code></a>")
	default:
		p.text(c.Text)
	}
	p.m("</td>")
}

// WriteHTMLFile writes the HTML page to path atomically: a reader sees the
// previous file or the whole new one.
func (r *Report) WriteHTMLFile(path string) error {
	var buf bytes.Buffer
	if err := r.HTML(&buf); err != nil {
		return err
	}
	return writeFileAtomic(path, buf.Bytes())
}

// Chart geometry, in SVG user units.
const (
	chartW   = 760.0
	labelW   = 180.0 // arm names, right-aligned at labelW-8
	plotX    = labelW
	plotW    = 480.0
	rowH     = 28.0
	barH     = 16.0
	topPad   = 8.0
	axisH    = 26.0
	legendH  = 20.0
	legendW  = 190.0
	legendN  = 4 // legend items per line
	maxStack = 8 // series shown before "other"
	labelMax = 22
)

// chart is one SVG chart: rows of bars (one per arm) over a horizontal
// axis, with a legend when stacked.
type chart struct {
	ID, Title, Desc string
	W, H            float64
	AxisY, PlotX    float64
	PlotEnd         float64
	Ticks           []tick
	Rows            []chartRow
	Legend          []legendItem
}

type tick struct {
	X     float64
	Label string
}

type chartRow struct {
	Y, BarY, TextY float64
	Label, Full    string
	Segs           []seg
	// Whisker: the interval, with caps (rate chart only).
	Whisker          bool
	WLo, WHi         float64
	WY, CapY1, CapY2 float64
	Value            string
	ValueX           float64
}

type seg struct {
	X, W  float64
	Class string
	Tip   string
}

type legendItem struct {
	X, Y, TextX, TextY float64
	Class, Label       string
}

func newChart(id, title, desc string, rows int) chart {
	c := chart{ID: id, Title: title, Desc: desc, W: chartW, PlotX: plotX, PlotEnd: plotX + plotW}
	c.AxisY = topPad + float64(rows)*rowH
	c.H = c.AxisY + axisH
	return c
}

func (c *chart) row(i int, label string) chartRow {
	y := topPad + float64(i)*rowH
	return chartRow{Y: y, BarY: y + (rowH-barH)/2, TextY: y + rowH/2 + 4, Label: short(label, labelMax), Full: label}
}

func (c *chart) ticks(max float64, format func(float64) string) {
	step := niceStep(max / 4)
	for v := 0.0; v <= max+step/1e6; v += step {
		c.Ticks = append(c.Ticks, tick{X: plotX + plotW*v/max, Label: format(v)})
	}
}

// niceStep rounds x up to 1, 2, 2.5 or 5 times a power of ten.
func niceStep(x float64) float64 {
	if x <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= x-1e-12 {
			return m * p
		}
	}
	return 10 * p
}

func (c *chart) legend(labels []string) {
	top := c.AxisY + axisH
	for i, l := range labels {
		x := plotX - labelW + 8 + float64(i%legendN)*legendW
		y := top + float64(i/legendN)*legendH
		c.Legend = append(c.Legend, legendItem{X: x, Y: y, TextX: x + 16, TextY: y + 10, Class: fmt.Sprintf("s%d", i), Label: short(l, 22)})
	}
	if len(labels) > 0 {
		c.H = top + float64((len(labels)+legendN-1)/legendN)*legendH + 4
	}
}

func (r *Report) charts() []chart {
	if len(r.Arms) == 0 {
		return nil
	}
	var cs []chart

	// Resolved rate with Wilson interval.
	c := newChart("chart-resolved", "Resolved rate", "Resolved rate per arm with its Wilson 95 % interval.", len(r.Arms))
	c.ticks(1, func(v float64) string { return fmt.Sprintf("%.0f %%", 100*v) })
	for i, a := range r.Arms {
		row := c.row(i, a.Name)
		rate := a.Rate
		if math.IsNaN(rate) {
			rate = 0
		}
		row.Segs = []seg{{X: plotX, W: plotW * rate, Class: "bar", Tip: fmt.Sprintf("%s: %s, 95 %% CI %s", a.Name, pct(a.Rate), interval(a.Lo, a.Hi))}}
		row.Whisker = !math.IsNaN(a.Lo)
		row.WLo, row.WHi = plotX+plotW*a.Lo, plotX+plotW*a.Hi
		if !row.Whisker {
			row.WLo, row.WHi = plotX, plotX
		}
		row.WY = row.BarY + barH/2
		row.CapY1, row.CapY2 = row.BarY+2, row.BarY+barH-2
		row.Value, row.ValueX = pct(a.Rate), plotX+plotW+8
		c.Rows = append(c.Rows, row)
	}
	cs = append(cs, c)

	// Stacked shares of calls.
	stack := func(id, title, desc, unit string, keys []keyed, f func(*ArmStats) map[string]int) chart {
		series := make([]string, 0, maxStack)
		other := false
		for i, k := range keys {
			if i < maxStack-1 || len(keys) == maxStack {
				series = append(series, k.Key)
			} else {
				other = true
			}
		}
		labels := series
		if other {
			labels = append(append([]string{}, series...), "other")
		}
		c := newChart(id, title, desc, len(r.Arms))
		c.ticks(1, func(v float64) string { return fmt.Sprintf("%.0f %%", 100*v) })
		for i := range r.Arms {
			a := &r.Arms[i]
			m := f(a)
			total := sumValues(m)
			row := c.row(i, a.Name)
			row.Value, row.ValueX = fmt.Sprintf("%s %s", perRun(total, a.Runs), unit), plotX+plotW+8
			x := plotX
			add := func(j int, label string, n int) {
				if n == 0 || total == 0 {
					return
				}
				w := plotW * float64(n) / float64(total)
				row.Segs = append(row.Segs, seg{X: x, W: w, Class: fmt.Sprintf("s%d", j),
					Tip: fmt.Sprintf("%s · %s: %d (%s)", a.Name, label, n, share(n, total))})
				x += w
			}
			rest := total
			for j, k := range series {
				add(j, k, m[k])
				rest -= m[k]
			}
			if other {
				add(len(series), "other", rest)
			}
			c.Rows = append(c.Rows, row)
		}
		c.legend(labels)
		return c
	}
	// Results without behaviour (a graded predictions file) have no calls
	// and no edits: those charts are left out rather than drawn empty.
	if keys := r.toolKeys(); len(keys) > 0 {
		cs = append(cs, stack("chart-tools", "Tool mix", "Share of each arm's tool calls by tool name; calls per run at the right.", "calls/run", keys, func(a *ArmStats) map[string]int { return a.ToolCalls }))
	}
	if keys := r.capabilityKeys(); len(keys) > 0 {
		cs = append(cs, stack("chart-capabilities", "Capabilities", "Share of each arm's calls by capability; calls per run at the right.", "calls/run", keys, func(a *ArmStats) map[string]int { return a.CapabilityCalls }))
	}

	// Edit channels: files per run, stacked.
	c = newChart("chart-edits", "Edit channels", "Files changed per run by editor, patch and shell.", len(r.Arms))
	maxTotal := 0.0
	for _, a := range r.Arms {
		if a.Runs > 0 {
			maxTotal = math.Max(maxTotal, float64(a.EditsTotal())/float64(a.Runs))
		}
	}
	scale := niceStep(maxTotal/4) * 4
	if maxTotal == 0 {
		scale = 1
	}
	c.ticks(scale, func(v float64) string { return trimZeros(v) })
	for i, a := range r.Arms {
		row := c.row(i, a.Name)
		row.Value, row.ValueX = perRun(a.EditsTotal(), a.Runs)+" files/run", plotX+plotW+8
		x := plotX
		for j, ch := range []struct {
			name string
			n    int
		}{{"editor", a.Edits.Editor}, {"patch", a.Edits.Patch}, {"shell", a.Edits.Shell}} {
			if ch.n == 0 || a.Runs == 0 {
				continue
			}
			per := float64(ch.n) / float64(a.Runs)
			w := plotW * per / scale
			row.Segs = append(row.Segs, seg{X: x, W: w, Class: fmt.Sprintf("s%d", j),
				Tip: fmt.Sprintf("%s · %s: %.2f files/run (%s)", a.Name, ch.name, per, share(ch.n, a.EditsTotal()))})
			x += w
		}
		c.Rows = append(c.Rows, row)
	}
	c.legend([]string{"editor", "patch", "shell"})
	if maxTotal > 0 {
		cs = append(cs, c)
	}
	if d, ok := r.diffChart(); ok {
		cs = append(cs, d)
	}
	return cs
}

// diffAxis is the half-width of the difference chart's axis, symmetric
// around zero and wide enough for every pair's difference and interval.
func diffAxis(pairs []PairStats) float64 {
	m := 0.0
	for _, p := range pairs {
		for _, v := range []float64{p.Diff, p.Lo, p.Hi} {
			if !math.IsNaN(v) {
				m = math.Max(m, math.Abs(v))
			}
		}
	}
	return math.Min(2*niceStep(math.Max(m, 0.05)/2), 1)
}

// signedPP labels a tick of the difference axis: "0" at zero, else signed
// percentage points.
func signedPP(v float64) string {
	if math.Abs(v) < 1e-9 {
		return "0"
	}
	return fmt.Sprintf("%+.0f pp", 100*v)
}

// diffChart draws each pair's paired difference, rate A − rate B on the
// tasks both finished, as a bar from zero with its bootstrap interval; ok
// is false when no pair has a task in common.
func (r *Report) diffChart() (chart, bool) {
	var pairs []PairStats
	for _, p := range r.Pairs {
		if p.Tasks > 0 && !math.IsNaN(p.Diff) {
			pairs = append(pairs, p)
		}
	}
	if len(pairs) == 0 {
		return chart{}, false
	}
	m := diffAxis(pairs)
	x := func(v float64) float64 { return plotX + plotW*(v+m)/(2*m) }
	c := newChart("chart-diff", "Paired difference", "Rate A − rate B on the tasks both arms finished, with its bootstrap 95 % interval; right of zero, A resolved more.", len(pairs))
	for v := -m; v <= m+1e-9; v += m / 2 {
		c.Ticks = append(c.Ticks, tick{X: x(v), Label: signedPP(v)})
	}
	for i, p := range pairs {
		row := c.row(i, p.A+" − "+p.B)
		lo, hi := math.Min(0, p.Diff), math.Max(0, p.Diff)
		row.Segs = []seg{{X: x(lo), W: x(hi) - x(lo), Class: "bar", Tip: fmt.Sprintf("%s − %s: %s on %d tasks, 95 %% CI %s", p.A, p.B, pp(p.Diff), p.Tasks, ppInterval(p.Lo, p.Hi))}}
		row.Whisker = !math.IsNaN(p.Lo) && !math.IsNaN(p.Hi)
		row.WLo, row.WHi = x(0), x(0)
		if row.Whisker {
			row.WLo, row.WHi = x(p.Lo), x(p.Hi)
		}
		row.WY = row.BarY + barH/2
		row.CapY1, row.CapY2 = row.BarY+2, row.BarY+barH-2
		row.Value, row.ValueX = pp(p.Diff), plotX+plotW+8
		c.Rows = append(c.Rows, row)
	}
	return c, true
}

func trimZeros(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	for s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	if s[len(s)-1] == '.' {
		s = s[:len(s)-1]
	}
	return s
}
