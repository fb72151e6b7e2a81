package report

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/trussdev/truss/internal/browsertest"
)

// browser starts a headless Chromium with a fresh profile and returns a
// context for its first tab.
func browser(t *testing.T) context.Context {
	return browsertest.Start(t, browsertest.Options{Width: 1100, Height: 1400, Timeout: 2 * time.Minute})
}

// chartInfo is what the page reports about one rendered chart.
type chartInfo struct {
	ID      string    `json:"id"`
	Width   float64   `json:"width"`
	Height  float64   `json:"height"`
	Bars    int       `json:"bars"`
	Painted int       `json:"painted"`
	Texts   int       `json:"texts"`
	Widths  []float64 `json:"widths"`
}

type pageInfo struct {
	Charts []chartInfo `json:"charts"`
	Bg     string      `json:"bg"`
	Fg     string      `json:"fg"`
	Tables int         `json:"tables"`
	Rows   int         `json:"rows"`
	Title  string      `json:"title"`
	// Scrolls names the tables wider than their place on the page.
	Scrolls []string `json:"scrolls"`
}

// inspect reads the rendered page: each chart's laid-out size, its bars
// with a non-zero rendered width and a resolved fill, its laid-out labels,
// and the colours the page resolved to.
const inspect = `(() => {
  const charts = [...document.querySelectorAll('figure')].map(fig => {
    const svg = fig.querySelector('svg');
    const box = svg.getBoundingClientRect();
    const bars = [...svg.querySelectorAll('g.row rect')].filter(r => r.getBBox().width > 0);
    const painted = bars.filter(r => { const f = getComputedStyle(r).fill; return f && f !== 'none' && !f.startsWith('rgba(0, 0, 0, 0'); });
    const texts = [...svg.querySelectorAll('text')].filter(t => t.getComputedTextLength() > 0);
    const widths = [...svg.querySelectorAll('g.row')].map(g => { const r = g.querySelector('rect'); return r ? r.getBBox().width : 0; });
    return {id: fig.id, width: box.width, height: box.height, bars: bars.length, painted: painted.length, texts: texts.length, widths};
  });
  return {charts, bg: getComputedStyle(document.documentElement).backgroundColor, fg: getComputedStyle(document.body).color,
    tables: document.querySelectorAll('table').length, rows: document.querySelectorAll('tbody tr').length, title: document.title,
    scrolls: [...document.querySelectorAll('table')].filter(t => {
      const w = t.parentElement;
      return w.scrollWidth > w.clientWidth + 1 || t.getBoundingClientRect().right > document.documentElement.clientWidth + 1;
    }).map(t => (t.closest('section') || {}).id || t.id || '(a table)')};
})()`

func TestHTMLInChromium(t *testing.T) {
	ctx := browser(t)
	rep := loadSample(t)
	var buf bytes.Buffer
	if err := rep.HTML(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	pageURL := (&url.URL{Scheme: "file", Path: path}).String()

	for _, scheme := range []string{"light", "dark"} {
		t.Run(scheme, func(t *testing.T) {
			tab, cancel := chromedp.NewContext(ctx)
			defer cancel()
			var log browsertest.Log
			log.Listen(t, tab)
			if _, err := chromedp.Call(tab, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}); err != nil {
				t.Fatal(err)
			}
			// A laptop's page width: no table may scroll sideways.
			if _, err := chromedp.Call(tab, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: 1280, Height: 900, DeviceScaleFactor: 1}); err != nil {
				t.Fatal(err)
			}
			if err := chromedp.Do(tab, chromedp.Navigate(pageURL), chromedp.WaitVisible(chromedp.CSS("#chart-resolved svg"))); err != nil {
				t.Fatal(err)
			}
			info, err := chromedp.Run(tab, chromedp.Evaluate[pageInfo](inspect))
			if err != nil {
				t.Fatal(err)
			}
			shot, err := chromedp.Run(tab, chromedp.Screenshot(chromedp.CSS("#chart-resolved svg")))
			if err != nil {
				t.Fatal(err)
			}
			// Let late console messages arrive before reading the log.
			_ = chromedp.Do(tab, chromedp.Sleep(200*time.Millisecond))
			problems, requests := log.Snapshot()
			for _, p := range problems {
				t.Errorf("the page reported: %s", p)
			}
			for _, u := range requests {
				if u != pageURL {
					t.Errorf("the page requested %s (only the page itself may load)", u)
				}
			}

			if info.Title != "Benchmark report" || info.Tables < 8 || info.Rows < 48 {
				t.Errorf("page: title %q, %d tables, %d rows", info.Title, info.Tables, info.Rows)
			}
			if len(info.Scrolls) > 0 {
				t.Errorf("tables wider than a 1280 px page: %v", info.Scrolls)
			}
			if len(info.Charts) != 5 {
				t.Fatalf("%d charts rendered, want 5: %+v", len(info.Charts), info.Charts)
			}
			for _, c := range info.Charts {
				rows := len(rep.Arms)
				if c.ID == "chart-diff" {
					rows = len(rep.Pairs) // a row per pair
				}
				if c.Width < 300 || c.Height < 60 {
					t.Errorf("%s: laid out %gx%g", c.ID, c.Width, c.Height)
				}
				if c.Bars < rows || c.Painted != c.Bars {
					t.Errorf("%s: %d bars rendered, %d painted; want at least %d, all painted", c.ID, c.Bars, c.Painted, rows)
				}
				if c.Texts < 2*rows {
					t.Errorf("%s: %d labels laid out", c.ID, c.Texts)
				}
			}
			// The difference's bar starts at zero, the middle of its axis,
			// and is as long as the difference on a ±m axis.
			if d := info.Charts[4]; d.ID != "chart-diff" || len(rep.Pairs) != 1 || math.Abs(d.Widths[0]-plotW*math.Abs(rep.Pairs[0].Diff)/(2*diffAxis(rep.Pairs))) > 0.5 {
				t.Errorf("difference chart %+v for pairs %+v", d, rep.Pairs)
			}
			// The resolved bars are as long as the rates.
			for i, a := range rep.Arms {
				if w := info.Charts[0].Widths[i]; math.Abs(w-plotW*a.Rate) > 0.5 {
					t.Errorf("%s: resolved bar %g units wide, want %g", a.Name, w, plotW*a.Rate)
				}
			}

			bg, fg := luminance(t, info.Bg), luminance(t, info.Fg)
			if scheme == "dark" && !(bg < 0.1 && fg > 0.6) || scheme == "light" && !(bg > 0.9 && fg < 0.1) {
				t.Errorf("%s scheme: background %s, text %s", scheme, info.Bg, info.Fg)
			}
			if n := barPixels(t, shot); n < 2000 {
				t.Errorf("the resolved chart's screenshot has %d bar-coloured pixels", n)
			}
		})
	}
}

