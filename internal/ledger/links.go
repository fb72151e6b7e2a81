package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strconv"
)

// Child is a verified sub-agent ledger.
type Child struct {
	// Entry is the parent's tool.result entry that links it.
	Entry  uint64
	Dir    string
	Report *Report
	// Children are its own sub-agents'.
	Children []Child
}

// VerifyLinks verifies the sub-agent ledgers that the tool.result entries
// of a verified ledger link, recursively: each child ledger must lie inside
// dir, verify with the same key, name the parent's session and the spawn
// call in its session.start, and have as its last checkpoint exactly the
// one the link names (the SHA-256 of its bytes, its size and root hash).
// Only entries covered by the parent's last checkpoint (sealed) are
// followed. Errors name the parent's entry.
func VerifyLinks(dir, vkey string, entries []Entry, sealed uint64) ([]Child, error) {
	var out []Child
	for _, lk := range Links(entries, sealed) {
		c, err := verifyChild(dir, vkey, lk)
		if err != nil {
			return out, bad(int64(lk.Entry), "sub-agent ledger: %v", err)
		}
		c.Entry = lk.Entry
		out = append(out, *c)
	}
	return out, nil
}

// ChildLink is a sub-agent ledger's link, as a tool.result entry states it.
type ChildLink struct {
	// Entry is the tool.result entry's index; Session its session, Call
	// the spawn call's id.
	Entry         uint64
	Session, Call string
	// Dir is the child ledger's directory relative to the parent's;
	// Size (decimal), Root (base64) and Checkpoint (hex SHA-256) name its
	// last checkpoint. Each is as the entry wrote it, unchecked.
	Dir, Size, Root, Checkpoint string
}

// Links returns the sub-agent links of entries' first sealed entries
// (tool.result entries with a results[].agent.ledger), in order.
func Links(entries []Entry, sealed uint64) []ChildLink {
	var out []ChildLink
	for i, e := range entries[:min(uint64(len(entries)), sealed)] {
		if e.Type != "tool.result" {
			continue
		}
		d, _ := e.Data.(map[string]any)
		results, _ := d["results"].([]any)
		callID, _ := d["call_id"].(string)
		for _, r := range results {
			rm, _ := r.(map[string]any)
			ag, _ := rm["agent"].(map[string]any)
			lk, _ := ag["ledger"].(map[string]any)
			if lk == nil {
				continue
			}
			dir, _ := lk["dir"].(string)
			root, _ := lk["root"].(string)
			cp, _ := lk["checkpoint"].(string)
			out = append(out, ChildLink{Entry: uint64(i), Session: e.Session, Call: callID, Dir: dir, Size: fmt.Sprint(lk["size"]), Root: root, Checkpoint: cp})
		}
	}
	return out
}

func verifyChild(dir, vkey string, link ChildLink) (*Child, error) {
	rel := link.Dir
	if rel == "" || !filepath.IsLocal(rel) {
		return nil, fmt.Errorf("the link's directory %q is not inside the ledger", rel)
	}
	cdir := filepath.Join(dir, filepath.FromSlash(rel))
	rep, entries, err := Verify(cdir, vkey)
	if err != nil {
		return nil, fmt.Errorf("%s does not verify: %w", rel, err)
	}
	size, err := strconv.ParseUint(link.Size, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%s: the link's size %v is not a tree size", rel, link.Size)
	}
	if size != rep.Sealed || rep.Unsealed != 0 || rep.TornBytes != 0 {
		return nil, fmt.Errorf("%s: the link names a tree of %d entries, but its last checkpoint covers %d of %d", rel, size, rep.Sealed, rep.Entries)
	}
	if want, err := base64.StdEncoding.DecodeString(link.Root); err != nil || !bytes.Equal(want, rep.Root) {
		return nil, fmt.Errorf("%s: its root hash is not the one the link names", rel)
	}
	sum := sha256.Sum256(rep.Checkpoint)
	if link.Checkpoint != hex.EncodeToString(sum[:]) {
		return nil, fmt.Errorf("%s: its last checkpoint is not the one the link names", rel)
	}
	if len(entries) == 0 || entries[0].Type != "session.start" {
		return nil, fmt.Errorf("%s: it does not begin with session.start", rel)
	}
	sd, _ := entries[0].Data.(map[string]any)
	p, _ := sd["parent"].(map[string]any)
	if s, _ := p["session"].(string); s != link.Session {
		return nil, fmt.Errorf("%s: its session.start names parent session %q, not %q", rel, s, link.Session)
	}
	if c, _ := p["call_id"].(string); c != link.Call {
		return nil, fmt.Errorf("%s: its session.start names spawn call %q, not %q", rel, c, link.Call)
	}
	kids, err := VerifyLinks(cdir, vkey, entries, rep.Sealed)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	return &Child{Dir: cdir, Report: rep, Children: kids}, nil
}
