package fs

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/trussdev/truss/internal/tool"
)

// fresh refuses a change of a file that differs from what this executor
// last saw of it (see Execute). A delete or a rename checks every file
// below its path as well. A create, which never overwrites, is not
// checked. Errors of the operation itself (a bad path) are left to the
// operation.
func (e *Executor) fresh(call tool.Call) error {
	var name string
	tree := false
	switch a := call.Args.(type) {
	case *tool.CreateArgs:
		if call.Op == tool.OpCreate {
			return nil
		}
		name = a.Path
	case *tool.ReplaceArgs:
		name = a.Path
	case *tool.InsertArgs:
		name = a.Path
	case *tool.UndoArgs:
		name = a.Path
	case *tool.DeleteArgs:
		name, tree = a.Path, true
	case *tool.RenameArgs:
		name, tree = a.From, true
	default:
		return nil
	}
	e.mu.Lock()
	if len(e.seen) == 0 {
		e.mu.Unlock()
		return nil
	}
	e.mu.Unlock()
	p, err := e.W.Resolve(name)
	if err != nil {
		return nil
	}
	key := p.Display()
	type check struct {
		key string
		st  seenState
	}
	var checks []check
	e.mu.Lock()
	for k, st := range e.seen {
		if k == key || tree && strings.HasPrefix(k, key+"/") {
			checks = append(checks, check{k, st})
		}
	}
	e.mu.Unlock()
	for _, c := range checks {
		shown := c.key
		if c.key == key {
			shown = name
		}
		q, err := e.W.Resolve(c.key)
		if err != nil {
			continue
		}
		fi, err := q.Stat()
		if errors.Is(err, fs.ErrNotExist) || err == nil && fi.IsDir() {
			continue // nothing there to overwrite
		}
		if err != nil {
			continue // unreadable: the operation reports it
		}
		if c.st.exists {
			b, err := q.ReadFile()
			if err != nil || tool.Digest(b) == c.st.digest {
				continue
			}
		}
		return &tool.Error{Kind: tool.ErrStale, Path: shown,
			Message: fmt.Sprintf("%s changed since you last viewed it (by another agent or a command); view it again before editing", shown)}
	}
	return nil
}

// note records the files a change left, as this executor now knows them:
// a file with its new content, a deleted or moved-away file as absent.
func (e *Executor) note(changes []tool.FileChange) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.seen == nil {
		e.seen = map[string]seenState{}
	}
	set := func(k string, st seenState) {
		if st.exists && st.digest == "" {
			delete(e.seen, k) // content unknown (not a regular file)
			return
		}
		e.seen[k] = st
	}
	for _, ch := range changes {
		switch {
		case ch.MovedTo != "":
			set(ch.Path, seenState{})
			set(ch.MovedTo, seenState{digest: ch.After, exists: true})
		case ch.Kind == tool.ChangeDelete:
			set(ch.Path, seenState{})
		default:
			set(ch.Path, seenState{digest: ch.After, exists: true})
		}
	}
}

// noteDigest records the digest of the content a view read.
func (e *Executor) noteDigest(p Resolved, d string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.seen == nil {
		e.seen = map[string]seenState{}
	}
	e.seen[p.Display()] = seenState{digest: d, exists: true}
}
