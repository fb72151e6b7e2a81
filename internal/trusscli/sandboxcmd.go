package trusscli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/trussdev/truss/internal/cli"
	"github.com/trussdev/truss/internal/harness"
	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/termsafe"
)

// cmdSandbox is truss sandbox check: what this host can enforce, and the
// plan for the requested policy. It exits 1 when the policy cannot be
// enforced (without an accepted fallback).
func cmdSandbox(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "check" {
		return cli.Usagef("usage: truss sandbox check [--sandbox MODE] [--network on|off] [--sandbox-fallback F] [--root DIR] [--json]")
	}
	fset := cli.NewFlagSet("sandbox check", stderr)
	var w workspaceFlags
	fset.StringVar(&w.root, "root", ".", "the workspace the policy is for")
	w.registerSandbox(fset)
	asJSON := fset.Bool("json", false, "print the host and the plan as one JSON object")
	if err := cli.ParseNone(fset, args[1:]); err != nil {
		return err
	}
	root, err := filepath.Abs(w.root)
	if err != nil {
		return err
	}
	tmp := filepath.Join(os.TempDir(), "truss-session-XXXX")
	host := sandbox.ProbeThorough()
	var so harness.SandboxOptions
	if err := w.sandboxOptions(&so); err != nil {
		return err
	}
	pl, caches, planErr := harness.PlanSandbox(root, tmp, so)
	if harness.IsConfigError(planErr) {
		return planErr
	}
	if *asJSON {
		out := struct {
			Host     sandbox.Host  `json:"host"`
			Enforced string        `json:"enforced,omitempty"`
			Plan     *sandbox.Plan `json:"plan,omitempty"`
			Error    string        `json:"error,omitempty"`
			Helper   string        `json:"helper,omitempty"`
			// Protections are the ways out, closed or open on this host.
			Protections []sandbox.Protection `json:"protections,omitempty"`
		}{Host: host, Plan: pl}
		if pl != nil {
			out.Helper, _ = pl.Helper() // the one the protections name
			out.Enforced = pl.Enforced()
			out.Protections = pl.Protections(host)
		}
		if planErr != nil {
			out.Error = planErr.Error()
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		yes := func(b bool, why string) string {
			if b {
				return "yes"
			}
			return "no (" + why + ")"
		}
		ll := fmt.Sprintf("ABI v%d", host.LandlockABI)
		if host.LandlockABI == 0 {
			ll = "no (" + host.LandlockErr + ")"
		}
		cgroup := func(dir, why, instead string) string {
			if dir != "" {
				return dir
			}
			return "no (" + why + "); " + instead
		}
		fmt.Fprintf(stdout, "host: %s\n", host.OS)
		fmt.Fprintf(stdout, "  user namespaces  %s\n", yes(host.UserNS, host.UserNSErr))
		fmt.Fprintf(stdout, "  landlock         %s\n", ll)
		fmt.Fprintf(stdout, "  seccomp          %s\n", yes(host.Seccomp, "the kernel has no seccomp filters"))
		fmt.Fprintf(stdout, "  pids cgroup      %s\n", cgroup(host.Cgroup, host.CgroupErr, "RLIMIT_NPROC instead, which root ignores"))
		fmt.Fprintf(stdout, "  memory cgroup    %s\n", cgroup(host.MemoryCgroup, host.MemoryCgroupErr, "RLIMIT_DATA per process instead"))
		fmt.Fprintf(stdout, "  cpu cgroup       %s\n", cgroup(host.CPUCgroup, host.CPUCgroupErr, "nice only"))
		mode, network := w.sandbox, w.network
		if pl != nil {
			mode, network = string(pl.Policy.Mode), "off"
			if pl.Policy.Network {
				network = "on"
			}
		}
		fmt.Fprintf(stdout, "policy: --sandbox %s --network %s for %s\n", mode, network, termsafe.Name(root))
		if pl != nil {
			fmt.Fprintf(stdout, "would run: %s\n", pl.Enforced())
			if pl.Active() {
				writable := append([]string{root + " (workspace)", "the session's temporary directory"}, pl.Policy.Writable...)
				if pl.Policy.Mode == sandbox.ReadOnly {
					// The caches are in the temporary directory; the file
					// tools change nothing either.
					writable = []string{"the session's temporary directory (the caches' too); the file tools change nothing"}
				}
				fmt.Fprintf(stdout, "writable: %v\n", writable)
				if caches != nil {
					fmt.Fprintf(stdout, "caches: %s\n", caches)
				}
				if len(pl.Policy.Protected) > 0 {
					fmt.Fprintf(stdout, "read-only inside: %v\n", pl.Policy.Protected)
				}
			}
			fmt.Fprintf(stdout, "protections:\n")
			for _, p := range pl.Protections(host) {
				state := "enforced"
				if !p.Enforced {
					state = "NOT enforced"
				}
				fmt.Fprintf(stdout, "  %-17s %-12s %s\n", p.Name, state, p.How)
			}
		}
	}
	if planErr != nil {
		if !*asJSON {
			fmt.Fprintf(stdout, "would refuse: %v\n", planErr)
		}
		return cli.ExitError{Code: 1}
	}
	return nil
}
