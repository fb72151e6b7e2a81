package trusscli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/trussdev/truss/internal/cli"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/plural"
	"github.com/trussdev/truss/internal/session"
	"github.com/trussdev/truss/internal/termsafe"
)

const ledgerUsage = `usage: truss ledger COMMAND

  key                                   this installation's verifier key
  verify PATH [--key VKEY] [--workspace DIR] [--strict] [--require-end]
                                        verify a session's ledgers (every run), or one ledger
  show PATH [--agents] [--payload NAME] the timeline of a session's runs, verified (or one payload)
  prove PATH --entry N                  an inclusion proof of one entry
  export PATH --in-toto                 in-toto provenance of the session, in a DSSE envelope
  export PATH --html FILE [--redact RE] the session as one self-verifying HTML page
  serve [--addr 127.0.0.1:PORT]         browse the saved sessions' pages (loopback only, read-only)

PATH is a session id, a session directory or a ledger directory; verify
also takes a page that export --html wrote (FILE.html).
Run "truss ledger COMMAND -h" for a command's flags.
`

func cmdLedger(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return cli.Usagef("usage: truss ledger key | verify PATH [--key VKEY] [--workspace DIR] [--strict] [--require-end] | show PATH | prove PATH --entry N | export PATH --in-toto")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, ledgerUsage)
		return nil
	case "key":
		fset := cli.NewFlagSet("ledger key", stderr)
		fset.Usage = func() {
			fmt.Fprintf(fset.Output(), "usage: truss ledger key\n\nPrints this installation's verifier key (name+hash+Ed25519 public key), with which anyone can verify its ledgers.\n")
		}
		if err := cli.ParseNone(fset, args[1:]); err != nil {
			return err
		}
		_, vkey, err := ledger.InstallationKey()
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, vkey)
		return nil
	case "verify":
		fset := cli.NewFlagSet("ledger verify", stderr)
		key := fset.String("key", "", "the verifier key (default: this installation's, see truss ledger key)")
		ws := fset.String("workspace", "", "also check that the files the session changed hold what it left in them")
		strict := fset.Bool("strict", false, "fail on an unsealed tail (entries after the last checkpoint, or a torn last line), which no signature covers; without it the tail is a warning")
		requireEnd := fset.Bool("require-end", false, "fail on a run whose sealed entries do not end with session.end (cut short, or still running); without it that is a warning")
		path, ok, err := cli.ParseArg(fset, args[1:])
		if err != nil {
			return err
		}
		if !ok || path == "" {
			return cli.Usagef("usage: truss ledger verify PATH [--key VKEY] [--workspace DIR] [--strict] [--require-end]")
		}
		if isPage(path) {
			if *ws != "" {
				return cli.Usagef("--workspace checks a ledger, not a page")
			}
			return verifyPage(stdout, stderr, path, *key, *requireEnd)
		}
		dirs, vkey, err := resolveLedgers(path, *key)
		if err != nil {
			return err
		}
		var tails []error // each run's unsealed tail, and with --require-end each run not ended
		var prev ledger.Run
		for i, dir := range dirs {
			if len(dirs) > 1 {
				fmt.Fprintf(stdout, "run %d of %d:\n", i+1, len(dirs))
			}
			r, entries, err := ledger.Verify(dir, vkey)
			if err != nil {
				return fmt.Errorf("ledger %s does not verify: %w", dir, err)
			}
			kids, err := ledger.VerifyLinks(dir, vkey, entries, r.Sealed)
			if err != nil {
				return fmt.Errorf("ledger %s does not verify: %w", dir, err)
			}
			// A session's runs are chained: each resumed run's
			// session.start names the run before it by its last
			// checkpoint, and the first names none.
			run := ledger.Run{Name: filepath.Base(dir), Report: r, Entries: entries}
			if err := checkRun(prev, run, i, isSession(path)); err != nil {
				return fmt.Errorf("session %s does not verify: %w", path, err)
			}
			prev = run
			// The workspace holds what the last run left in it, as its
			// sealed entries say: an unsealed session.end proves nothing.
			if *ws != "" && i == len(dirs)-1 {
				if err := ledger.VerifyWorkspace(dir, entries[:r.Sealed], *ws); err != nil {
					return fmt.Errorf("ledger %s: the workspace does not match: %w", dir, err)
				}
			}
			fmt.Fprintf(stdout, "ledger %s verified: %s, %s\norigin %s\nroot   %s (size %d)\n",
				termsafe.Name(dir), sealSummary(r), plural.Count(r.Payloads, "payload"), termsafe.Name(r.Origin), ledger.FormatRoot(r.Root), r.Sealed)
			printChildren(stdout, dir, kids, "")
			if err := r.CheckSealed(); err != nil {
				if *strict {
					tails = append(tails, fmt.Errorf("ledger %s does not verify with --strict: %w", dir, err))
				} else {
					warnUnsealed(stderr, dir, err)
				}
			}
			if err := ledger.CheckEnded(entries, r.Sealed); err != nil {
				if e := notEnded(stdout, stderr, "ledger "+dir, err, *requireEnd); e != nil {
					tails = append(tails, e)
				}
			}
		}
		if *ws != "" {
			fmt.Fprintf(stdout, "workspace %s matches the files the session left\n", termsafe.Name(*ws))
		}
		return errors.Join(tails...)
	case "prove":
		fset := cli.NewFlagSet("ledger prove", stderr)
		entry := fset.Int64("entry", -1, "the entry to prove")
		key := fset.String("key", "", "the verifier key (default: this installation's)")
		path, ok, err := cli.ParseArg(fset, args[1:])
		if err != nil {
			return err
		}
		if !ok || path == "" || *entry < 0 {
			return cli.Usagef("usage: truss ledger prove PATH --entry N")
		}
		dir, vkey, err := resolveLedger(path, *key)
		if err != nil {
			return err
		}
		b, err := ledger.Prove(dir, vkey, uint64(*entry))
		if err != nil {
			return err
		}
		_, err = stdout.Write(b)
		return err
	case "serve":
		return cmdLedgerServe(args[1:], stdout, stderr)
	case "export":
		if wantsHTML(args[1:]) {
			return cmdExportHTML(args[1:], stdout, stderr)
		}
		fset := cli.NewFlagSet("ledger export", stderr)
		intoto := fset.Bool("in-toto", false, "an in-toto Statement v1 with an SLSA Provenance v1 predicate, in a DSSE envelope")
		path, ok, err := cli.ParseArg(fset, args[1:])
		if err != nil {
			return err
		}
		if !ok || path == "" || !*intoto {
			return cli.Usagef("usage: truss ledger export PATH --in-toto | --html FILE")
		}
		dir, vkey, err := resolveLedger(path, "")
		if err != nil {
			return err
		}
		kd, err := ledger.KeyDir()
		if err != nil {
			return err
		}
		priv, err := ledger.PrivateKey(kd)
		if err != nil {
			return err
		}
		b, err := ledger.Export(dir, vkey, priv)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	case "show":
		fset := cli.NewFlagSet("ledger show", stderr)
		agents := fset.Bool("agents", false, "also show each sub-agent's timeline, after the session's")
		payload := fset.String("payload", "", "print instead the payload of that name of the last entry that has one (a grading's log, patch or report; a turn's request, rebuilt from its parts where it was stored so, or response), once the ledger verifies")
		entry := fset.Int("entry", -1, "with --payload, the entry whose payload to print instead of the last that has one")
		path, ok, err := cli.ParseArg(fset, args[1:])
		if err != nil {
			return err
		}
		if !ok || path == "" {
			return cli.Usagef("usage: truss ledger show PATH [--agents] [--payload NAME [--entry N]]")
		}
		entrySet := false
		fset.Visit(func(f *flag.Flag) { entrySet = entrySet || f.Name == "entry" })
		if entrySet && *entry < 0 {
			return cli.Usagef("--entry takes an entry's number, 0 or more, not %d", *entry)
		}
		if entrySet && *payload == "" {
			return cli.Usagef("--entry chooses the entry of --payload; give --payload NAME too")
		}
		if *payload != "" {
			return showPayload(stdout, stderr, path, *payload, *entry)
		}
		dirs, vkey, err := resolveLedgers(path, "")
		if err != nil {
			return err
		}
		var prev ledger.Run
		for i, dir := range dirs {
			if len(dirs) > 1 {
				if i > 0 {
					fmt.Fprintln(stdout)
				}
				fmt.Fprintf(stdout, "── run %d of %d: %s ──\n", i+1, len(dirs), termsafe.Name(dir))
			}
			r, entries, verr := ledger.Verify(dir, vkey)
			if verr == nil {
				run := ledger.Run{Name: filepath.Base(dir), Report: r, Entries: entries}
				verr = checkRun(prev, run, i, isSession(path))
				prev = run
			}
			payload, _ := ledger.PayloadsIn(dir) // without them, the entries alone
			if verr == nil && r.Unsealed > 0 {
				ledger.ShowWith(stdout, entries[:r.Sealed], payload)
				fmt.Fprintln(stdout, "── unsealed: no checkpoint covers the entries below ──")
				ledger.ShowWith(stdout, entries[r.Sealed:], payload)
			} else {
				ledger.ShowWith(stdout, entries, payload)
			}
			var kids []ledger.Child
			if verr == nil {
				kids, verr = ledger.VerifyLinks(dir, vkey, entries, r.Sealed)
			}
			if verr != nil {
				fmt.Fprintf(stdout, "NOT VERIFIED: %s\n", termsafe.String(verr.Error()))
				return cli.ExitError{Code: 1}
			}
			fmt.Fprintf(stdout, "verified: %s, root %s", sealSummary(r), ledger.FormatRoot(r.Root))
			if n := countChildren(kids); n > 0 {
				fmt.Fprintf(stdout, "; sub-agent ledgers linked and verified: %d", n)
			}
			fmt.Fprintln(stdout)
			if err := r.CheckSealed(); err != nil {
				warnUnsealed(stderr, dir, err)
			}
			if err := ledger.CheckEnded(entries, r.Sealed); err != nil {
				notEnded(stdout, stderr, "ledger "+dir, err, false)
			}
			if *agents {
				showChildren(stdout, dir, vkey, kids, "  ")
			}
		}
		return nil
	}
	return cli.Usagef("unknown ledger command %q: use key, verify, show, prove, export or serve", args[0])
}

