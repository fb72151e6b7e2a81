package trusscli

import (
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
// providers of the table that can run it, and its typed tools.
type modelRow struct {
	surface.Entry
	Providers []string `json:"providers"`
	Tools     []string `json:"tools"`
	// Default is set on the row of the provider's default model
	// (--provider).
	Default bool `json:"default,omitempty"`
	// PlatformID is the model's id on the cloud platform of --provider
	// (bedrock, vertex) as an official page lists it, and
	// InferenceProfiles Bedrock's cross-region inference profiles of it;
	// empty where no page read gave them.
	PlatformID        string   `json:"platform_id,omitempty"`
	InferenceProfiles []string `json:"inference_profiles,omitempty"`
	platform          *surface.PlatformID
}

// providerCatalog is what truss models prints: the catalog's rows, and
// for one provider its default model and the profile it gets.
type providerCatalog struct {
	rows []modelRow
	// def is the provider of --provider (nil for all).
	def *harness.ProviderDef
	// prof is its default model's profile (Guess when the catalog does
	// not know the model).
	prof surface.Profile
}

// catalogRows returns the catalog's rows that the provider named name
// runs (a name or alias of the provider table, or a provider of the
// user's configuration; "" for all rows), each with the providers of the
// table that run it.
func catalogRows(name string) (providerCatalog, error) {
	defs := harness.Providers()
	var pc providerCatalog
	entries := surface.Catalog()
	if name != "" {
		def, err := harness.LookupProvider(name)
		if err != nil {
			// A user's configuration that cannot be read (or names a
			// built-in provider) is its own error; else the name is
			// unknown, which is a usage error naming the choices.
			if _, cerr := harness.LookupProvider(defs[0].Name); cerr != nil {
				return pc, cerr
			}
			return pc, cli.Usagef("%v", err)
		}
		pc.def, entries = &def, def.Catalog()
		if def.DefaultModel != "" {
			pc.prof = def.Profile(def.DefaultModel)
		}
	}
	// The rows each provider of the table runs, by pattern and name
	// (the same pattern may be two rows: gpt-oss local and hosted).
	type rowID struct{ pattern, name string }
	runs := make([]map[rowID]bool, len(defs))
	for i, p := range defs {
		runs[i] = map[rowID]bool{}
		for _, e := range p.Catalog() {
			runs[i][rowID{e.Pattern, e.Name}] = true
		}
	}
	for _, e := range entries {
		r := modelRow{Entry: e, Tools: append([]string{}, e.Tools()...), Providers: []string{}}
		for i, p := range defs {
			if runs[i][rowID{e.Pattern, e.Name}] {
				r.Providers = append(r.Providers, p.Name)
			}
		}
		if pc.def != nil && !slices.Contains(r.Providers, pc.def.Name) {
			r.Providers = append(r.Providers, pc.def.Name) // a named provider
		}
		r.Default = pc.def != nil && pc.def.DefaultModel != "" && !pc.prof.Guess && pc.prof.Pattern == e.Pattern
		if pc.platform() != "" {
			if id, ok := surface.PlatformIDOf(pc.platform(), e.Pattern); ok {
				if slices.ContainsFunc(pc.rows, func(o modelRow) bool { return o.PlatformID == id.ID }) {
					continue // the Claude API's alias of a model listed (claude-opus-4-0)
				}
				r.PlatformID, r.platform = id.ID, &id
				for _, g := range id.Profiles {
					r.InferenceProfiles = append(r.InferenceProfiles, id.ProfileID(g))
				}
			}
		}
		pc.rows = append(pc.rows, r)
	}
	return pc, nil
}

func cmdModels(args []string, stdout, stderr io.Writer) error {
	fset := cli.NewFlagSet("models", stderr)
	cli.Describe(fset, "truss models [--provider P] [--json]", `Prints the model catalog: for each model (a pattern of model ids), the providers
of the table that can run it at the row's prices, the surface and typed tools it is trained on, its context
window and output limit, its prices in USD per million tokens (input, cache read, cache
write, output), whether the official page they come from confirmed them (STATUS:
"checked DATE"; "partly checked DATE [n]" or "unconfirmed, listed DATE [n]", whose
note says what was not confirmed and why) and the page.
The notes under the table say which facts a row's page did not confirm and what it
charges where the price depends on more than the token counts. A model the catalog
does not know works with a warning, at an unknown cost. With --provider (a provider
of the table or of [providers.NAME] in the user's configuration), only the rows that
provider can run, and its default model.`)
	provider := fset.String("provider", "", "only the rows this provider (of the table or of the user's configuration) can run, and its default model")
	asJSON := fset.Bool("json", false, "print the rows as a JSON array")
	if err := cli.ParseNone(fset, args); err != nil {
		return err
	}
	pc, err := catalogRows(*provider)
	if err != nil {
		return err
	}
	if *asJSON {
		out, err := json.MarshalIndent(pc.rows, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", out)
		return err
	}
	return printModels(stdout, pc)
}

// platform is the cloud platform whose own ids --provider takes
// ("bedrock", "vertex"), "" for another provider.
func (pc providerCatalog) platform() string {
	if pc.def != nil && len(surface.PlatformIDs(pc.def.Dialect)) > 0 {
		return pc.def.Dialect
	}
	return ""
}

// defaultLine says a provider's default model and the row it is, or
// that the catalog does not know it; "" for a provider without one that
// needs none (the simulated model).
func (pc providerCatalog) defaultLine() string {
	d := pc.def
	switch {
	case d == nil:
		return ""
	case d.DefaultModel == "" && d.Named:
		return fmt.Sprintf("Provider %s has no default model: --model or TRUSS_MODEL names one (or model in [providers.%s] of %s).", d.Name, d.Name, d.ConfigFile)
	case d.DefaultModel == "" && d.ModelIs != "":
		return fmt.Sprintf("Provider %s has no default model: --model or TRUSS_MODEL names %s (on %s, not the model).", d.Name, d.ModelIs, d.Name)
	case d.DefaultModel == "" && d.Dialect != "":
		return fmt.Sprintf("Provider %s has no default model: --model or TRUSS_MODEL names one.", d.Name)
	case d.DefaultModel == "":
		return ""
	case pc.prof.Guess:
		own := ""
		if l := pc.ownLimits(); l != "" {
			own = " (" + l + ")"
		}
		return fmt.Sprintf("The default model of %s, %s, is not in the catalog: it runs with a warning, the %s surface and limits of %s / %s tokens%s, at an unknown cost.",
			d.Name, d.DefaultModel, pc.prof.Surface, tokens(pc.prof.ContextWindow), tokens(pc.prof.MaxOutput), own)
	}
	if l := pc.ownLimits(); l != "" {
		return fmt.Sprintf("The default model of %s, %s, is the row %s, with the limits of %s over the row's: %s / %s tokens.",
			d.Name, d.DefaultModel, pc.prof.Pattern, l, tokens(pc.prof.ContextWindow), tokens(pc.prof.MaxOutput))
	}
	return fmt.Sprintf("The default model of %s, %s, is the row %s.", d.Name, d.DefaultModel, pc.prof.Pattern)
}

// ownLimits says the limits a named provider sets for its models (its
// context_window and max_output), which its sessions take over the row's
// and the guess's: "context_window 200K and max_output 64K of
// [providers.NAME]"; "" for none.
func (pc providerCatalog) ownLimits() string {
	d := pc.def
	var set []string
	if d.ContextWindow > 0 {
		set = append(set, "context_window "+tokens(d.ContextWindow))
	}
	if d.MaxOutput > 0 {
		set = append(set, "max_output "+tokens(d.MaxOutput))
	}
	if len(set) == 0 {
		return ""
	}
	return fmt.Sprintf("%s of [providers.%s]", strings.Join(set, " and "), d.Name)
}

// printModels prints the rows as a table, their notes numbered under it,
// and a provider's default model.
func printModels(w io.Writer, pc providerCatalog) error {
	rows := pc.rows
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
	fmt.Fprintln(tw, "MODEL\tNAME\tPROVIDERS\tSURFACE\tTOOLS\tCONTEXT\tMAX OUTPUT\tIN $\tCACHE READ $\tCACHE WRITE $\tOUT $\tSTATUS\tSOURCE\tNOTES")
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
		st := status(r.Entry, ref) // its note numbered before the row's own
		var refs []string
		if r.Note != "" {
			refs = append(refs, ref(r.Note))
		}
		id := r.Pattern
		switch pl := pc.platform(); {
		case pl != "" && r.platform != nil:
			id = r.PlatformID
			n := fmt.Sprintf("%s's id, read on %s on %s", r.platform.Title, r.platform.Source, r.platform.Checked)
			if len(r.InferenceProfiles) > 0 {
				n += "; its cross-region inference profiles: " + strings.Join(r.InferenceProfiles, ", ")
			}
			refs = append(refs, ref(n))
		case pl != "":
			first := surface.PlatformIDs(pl)[0]
			refs = append(refs, ref(fmt.Sprintf("the Claude API's id: no official page read gave %s's id of the model (%s)", first.Title, first.Lists)))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", id, r.Name, strings.Join(r.Providers, ","),
			r.Surface, dash(strings.Join(r.Tools, ",")), tokens(r.ContextWindow), tokens(r.MaxOutput), in, read, write, out,
			st, dash(r.Source), strings.Join(refs, ""))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if l := pc.defaultLine(); l != "" {
		fmt.Fprintf(w, "\n%s\n", l)
	}
	if len(notes) > 0 {
		fmt.Fprintln(w, "\nPrices are USD per million tokens; A/B is up to / over the long-prompt threshold the row's note names.")
		for i, n := range notes {
			fmt.Fprintf(w, "[%d] %s\n", i+1, n)
		}
	}
	return nil
}

// status says how much of a row its source confirmed, and when: "checked
// DATE" for a row the page confirmed in all, "partly checked DATE [n]"
// and "unconfirmed, listed DATE [n]" with the note (ref) that says what
// was not confirmed and why.
func status(e surface.Entry, ref func(string) string) string {
	switch e.Confirmed {
	case surface.ConfirmedAll:
		return "checked " + e.Checked
	case surface.ConfirmedPart:
		return "partly checked " + e.Checked + " " + ref("unconfirmed: "+e.Unverified)
	}
	return "unconfirmed, listed " + e.Checked + " " + ref("unconfirmed: "+e.Unverified)
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