// TestBrowserCheckFails: the checks above see broken pages — a resource the
// Content-Security-Policy refuses, an exception, a console error and a
// resource that fails to load — so their silence on the report means
// something.
func TestBrowserCheckFails(t *testing.T) {
	ctx := browser(t)
	path := filepath.Join(t.TempDir(), "broken.html")
	// The report's own Content-Security-Policy, and a stylesheet it
	// refuses: an asset added to the page later fails the test the same
	// way.
	broken := `<!DOCTYPE html><meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">` +
		`<title>broken</title><link rel="stylesheet" href="data:text/css,body{}"><div>x</div>`
	broken2 := `<!DOCTYPE html><title>broken</title><img src="missing.png"><script>console.error("boom"); noSuchFunction();</script>`
	path2 := filepath.Join(filepath.Dir(path), "broken2.html")
	for p, page := range map[string]string{path: broken, path2: broken2} {
		if err := os.WriteFile(p, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tab, cancel := chromedp.NewContext(ctx)
	defer cancel()
	var log browsertest.Log
	log.Listen(t, tab)
	for _, p := range []string{path, path2} {
		if err := chromedp.Do(tab, chromedp.Navigate((&url.URL{Scheme: "file", Path: p}).String()), chromedp.Sleep(300*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	problems, requests := log.Snapshot()
	all := strings.Join(problems, "\n")
	t.Logf("the broken pages reported:\n%s", all)
	for _, want := range []string{"Content Security Policy", "console.error", "noSuchFunction", "missing.png"} {
		if !strings.Contains(all, want) {
			t.Errorf("no problem mentions %q; got:\n%s", want, all)
		}
	}
	if len(requests) < 3 {
		t.Errorf("requests %q: the image's request was not seen", requests)
	}
}

// luminance is the relative luminance of a CSS rgb()/rgba() colour.
func luminance(t *testing.T, css string) float64 {
	t.Helper()
	var r, g, b float64
	s := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(css, "rgba("), "rgb("), ")")
	if _, err := fmt.Sscanf(s, "%g, %g, %g", &r, &g, &b); err != nil {
		t.Fatalf("colour %q: %v", css, err)
	}
	lin := func(c float64) float64 {
		c /= 255
		if c <= 0.04045 {
			return c / 12.92
		}
		return math.Pow((c+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(r) + 0.7152*lin(g) + 0.0722*lin(b)
}

// barPixels counts the blue pixels of the resolved chart's bars (blue well
// above red in both schemes' bar colours, in neither background).
func barPixels(t *testing.T, shot []byte) int {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	n := 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			if isBar(img, x, y) {
				n++
			}
		}
	}
	return n
}

func isBar(img image.Image, x, y int) bool {
	r, _, b, _ := img.At(x, y).RGBA()
	return int(b>>8)-int(r>>8) > 60
}
