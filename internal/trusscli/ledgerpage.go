package trusscli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/trussdev/truss/internal/cli"
	"github.com/trussdev/truss/internal/hostfs"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/ledger/page"
	"github.com/trussdev/truss/internal/plural"
	"github.com/trussdev/truss/internal/session"
	"github.com/trussdev/truss/internal/termsafe"
)

// redactFlags collects --redact patterns.
type redactFlags []*regexp.Regexp

func (r *redactFlags) String() string { return fmt.Sprint(*r) }
func (r *redactFlags) Set(s string) error {
	re, err := regexp.Compile(s)
	if err != nil {
		return fmt.Errorf("not a regular expression: %w", err)
	}
	if re.MatchString("") {
		return fmt.Errorf("%q matches the empty string", s)
	}
	*r = append(*r, re)
	return nil
}

// wantsHTML reports whether an export's arguments ask for the page.
func wantsHTML(args []string) bool {
	for _, a := range args {
		if a == "--html" || a == "-html" || strings.HasPrefix(a, "--html=") || strings.HasPrefix(a, "-html=") {
			return true
		}
	}
	return false
}

// cmdExportHTML is `truss ledger export PATH --html FILE`: the session's
// page, verified before it is written, written atomically.
func cmdExportHTML(args []string, stdout, stderr io.Writer) error {
	fset := cli.NewFlagSet("ledger export", stderr)
	out := fset.String("html", "", "write the session's self-verifying HTML page to this file")
	key := fset.String("key", "", "the verifier key the ledger is verified with and the page embeds (default: this installation's)")
	maxPayload := fset.Int("max-payload", page.DefaultMaxPayload, "leave out, by digest, payloads larger than this many bytes")
	var redact redactFlags
	fset.Var(&redact, "redact", "replace what this regular expression matches in the page's payloads by "+page.Redacted+" (repeatable); a redacted payload is shown as unverified")
	path, ok, err := cli.ParseArg(fset, args)
	if err != nil {
		return err
	}
	if !ok || path == "" || *out == "" {
		return cli.Usagef("usage: truss ledger export PATH --html FILE [--redact REGEXP]... [--max-payload BYTES] [--key VKEY]")
	}
	if *maxPayload <= 0 {
		return cli.Usagef("--max-payload must be positive")
	}
	dirs, vkey, err := resolveLedgers(path, *key)
	if err != nil {
		return err
	}
	doc, err := page.Build(dirs, page.Options{VKey: vkey, MaxPayload: *maxPayload, Redact: redact})
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := page.Write(&buf, doc); err != nil {
		return err
	}
	if err := hostfs.WriteFileAtomic(*out, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write the page: %w", err)
	}
	entries := 0
	for _, r := range doc.Runs {
		l, err := r.Lines()
		if err != nil {
			return err
		}
		entries += len(l)
	}
	fmt.Fprintf(stdout, "wrote %s: %s, %s, %s; open it in a browser, or check it with truss ledger verify %s\n",
		*out, plural.Count(buf.Len(), "byte"), plural.Count(len(doc.Runs), "run"), plural.Count(entries, "entry"), *out)
	return nil
}

// isPage reports whether path names a file that is a session page rather
// than a ledger, a session directory or a session id.
func isPage(path string) bool {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	ext := strings.ToLower(filepath.Ext(path))
	return ext == ".html" || ext == ".htm"
}

// maxPage bounds the page a command reads.
const maxPage = 1 << 30

