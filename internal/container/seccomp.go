package container

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/trussdev/truss/internal/hostfs"
)

// TraceCalls are the system calls that reach into another process — trace
// it (and so rewrite its code or registers), read or write its memory, take
// its descriptors, compare its kernel objects, advise on its memory — which
// every container refuses with EPERM, as the host's sandbox does (its
// filter refuses the same list). Dropping CAP_SYS_PTRACE only keeps a
// process from tracing another user's: without these refusals a command
// traces another shell of the container (same user) and makes it run
// what it likes. (The supervisor, not dumpable, is out of their reach
// without CAP_SYS_PTRACE either way.)
func TraceCalls() []string {
	return []string{"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "process_madvise", "kcmp"}
}

// commonProfile is where containers-common installs the engines' default
// seccomp profile (Podman reads it; Docker's is built into the daemon and
// is, call for call, the same list).
const commonProfile = "/usr/share/containers/seccomp.json"

// maxProfile bounds the size of a base profile read.
const maxProfile = 4 << 20

// errNoProfile says a seccomp profile is not one this code can derive
// from.
var errNoProfile = errors.New("not a seccomp profile")

// lockedProfile derives the containers' seccomp profile from base, an
// engine's (in the JSON of containers-common and moby: defaultAction, and
// syscalls, each rule with names and an action): no rule names any of
// TraceCalls any more (whatever its action and the capabilities it
// includes), and a first rule refuses them with EPERM. Every other field and rule is kept
// as it is. A base whose default action is not a refusal (an
// "unconfined" one), or that is not such JSON, is an error.
func lockedProfile(base []byte) ([]byte, error) {
	var p map[string]any
	if err := json.Unmarshal(base, &p); err != nil {
		return nil, fmt.Errorf("%w: %v", errNoProfile, err)
	}
	def, _ := p["defaultAction"].(string)
	if def == "" || def == "SCMP_ACT_ALLOW" || def == "SCMP_ACT_LOG" {
		return nil, fmt.Errorf("%w: its default action is %q, not a refusal", errNoProfile, def)
	}
	rules, ok := p["syscalls"].([]any)
	if !ok {
		return nil, fmt.Errorf("%w: no list of syscalls", errNoProfile)
	}
	trace := TraceCalls()
	out := []any{map[string]any{"names": slices.Clone(trace), "action": "SCMP_ACT_ERRNO", "errnoRet": 1}}
	for _, r := range rules {
		rule, ok := r.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%w: a rule is %T", errNoProfile, r)
		}
		names, _ := rule["names"].([]any)
		if name, ok := rule["name"].(string); ok { // the older form: one name
			names = append(names, name)
			delete(rule, "name")
		}
		names = slices.DeleteFunc(names, func(n any) bool { s, _ := n.(string); return slices.Contains(trace, s) })
		if len(names) == 0 {
			continue
		}
		rule["names"] = names
		out = append(out, rule)
	}
	p["syscalls"] = out
	return json.MarshalIndent(p, "", " ")
}

// seccomp is the containers' seccomp profile, derived once from the
// engine's default (lockedProfile), and what the facts say of it; nil
// when there is none to derive from, with note saying why (the engine's
// default then applies, which lets a process trace another of its
// user's).
func (e *Engine) seccomp() (profile []byte, note string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.profileNote != "" {
		return e.profile, e.profileNote
	}
	if e.noSeccomp {
		e.profileNote = "none: the engine runs containers without seccomp"
		return nil, e.profileNote
	}
	e.profile, e.profileNote = deriveProfile(e.seccompBase)
	return e.profile, e.profileNote
}

// deriveProfile is lockedProfile of the profile at base, else of
// containers-common's, with the note the facts record.
func deriveProfile(base string) ([]byte, string) {
	var tried []string
	for _, p := range []string{base, commonProfile} {
		if p == "" || slices.Contains(tried, p) {
			continue
		}
		tried = append(tried, p)
		b, err := hostfs.ReadFile(p, maxProfile)
		if err != nil {
			continue
		}
		prof, err := lockedProfile(b)
		if err != nil {
			return nil, fmt.Sprintf("the engine's default (%s: %v): a process may trace another of its user's", p, err)
		}
		return prof, "the engine's default (" + p + ") with " + strings.Join(TraceCalls(), ", ") + " refused"
	}
	return nil, "the engine's default (no profile on disk to derive one from): a process may trace another of its user's"
}

// writeProfile writes the derived profile into the state directory and
// returns the run flag that applies it; none without one.
func writeProfile(state string, profile []byte) ([]string, error) {
	if profile == nil {
		return nil, nil
	}
	p := state + "/seccomp.json"
	if err := hostfs.WriteFileAtomic(p, profile, 0o644); err != nil {
		return nil, fmt.Errorf("the containers' seccomp profile: %w", err)
	}
	return []string{"--security-opt", "seccomp=" + p}, nil
}
