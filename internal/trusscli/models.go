package trusscli

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/trussdev/truss/internal/cli"
	"github.com/trussdev/truss/internal/harness"
	"github.com/trussdev/truss/internal/surface"
)

// modelRow is one catalog row as truss models prints it: the row, the
// providers of the table its prices hold on (["any"] for a row of no
// wire), and its typed tools.
type modelRow struct {
	surface.Entry
	Providers []string `json:"providers"`
	Tools     []string `json:"tools"`
}

// anyProvider is the providers of a row that holds on any of them.
const anyProvider = "any"

// providerWire is the API wire a provider of the table speaks: its
// dialect's Wire, else the dialect; a provider without a dialect (the
// simulated model) is its own.
func providerWire(p harness.ProviderDef) string {
	if p.Dialect == "" {
		return p.Name
	}
	for _, d := range harness.Dialects() {
		if d.Name == p.Dialect {
			return cmp.Or(d.Wire, d.Name)
		}
	}
	return p.Dialect
}

// catalogRows returns the catalog's rows that provider (a name or alias of
// the provider table, "" for all) serves, each with the providers that
// serve it.
func catalogRows(provider string) ([]modelRow, error) {
	defs := harness.Providers()
	if provider != "" {
		i := slices.IndexFunc(defs, func(p harness.ProviderDef) bool {
			return p.Name == provider || slices.Contains(p.Aliases, provider)
		})
		if i < 0 {
			var names []string
			for _, p := range defs {
				names = append(names, p.Name)
			}
			return nil, cli.Usagef("unknown provider %q; choose one of: %s", provider, strings.Join(names, ", "))
		}
		provider = defs[i].Name
	}
	var rows []modelRow
	for _, e := range surface.Catalog() {
		r := modelRow{Entry: e, Tools: append([]string{}, e.Tools()...)}
		for _, p := range defs {
			if e.Wire == providerWire(p) {
				r.Providers = append(r.Providers, p.Name)
			}
		}
		if e.Wire == "" {
			r.Providers = []string{anyProvider}
		}
		if provider == "" || e.Wire == "" || slices.Contains(r.Providers, provider) {
			rows = append(rows, r)
		}
	}
	return rows, nil
}

func cmdModels(args []string, stdout, stderr io.Writer) error {
	fset := cli.NewFlagSet("models", stderr)
	cli.Describe(fset, "truss models [--provider P] [--json]", `Prints the model catalog: for each model (a pattern of model ids), the providers
whose prices the row gives, the surface and typed tools it is trained on, its context
window and output limit, its prices in USD per million tokens (input, cache read, cache
write, output), the date its facts were checked and the official page they come from.
The notes under the table say which facts a row's page did not confirm and what it
charges where the price depends on more than the token counts. A model the catalog
does not know works with a warning, at an unknown cost.`)
	provider := fset.String("provider", "", "only the models of this provider (a name of the provider table)")
	asJSON := fset.Bool("json", false, "print the rows as a JSON array")
	if err := cli.Parse(fset, args); err != nil {
		return err
	}
	if fset.NArg() > 0 {
		return cli.Usagef("truss models takes no arguments (got %q)", fset.Arg(0))
	}
	rows, err := catalogRows(*provider)
	if err != nil {
		return err
	}
	if *asJSON {
		out, err := json.MarshalIndent(rows, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", out)
		return err
	}
	return printModels(stdout, rows)
}

// printModels prints the rows as a table, their notes numbered under it.
func printModels(w io.Writer, rows []modelRow) error {
	var notes []string
	ref := func(s string) string {
		if s == "" {
			return ""
		}
		i := slices.Index(notes, s)
		if i < 0 {
			notes, i = append(notes, s), len(notes)
		}
		return "[" + strconv.Itoa(i+1) + "]"
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tNAME\tPROVIDERS\tSURFACE\tTOOLS\tCONTEXT\tMAX OUTPUT\tIN $\tCACHE READ $\tCACHE WRITE $\tOUT $\tCHECKED\tSOURCE\tNOTES")
	for _, r := range rows {
		p := r.Prices
		in, read, write, out := usd(p.Input), usd(p.CacheRead), usd(p.CacheWrite), usd(p.Output)
		if p.Unknown {
			in, read, write, out = "unknown", "unknown", "unknown", "unknown"
		}
		if l := p.Long; l.Above > 0 {
			in += "/" + usd(l.Input)
			read += "/" + usd(l.CacheRead)
			write += "/" + usd(l.CacheWrite)
			out += "/" + usd(l.Output)
		}
		var refs []string
		if r.Unverified != "" {
			refs = append(refs, ref("unverified: "+r.Unverified))
		}
		if r.Note != "" {
			refs = append(refs, ref(r.Note))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Pattern, r.Name, strings.Join(r.Providers, ","),
			r.Surface, dash(strings.Join(r.Tools, ",")), tokens(r.ContextWindow), tokens(r.MaxOutput), in, read, write, out,
			r.Checked, dash(r.Source), strings.Join(refs, ""))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(notes) > 0 {
		fmt.Fprintln(w, "\nPrices are USD per million tokens; A/B is up to / over the long-prompt threshold the row's note names.")
		for i, n := range notes {
			fmt.Fprintf(w, "[%d] %s\n", i+1, n)
		}
	}
	return nil
}

// usd prints a price per million tokens.
func usd(v float64) string { return "$" + strconv.FormatFloat(v, 'f', -1, 64) }

// tokens prints a token count as the makers' pages do: 1M, 200K.
func tokens(n int) string {
	switch {
	case n >= 1000000 && n%1000000 == 0:
		return strconv.Itoa(n/1000000) + "M"
	case n >= 1000 && n%1000 == 0:
		return strconv.Itoa(n/1000) + "K"
	}
	return strconv.Itoa(n)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
