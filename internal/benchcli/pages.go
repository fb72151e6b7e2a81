package benchcli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/trussdev/truss/internal/bench/report"
	"github.com/trussdev/truss/internal/hostfs"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/ledger/page"
)

// writePages writes the session page of every run's ledger into the
// directory beside the HTML report htmlPath (REPORT-pages/ for
// REPORT.html) and records them in rep.Pages, relative to the report. A
// ledger that does not verify with this installation's key (or vkey, when
// given) gets no page; the report warns of it and links its directory.
func writePages(rep *report.Report, htmlPath, vkey string) (int, error) {
	if vkey == "" {
		_, k, err := ledger.InstallationKey()
		if err != nil {
			return 0, err
		}
		vkey = k
	}
	dir := pagesDir(htmlPath)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	rep.Pages = map[string]string{}
	n := 0
	for _, task := range rep.Tasks {
		for i, c := range task.Cells {
			for _, run := range c.Runs {
				if run.Ledger.Dir == "" {
					continue
				}
				doc, err := page.Build([]string{run.Ledger.Dir}, page.Options{VKey: vkey})
				if err != nil {
					rep.Warnings = append(rep.Warnings, fmt.Sprintf("no session page for %s: %v", run.Ledger.Dir, err))
					continue
				}
				var buf bytes.Buffer
				if err := page.Write(&buf, doc); err != nil {
					return n, err
				}
				name := fmt.Sprintf("%s.%s.%d.html", fileName(task.InstanceID), fileName(rep.Arms[i].Name), run.Repeat)
				if err := hostfs.WriteFileAtomic(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
					return n, err
				}
				rep.Pages[run.Ledger.Dir] = filepath.Base(dir) + "/" + name
				n++
			}
		}
	}
	return n, nil
}

// fileName makes a task's or an arm's name a file name: letters, digits,
// '.', '_' and '-' kept, anything else '_'.
func fileName(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '_'
	}, s)
	if s == "" || strings.Trim(s, ".") == "" {
		return "_"
	}
	return s
}

// pagesDir is the directory of the session pages beside the HTML report
// htmlPath: REPORT-pages/ for REPORT.html.
func pagesDir(htmlPath string) string {
	base := strings.TrimSuffix(filepath.Base(htmlPath), filepath.Ext(htmlPath)) + "-pages"
	return filepath.Join(filepath.Dir(htmlPath), base)
}
