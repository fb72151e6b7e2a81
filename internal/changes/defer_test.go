package changes

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestDeferredBaseline: a baseline that Options.Defer holds is not taken
// until the channel is closed, or until something waits for it; what the
// tree holds when it starts is the baseline, not a change.
func TestDeferredBaseline(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(tr *Tracker, gate chan struct{}) error
	}{
		{"the gate opens", func(tr *Tracker, gate chan struct{}) error {
			close(gate)
			<-tr.ready
			return tr.err
		}},
		{"Ready waits", func(tr *Tracker, _ chan struct{}) error { return tr.Ready(context.Background()) }},
		{"Scan waits", func(tr *Tracker, _ chan struct{}) error {
			_, err := tr.Scan(context.Background())
			return err
		}},
		{"Note waits", func(tr *Tracker, _ chan struct{}) error {
			tr.Note(nil)
			return tr.err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			gate := make(chan struct{})
			tr, err := Open(context.Background(), []string{root}, Options{Defer: gate, IndexMemory: 1})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { tr.Close() })
			for range 100 {
				runtime.Gosched()
			}
			if tr.baselineDone() {
				t.Fatal("the baseline was taken while the gate was closed and nothing waited")
			}
			// Made before the baseline: part of it, not a change.
			if err := os.WriteFile(filepath.Join(root, "early.txt"), []byte("early\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := tc.start(tr, gate); err != nil {
				t.Fatal(err)
			}
			got, err := tr.Scan(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 0 {
				t.Errorf("changes %v: a file made before the deferred baseline is not a change", got)
			}
		})
	}
	t.Run("Close", func(t *testing.T) {
		tr, err := Open(context.Background(), []string{t.TempDir()}, Options{Defer: make(chan struct{})})
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Close(); err != nil {
			t.Fatal(err)
		}
	})
}
