package trusscli

import (
	"fmt"
	"github.com/trussdev/truss/internal/cli"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/trussdev/truss/internal/config"
	"github.com/trussdev/truss/internal/harness"
	"github.com/trussdev/truss/internal/termsafe"
	"github.com/trussdev/truss/internal/trust"
)

// cmdTrust is truss trust [--status|--revoke] [DIR]: record the project
// configuration of DIR as trusted (its files' digests), show whether it
// is (exit status 1 when a configuration is there and not obeyed), or
// forget it.
func cmdTrust(args []string, stdout, stderr io.Writer) error {
	// File names, server names and settings come from files commands can
	// write: none of their escape sequences reaches the terminal.
	stdout = termsafe.Writer{W: stdout}
	fset := cli.NewFlagSet("trust", stderr)
	cli.Describe(fset, "truss trust [--status|--revoke] [DIR]", `Trusts the project configuration of DIR (default: the current directory),
.truss/config.toml and what it names, as it is now. Until it is trusted it cannot
widen the sandbox, start programs (MCP servers, a test command) or hide files from
the ledger; a change to it
needs trusting again. --status says whether it is, and exits 1 when there is a
configuration that is not obeyed (not trusted, or changed since), 0 when it is
trusted or there is none; --revoke forgets it.`)
	status := fset.Bool("status", false, "only say whether the configuration is trusted (exit status 1 when it is not)")
	revoke := fset.Bool("revoke", false, "forget that the configuration was trusted")
	dir, ok, err := cli.ParseArg(fset, args)
	if err != nil {
		return err
	}
	if !ok || (*status && *revoke) {
		return cli.Usagef("usage: truss trust [--status | --revoke] [DIR]")
	}
	if dir == "" {
		dir = "."
	}
	root, err := trust.Key(dir)
	if err != nil {
		return cli.Usagef("%v", err)
	}
	st, err := trust.UserStore()
	if err != nil {
		return err
	}
	switch {
	case *revoke:
		ok, err := st.Revoke(root)
		if err != nil {
			return err
		}
		if ok {
			fmt.Fprintf(stdout, "the project configuration of %s is no longer trusted\n", termsafe.Name(root))
		} else {
			fmt.Fprintf(stdout, "the project configuration of %s was not trusted\n", termsafe.Name(root))
		}
		return nil
	case *status:
		files, err := config.ReadFiles(root)
		if err != nil {
			return err
		}
		d, err := st.Check(root, files)
		if err != nil {
			return err
		}
		switch d.State {
		case trust.None:
			fmt.Fprintf(stdout, "%s has no project configuration (%s, %s/*.md)\n", termsafe.Name(root), config.Path, config.AgentsDir)
		case trust.Trusted:
			fmt.Fprintf(stdout, "trusted since %s: %s\n", d.Since.Local().Format(time.DateTime), names(files.Paths()))
		case trust.Changed:
			fmt.Fprintf(stdout, "changed since it was trusted (%s): %s; review and run truss trust\n", d.Since.Local().Format(time.DateTime), names(d.Changed))
			return cli.ExitError{Code: 1}
		default:
			fmt.Fprintf(stdout, "not trusted: %s; review and run truss trust\n", names(files.Paths()))
			return cli.ExitError{Code: 1}
		}
		return nil
	}
	// What is trusted is what was read and parsed here: a configuration
	// that does not load is refused.
	cfg, files, err := config.Read(root)
	if err != nil {
		return err
	}
	if err := harness.CheckAgents(cfg); err != nil {
		return err
	}
	if len(files) == 0 {
		fmt.Fprintf(stdout, "%s has no project configuration (%s, %s/*.md): nothing to trust\n", termsafe.Name(root), config.Path, config.AgentsDir)
		return nil
	}
	if err := st.Trust(root, files, time.Now()); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "trusted the project configuration of %s:\n", termsafe.Name(root))
	digests := files.Digests()
	for _, p := range files.Paths() {
		fmt.Fprintf(stdout, "  %s  sha256:%s\n", termsafe.Name(p), digests[p])
	}
	if w := cfg.Widening(); len(w) > 0 {
		fmt.Fprintf(stdout, "now obeyed: %s\n", strings.Join(w, ", "))
	}
	fmt.Fprintf(stdout, "recorded in %s; a change to these files is not obeyed until trusted again\n", termsafe.Name(filepath.Clean(st.Path)))
	return nil
}

// names shows file names, each by termsafe.Name, separated by commas.
func names(ps []string) string {
	shown := make([]string, len(ps))
	for i, p := range ps {
		shown[i] = termsafe.Name(p)
	}
	return strings.Join(shown, ", ")
}
