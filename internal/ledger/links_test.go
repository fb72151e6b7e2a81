package ledger

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// family writes a parent ledger whose tool.result links a child ledger in
// agents/c1, with link fields changed by mut.
func family(t *testing.T, mut func(link map[string]any, childParent *Link)) (string, string) {
	t.Helper()
	signer, vkey := newKey(t, "truss-test")
	dir := t.TempDir()
	parent := filepath.Join(dir, "ledger")
	pw, err := Create(parent, "P", signer)
	if err != nil {
		t.Fatal(err)
	}
	cp := &Link{Session: "P", CallID: "c1"}
	link := map[string]any{"dir": "agents/c1"}
	mut(link, cp)
	cw, err := Create(filepath.Join(parent, "agents", "c1"), "P.c1", signer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cw.Append("session.start", Start{Truss: "test", Parent: cp}, nil); err != nil {
		t.Fatal(err)
	}
	cw.Append("session.end", map[string]any{"status": "completed"}, nil)
	size, root, signed, err := cw.Seal()
	if err != nil {
		t.Fatal(err)
	}
	cw.Close()
	sum := sha256.Sum256(signed)
	for k, v := range map[string]any{"size": size, "root": base64.StdEncoding.EncodeToString(root), "checkpoint": hex.EncodeToString(sum[:])} {
		if _, set := link[k]; !set {
			link[k] = v
		}
	}
	pw.Append("session.start", Start{Truss: "test"}, nil)
	pw.Append("tool.result", map[string]any{"call_id": "c1", "results": []any{map[string]any{"op": "agent.spawn", "agent": map[string]any{"ledger": link}}}}, nil)
	pw.Close()
	return parent, vkey
}

func TestVerifyLinks(t *testing.T) {
	for _, tc := range []struct {
		name string
		mut  func(link map[string]any, cp *Link)
		err  string
	}{
		{"good", func(map[string]any, *Link) {}, ""},
		{"outside", func(l map[string]any, _ *Link) { l["dir"] = "../x" }, `directory "../x" is not inside`},
		{"size", func(l map[string]any, _ *Link) { l["size"] = 1 }, "names a tree of 1 entries"},
		{"root", func(l map[string]any, _ *Link) { l["root"] = base64.StdEncoding.EncodeToString(make([]byte, 32)) }, "root hash is not the one"},
		{"checkpoint", func(l map[string]any, _ *Link) { l["checkpoint"] = strings.Repeat("0", 64) }, "last checkpoint is not the one"},
		{"parent session", func(_ map[string]any, cp *Link) { cp.Session = "Q" }, `names parent session "Q"`},
		{"call", func(_ map[string]any, cp *Link) { cp.CallID = "c2" }, `names spawn call "c2"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, vkey := family(t, tc.mut)
			r, entries, err := Verify(dir, vkey)
			if err != nil {
				t.Fatal(err)
			}
			kids, err := VerifyLinks(dir, vkey, entries, r.Sealed)
			if tc.err == "" {
				if err != nil || len(kids) != 1 || kids[0].Report.Session != "P.c1" || kids[0].Entry != 1 {
					t.Fatalf("kids %+v err %v", kids, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "entry 1: sub-agent ledger") {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
		})
	}
	// A child entry changed after the fact.
	dir, vkey := family(t, func(map[string]any, *Link) {})
	p := filepath.Join(dir, "agents", "c1", "entries.jsonl")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(b), "completed", "Completed", 1)), 0o600)
	r, entries, _ := Verify(dir, vkey)
	if _, err := VerifyLinks(dir, vkey, entries, r.Sealed); err == nil || !strings.Contains(err.Error(), "agents/c1 does not verify") {
		t.Fatalf("changed child: %v", err)
	}
}
