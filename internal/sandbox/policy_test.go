package sandbox_test

import (
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/sandbox"
)

// TestDefaultPolicyWritesNothingOfTheHost: the default policy makes no host
// directory writable (the user's caches included); a session adds its own.
func TestDefaultPolicyWritesNothingOfTheHost(t *testing.T) {
	if p := sandbox.DefaultPolicy("/ws", "/tmp/x"); len(p.Writable) != 0 {
		t.Errorf("default policy writes %v", p.Writable)
	}
}

// TestEnforcedNamesTheABI: the plan names the Landlock ABI as the host
// report does ("ABI vN"), and the one it uses.
func TestEnforcedNamesTheABI(t *testing.T) {
	host := sandbox.Host{OS: "linux", LandlockABI: 3, Seccomp: true, UserNSErr: "no userns"}
	pl, err := sandbox.MakePlan(sandbox.DefaultPolicy("/ws", "/tmp/x"), host, sandbox.FallbackLandlock)
	if err != nil {
		t.Fatal(err)
	}
	if e := pl.Enforced(); !strings.Contains(e, "landlock ABI v3") {
		t.Errorf("enforced: %s", e)
	}
}
