package container

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
)

// TestLockedProfile: the derived profile keeps the base's default action,
// fields and rules, names none of TraceCalls in any rule but its own
// first one, which refuses them with EPERM; a base that refuses nothing
// by default, or is not a profile, is an error.
func TestLockedProfile(t *testing.T) {
	base := `{"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 38, "archMap": [{"architecture": "SCMP_ARCH_X86_64"}],
 "syscalls": [
  {"names": ["read", "ptrace", "write", "process_vm_readv", "pidfd_getfd"], "action": "SCMP_ACT_ALLOW", "args": [], "includes": {}, "excludes": {}},
  {"names": ["kcmp", "process_madvise"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_PTRACE"]}},
  {"names": ["kcmp", "process_madvise"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1, "excludes": {"caps": ["CAP_SYS_PTRACE"]}},
  {"name": "process_vm_writev", "action": "SCMP_ACT_ALLOW"},
  {"names": ["clone"], "action": "SCMP_ACT_ALLOW", "args": [{"index": 0, "value": 2114060288, "op": "SCMP_CMP_MASKED_EQ"}]}
 ]}`
	out, err := lockedProfile([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		DefaultAction   string            `json:"defaultAction"`
		DefaultErrnoRet int               `json:"defaultErrnoRet"`
		ArchMap         []json.RawMessage `json:"archMap"`
		Syscalls        []struct {
			Names    []string          `json:"names"`
			Name     string            `json:"name"`
			Action   string            `json:"action"`
			ErrnoRet *int              `json:"errnoRet"`
			Args     []json.RawMessage `json:"args"`
		} `json:"syscalls"`
	}
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatal(err)
	}
	if p.DefaultAction != "SCMP_ACT_ERRNO" || p.DefaultErrnoRet != 38 || len(p.ArchMap) != 1 {
		t.Errorf("the base's defaults were not kept: %s", out)
	}
	first := p.Syscalls[0]
	if !slices.Equal(first.Names, TraceCalls()) || first.Action != "SCMP_ACT_ERRNO" || first.ErrnoRet == nil || *first.ErrnoRet != 1 {
		t.Errorf("the first rule does not refuse TraceCalls with EPERM: %+v", first)
	}
	var kept []string
	for _, r := range p.Syscalls[1:] {
		if r.Name != "" {
			t.Errorf("a rule kept the one-name form: %+v", r)
		}
		for _, n := range r.Names {
			if slices.Contains(TraceCalls(), n) {
				t.Errorf("a rule still names %s: %+v", n, r)
			}
			kept = append(kept, n)
		}
	}
	if !slices.Equal(kept, []string{"read", "write", "clone"}) || len(p.Syscalls[len(p.Syscalls)-1].Args) != 1 {
		t.Errorf("the other rules were not kept as they were: %s", out)
	}
	for _, bad := range []string{`{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": []}`, `{"syscalls": []}`, `{"defaultAction": "SCMP_ACT_ERRNO"}`,
		`{"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [1]}`, `[]`, `not json`} {
		if _, err := lockedProfile([]byte(bad)); !errors.Is(err, errNoProfile) {
			t.Errorf("%s: %v, want errNoProfile", bad, err)
		}
	}
}

// FuzzLockedProfile: any input is refused or gives JSON whose first rule
// refuses TraceCalls and whose other rules name none of them.
func FuzzLockedProfile(f *testing.F) {
	f.Add(`{"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [{"names": ["ptrace", "read"], "action": "SCMP_ACT_ALLOW"}]}`)
	f.Add(`{"defaultAction": "SCMP_ACT_KILL", "syscalls": [{"name": "kcmp", "action": "SCMP_ACT_ALLOW"}, {"names": [1, null], "action": 3}]}`)
	f.Add(`{"defaultAction": "SCMP_ACT_ALLOW"}`)
	f.Fuzz(func(t *testing.T, in string) {
		out, err := lockedProfile([]byte(in))
		if err != nil {
			return
		}
		var p struct {
			Syscalls []struct {
				Names []any `json:"names"`
			} `json:"syscalls"`
		}
		if err := json.Unmarshal(out, &p); err != nil || len(p.Syscalls) == 0 {
			t.Fatalf("%q gave %s (%v)", in, out, err)
		}
		for i, r := range p.Syscalls {
			for _, n := range r.Names {
				if s, _ := n.(string); slices.Contains(TraceCalls(), s) && i > 0 {
					t.Fatalf("rule %d names %s: %s", i, s, out)
				}
			}
		}
	})
}

// TestProfileFromEngineDefault: the profile on this host derives from
// the engine's default on disk, when there is one.
func TestProfileFromEngineDefault(t *testing.T) {
	prof, note := deriveProfile("")
	if prof == nil {
		t.Skipf("skipped: no profile to derive from here: %s", note)
	}
	if _, err := lockedProfile(prof); err != nil {
		t.Errorf("the derived profile is not a profile: %v", err)
	}
}