// checkRun checks that run, the i-th (0-based) of the runs verified
// together, follows prev, the one before it (ledger.CheckNext); a first
// run that continues an earlier one fails when the runs are a whole
// session's (session), where that earlier run is missing.
func checkRun(prev, run ledger.Run, i int, session bool) error {
	if i > 0 {
		return ledger.CheckNext(prev, run, i+1)
	}
	p, err := ledger.Continues(run.Entries)
	if err != nil {
		return &ledger.RunError{Run: 1, Name: run.Name, Reason: err.Error()}
	}
	if p != nil && session {
		return &ledger.RunError{Run: 1, Name: run.Name, Reason: fmt.Sprintf("entry 0: it continues the run of ledger %q, which is not in the session: a run was removed", p.Dir)}
	}
	return nil
}

// isSession reports whether a verify PATH names a whole session (a
// session directory or id) rather than one ledger directory.
func isSession(path string) bool {
	_, err := os.Stat(filepath.Join(path, "entries.jsonl"))
	return err != nil
}

// notEnded reports err, a run that did not end (ledger.CheckEnded), of
// what (a ledger, a page's run): on stdout beside the verdict, where it
// cannot be missed, and as a warning on stderr. With require it returns
// the failure instead of warning.
func notEnded(stdout, stderr io.Writer, what string, err error, require bool) error {
	fmt.Fprintf(stdout, "NOT ENDED: %s: %s\n", termsafe.Line(what), termsafe.Line(err.Error()))
	if require {
		return fmt.Errorf("%s does not verify with --require-end: %w", what, err)
	}
	fmt.Fprintf(stderr, "warning: %s: %s (truss ledger verify --require-end fails on it)\n", termsafe.Line(what), termsafe.Line(err.Error()))
	return nil
}

