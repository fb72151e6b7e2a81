package benchcli

import (
	"fmt"
	"io"
	"strings"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/bench/report"
	"github.com/trussdev/truss/internal/cli"
)

const benchReportUsage = `usage: truss bench report DIR [--html FILE] [--seed N] [--resamples N]

Reads DIR/results.jsonl (and DIR/bench.json, the arms' manifest, when there is
one) and prints the report as Markdown: per arm the resolved rate with a
Wilson 95 % interval, cost and turns, tool mix, edit channels, validation and
errors; per pair of arms of the same model the paired table, an exact McNemar
p-value and the difference in resolved rate with a bootstrap 95 % interval
over tasks; per task each run with its ledger. --html also writes the report
as a self-contained HTML page with charts; with --pages, each run's session
page (truss ledger export --html) is written beside it, in REPORT-pages/, and
the report links every run to its page.

Flags:
`

// cmdBenchReport is `truss bench report`: args are what follows "report".
func cmdBenchReport(args []string, stdout, stderr io.Writer) error {
	fset := cli.NewFlagSet("bench report", stderr)
	htmlPath := fset.String("html", "", "also write the report as a self-contained HTML page to `FILE`")
	seed := fset.Uint64("seed", report.DefaultSeed, "the bootstrap's seed (the same seed gives the same intervals)")
	resamples := fset.Int("resamples", report.DefaultResamples, "the bootstrap's number of resamples")
	pages := fset.Bool("pages", false, "with --html, also write each run's self-verifying session page beside the report and link the runs to them")
	key := fset.String("key", "", "with --pages, the verifier key the runs' ledgers are verified with (default: this installation's)")
	fset.Usage = func() {
		fmt.Fprint(fset.Output(), benchReportUsage)
		cli.PrintDefaults(fset)
	}
	// DIR may come before the flags or after them.
	var dir string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		dir, args = args[0], args[1:]
	}
	if err := cli.Parse(fset, args); err != nil {
		return err
	}
	if dir == "" && fset.NArg() > 0 {
		dir = fset.Arg(0)
		args = fset.Args()[1:]
		if err := cli.Parse(fset, args); err != nil {
			return err
		}
	}
	switch {
	case dir == "":
		return cli.Usagef("usage: truss bench report DIR [--html FILE] [--seed N] [--resamples N]")
	case fset.NArg() > 0:
		return cli.Usagef("truss bench report takes one directory; unexpected %q", fset.Arg(0))
	case *resamples < 1:
		return cli.Usagef("--resamples must be at least 1")
	case *seed == 0:
		return cli.Usagef("--seed must not be 0")
	case *pages && *htmlPath == "":
		return cli.Usagef("--pages writes the session pages beside the HTML report: give --html FILE")
	}

	// The results read and the report written hold every run's patch and
	// verdict: every benchmark hides them from its runs.
	if err := registerKnown(bench.KnownInput, dir); err != nil {
		return err
	}
	if *htmlPath != "" {
		reported := []string{*htmlPath}
		if *pages {
			reported = append(reported, pagesDir(*htmlPath))
		}
		if err := registerKnown(bench.KnownReport, reported...); err != nil {
			return err
		}
	}
	data, err := report.Load(dir)
	if err != nil {
		return err
	}
	rep := report.Analyze(data, report.Options{Seed: *seed, Resamples: *resamples})
	if *pages {
		n, err := writePages(rep, *htmlPath, *key)
		if err != nil {
			return fmt.Errorf("writing the session pages: %w", err)
		}
		fmt.Fprintf(stderr, "wrote %d session pages beside %s\n", n, *htmlPath)
	}
	if err := rep.Markdown(stdout); err != nil {
		return err
	}
	if *htmlPath != "" {
		if err := rep.WriteHTMLFile(*htmlPath); err != nil {
			return fmt.Errorf("writing the HTML report: %w", err)
		}
		fmt.Fprintf(stderr, "wrote %s\n", *htmlPath)
	}
	return nil
}