// verifyPage is `truss ledger verify page.html`: the ledger the page
// embeds, verified with the Go verifier (not the page's script).
// A run that did not end (no session.end) is said on stdout and warned
// of; with requireEnd it is a failure.
func verifyPage(stdout, stderr io.Writer, path, vkey string, requireEnd bool) error {
	b, err := hostfs.ReadFile(path, maxPage)
	if err != nil {
		return err
	}
	res, err := page.Verify(b, vkey)
	if err != nil {
		return fmt.Errorf("page %s does not verify: %w", path, err)
	}
	if p := res.Continues; p != nil {
		fmt.Fprintf(stdout, "the page begins at a resumed run: the runs before it (the last of them %s, of %s) are not on the page\n", p.Dir, plural.Count(p.Size, "entry"))
	}
	var fails []error
	for i, r := range res.Runs {
		what := "the page's run"
		if len(res.Runs) > 1 {
			fmt.Fprintf(stdout, "run %d of %d (%s):\n", i+1, len(res.Runs), r.Dir)
			what = fmt.Sprintf("the page's run %d (%s)", i+1, r.Dir)
		}
		printPageRun(stdout, r, "")
		if r.NotEnded != nil {
			if err := notEnded(stdout, stderr, what, r.NotEnded, requireEnd); err != nil {
				fails = append(fails, err)
			}
		}
	}
	who := "the key the page names (--key checks it against a key you trust)"
	if vkey != "" {
		who = "the key given"
	}
	fmt.Fprintf(stdout, "signed by %s: %s\n", who, res.VKey)
	return errors.Join(fails...)
}

func printPageRun(w io.Writer, r page.RunResult, indent string) {
	rep := r.Report
	// The ledger's name on the page is its directory's: "ledger" for a
	// session's first run.
	fmt.Fprintf(w, "%s%s on the page verified: %s, %d sealed by %s, root %s\n", indent, termsafe.Name(r.Dir), plural.Count(rep.Entries, "entry"), rep.Sealed, plural.Count(rep.Checkpoints, "checkpoint"), ledger.FormatRoot(rep.Root))
	fmt.Fprintf(w, "%s  payloads: %d checked, %d left out for their size, %d redacted (unverified), %d not on the page\n", indent, r.Checked, len(r.Omitted), len(r.Redacted), len(r.NotEmbedded))
	for _, s := range r.Omitted {
		fmt.Fprintf(w, "%s    left out: %s\n", indent, s)
	}
	for _, s := range r.Redacted {
		fmt.Fprintf(w, "%s    redacted: %s\n", indent, s)
	}
	if r.Unsealed > 0 {
		fmt.Fprintf(w, "%s  not on this page: %s after the last checkpoint (unsealed)\n", indent, plural.Count(r.Unsealed, "entry"))
	}
	for _, a := range r.Agents {
		printPageRun(w, a, indent+"  ")
	}
}

// cmdLedgerServe is `truss ledger serve`: the saved sessions, each as its
// page, on a loopback address, read-only, until interrupted.
func cmdLedgerServe(args []string, stdout, stderr io.Writer) error {
	fset := cli.NewFlagSet("ledger serve", stderr)
	addr := fset.String("addr", "127.0.0.1:0", "the loopback address to listen on (port 0: any free port)")
	key := fset.String("key", "", "the verifier key the sessions' ledgers are verified with (default: this installation's)")
	maxPayload := fset.Int("max-payload", page.DefaultMaxPayload, "leave out, by digest, payloads larger than this many bytes")
	if err := cli.ParseNone(fset, args); err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		return cli.Usagef("--addr %q: %v", *addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return cli.Usagef("--addr %q is not a loopback address: truss ledger serve listens on this machine only (127.0.0.1, ::1 or localhost)", *addr)
	}
	vkey := *key
	if vkey == "" {
		if _, vkey, err = ledger.InstallationKey(); err != nil {
			return err
		}
	}
	dir, err := session.DefaultDir()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	// Any process of this machine can connect to the port: the sessions
	// are served only with the token in the address printed below.
	var tok [16]byte
	rand.Read(tok[:])
	token := hex.EncodeToString(tok[:])
	srv := &http.Server{Handler: &page.Server{Store: session.Store{Dir: dir}, VKey: vkey, Token: token, Options: page.Options{MaxPayload: *maxPayload}},
		ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	fmt.Fprintf(stdout, "serving the sessions of %s at http://%s/?token=%s (read-only; the token keeps other processes out; Ctrl-C stops)\n", termsafe.Name(dir), ln.Addr(), token)
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