// sealSummary says how many of a verified ledger's entries its checkpoints
// seal and how many they leave unsealed (and a torn last line), as in
// "20 entries, 17 sealed by 3 checkpoints, 3 unsealed".
func sealSummary(r *ledger.Report) string {
	s := fmt.Sprintf("%s, %d sealed by %s, %d unsealed", plural.Count(r.Entries, "entry"), r.Sealed, plural.Count(r.Checkpoints, "checkpoint"), r.Unsealed)
	if r.TornBytes > 0 {
		s += ", a torn last line of " + plural.Count(r.TornBytes, "byte")
	}
	return s
}

// warnUnsealed warns of the unsealed tail err (from Report.CheckSealed) of
// the ledger in dir.
func warnUnsealed(stderr io.Writer, dir string, err error) {
	fmt.Fprintf(stderr, "warning: ledger %s: %v, so nothing proves the tail (truss ledger verify --strict fails on it)\n", termsafe.Name(dir), err)
}

// resolveLedger resolves the ledger a command names and the verifier key
// (vkey, else this installation's).
func resolveLedger(path, vkey string) (string, string, error) {
	dir, err := ledgerDir(path)
	if err != nil {
		return "", "", err
	}
	if vkey == "" {
		if _, vkey, err = ledger.InstallationKey(); err != nil {
			return "", "", err
		}
	}
	return dir, vkey, nil
}

// resolveLedgers resolves the ledgers a command names, one per run of a
// session (a ledger directory names itself alone), and the verifier key.
func resolveLedgers(path, vkey string) ([]string, string, error) {
	dirs, err := ledgerDirs(path)
	if err != nil {
		return nil, "", err
	}
	if vkey == "" {
		if _, vkey, err = ledger.InstallationKey(); err != nil {
			return nil, "", err
		}
	}
	return dirs, vkey, nil
}

// ledgerDirs resolves a ledger directory to itself, and a session
// directory or a session (its id, "last", or the end of its id) to the
// ledgers of all its runs, in order.
func ledgerDirs(p string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(p, "entries.jsonl")); err == nil {
		return []string{p}, nil
	}
	cands := []string{p}
	if sd, err := session.DefaultDir(); err == nil && !strings.ContainsAny(p, `/\`) {
		if id, err := (session.Store{Dir: sd}).Resolve(p, nil); err == nil {
			p = id // "last", or the end of an id
		}
		cands = append(cands, filepath.Join(sd, p))
	}
	for _, d := range cands {
		if dirs, err := session.Ledgers(d); err == nil && len(dirs) > 0 {
			return dirs, nil
		}
	}
	return nil, fmt.Errorf("no ledger at %s (give a ledger directory, a session directory or a session id)", p)
}

// ledgerDir resolves a ledger directory, a session directory or a session
// id to one ledger: a session's first run's.
func ledgerDir(p string) (string, error) {
	for _, d := range []string{p, filepath.Join(p, "ledger")} {
		if _, err := os.Stat(filepath.Join(d, "entries.jsonl")); err == nil {
			return d, nil
		}
	}
	if sd, err := session.DefaultDir(); err == nil {
		if id, err := (session.Store{Dir: sd}).Resolve(p, nil); err == nil {
			p = id // "last", or the end of an id
		}
		d := filepath.Join(sd, p, "ledger")
		if _, err := os.Stat(filepath.Join(d, "entries.jsonl")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("no ledger at %s (give a ledger directory, a session directory or a session id)", p)
}

// printChildren lists the verified sub-agent ledgers, indented by depth.
func printChildren(w io.Writer, top string, kids []ledger.Child, indent string) {
	for _, c := range kids {
		fmt.Fprintf(w, "%ssub-agent %s verified (linked from entry %d): %s, %s, root %s\n",
			indent+"  ", termsafe.Name(c.Report.Session), c.Entry, plural.Count(c.Report.Entries, "entry"), plural.Count(c.Report.Payloads, "payload"), ledger.FormatRoot(c.Report.Root))
		printChildren(w, top, c.Children, indent+"  ")
	}
}

func countChildren(kids []ledger.Child) int {
	n := len(kids)
	for _, k := range kids {
		n += countChildren(k.Children)
	}
	return n
}

// showPayload prints the payload named name of the last sealed entry that
// names one — of the ledger at path, or of a session's newest run that
// has one — or of entry (>= 0) of a one-run ledger, after the ledger
// verifies: the bytes as stored, made inert for a terminal (with a final
// newline there). Which entry it was goes to stderr. An unsealed entry's
// is refused: no signature covers the entry that names it. A name no
// entry has is answered with the names the ledger's entries have.
func showPayload(stdout, stderr io.Writer, path, name string, entry int) error {
	dirs, vkey, err := resolveLedgers(path, "")
	if err != nil {
		return err
	}
	if entry >= 0 && len(dirs) != 1 {
		return cli.Usagef("--entry numbers the entries of one run, and %s has %d: give the run's ledger directory (the last is %s)", path, len(dirs), dirs[len(dirs)-1])
	}
	// A turn's request may be stored as parts (request_parts): asked for
	// by name, it is rebuilt from them.
	names := func(e ledger.Entry) bool {
		_, ok := e.Payloads[name]
		if name == "request" && !ok {
			_, ok = e.Payloads["request_parts"]
		}
		return ok
	}
	all := map[string]bool{}
	for k := len(dirs) - 1; k >= 0; k-- {
		dir := dirs[k]
		r, entries, err := ledger.Verify(dir, vkey)
		if err != nil {
			return fmt.Errorf("the ledger %s does not verify: %w", dir, err)
		}
		if entry >= len(entries) {
			return fmt.Errorf("%s has %s; there is no entry %d", dir, plural.Count(len(entries), "entry"), entry)
		}
		if entry >= 0 && !names(entries[entry]) {
			return fmt.Errorf("entry %d (%s) has no payload named %q; it has %s", entry, entries[entry].Type, name, payloadNames(entries[entry:entry+1]))
		}
		i := entry
		if i < 0 {
			for i = len(entries) - 1; i >= 0 && !names(entries[i]); i-- {
			}
			if i < 0 {
				addPayloadNames(all, entries)
				continue // an earlier run's, if any
			}
		}
		if uint64(i) >= r.Sealed {
			return fmt.Errorf("entry %d names payload %s, but it is unsealed: no checkpoint covers it (%v)", i, name, r.CheckSealed())
		}
		payload, err := ledger.PayloadsIn(dir)
		if err != nil {
			return err
		}
		var b []byte
		if d, ok := entries[i].Payloads[name]; ok {
			if b, ok = payload(d); !ok {
				return fmt.Errorf("entry %d names payload %s (%s), which the ledger does not hold", i, name, d)
			}
		} else if b, _, err = ledger.Request(entries[i], payload); err != nil {
			return err
		}
		run := ""
		if len(dirs) > 1 {
			run = fmt.Sprintf(" of run %d of %d", k+1, len(dirs))
		}
		fmt.Fprintf(stderr, "truss: payload %s of entry %d (%s)%s\n", name, i, entries[i].Type, run)
		if cli.IsTerminal(stdout) {
			text := termsafe.String(string(b))
			if !strings.HasSuffix(text, "\n") {
				text += "\n"
			}
			_, err = io.WriteString(stdout, text)
		} else {
			_, err = stdout.Write(b)
		}
		return err
	}
	return fmt.Errorf("no entry of %s has a payload named %q; its entries have %s", path, name, orNoNames(all))
}

// payloadNames are the names of the entries' payloads as a list to read.
func payloadNames(entries []ledger.Entry) string {
	all := map[string]bool{}
	addPayloadNames(all, entries)
	return orNoNames(all)
}

// addPayloadNames adds the names of the entries' payloads to all.
func addPayloadNames(all map[string]bool, entries []ledger.Entry) {
	for _, e := range entries {
		for n := range e.Payloads {
			all[n] = true
		}
	}
}

// orNoNames is the payload names as a sorted list ("request" for
// request_parts, which --payload request rebuilds), "no payload" for
// none.
func orNoNames(all map[string]bool) string {
	if all["request_parts"] {
		delete(all, "request_parts")
		all["request"] = true
	}
	if len(all) == 0 {
		return "no payload"
	}
	// A family of names (content.DIGEST, stdout.N) is said once.
	fams := map[string]int{}
	for n := range all {
		if f, _, ok := strings.Cut(n, "."); ok {
			delete(all, n)
			fams[f]++
		}
	}
	for f, k := range fams {
		all[fmt.Sprintf("%s.* (%d)", f, k)] = true
	}
	return strings.Join(slices.Sorted(maps.Keys(all)), ", ")
}

// showChildren prints each sub-agent's timeline, indented by depth.
func showChildren(w io.Writer, top, vkey string, kids []ledger.Child, indent string) {
	for _, c := range kids {
		rel, err := filepath.Rel(top, c.Dir)
		if err != nil {
			rel = c.Dir
		}
		fmt.Fprintf(w, "\n%ssub-agent %s (%s, linked from entry %d)\n", indent, termsafe.Name(c.Report.Session), termsafe.Name(filepath.ToSlash(rel)), c.Entry)
		_, entries, err := ledger.Verify(c.Dir, vkey)
		if err != nil {
			fmt.Fprintf(w, "%sNOT VERIFIED: %s\n", indent, termsafe.Line(err.Error()))
			continue
		}
		var buf bytes.Buffer
		payload, _ := ledger.PayloadsIn(c.Dir)
		ledger.ShowWith(&buf, entries, payload)
		for _, line := range strings.SplitAfter(buf.String(), "\n") {
			if line != "" {
				fmt.Fprint(w, indent+line)
			}
		}
		showChildren(w, top, vkey, c.Children, indent+"  ")
	}
}
