package tool_test

import (
	"testing"

	"github.com/trussdev/truss/internal/tool"
)

// TestFileChangeNote: a change that is not one file's text says what it
// is; one of a file's contents says nothing (a diff shows it).
func TestFileChangeNote(t *testing.T) {
	for _, tc := range []struct {
		c    tool.FileChange
		want string
	}{
		{tool.FileChange{Path: "a.go", Kind: tool.ChangeUpdate, Before: "1", After: "2"}, ""},
		{tool.FileChange{Path: "cache", Kind: tool.ChangeUpdate, Files: 1, Bytes: 1, After: "m"}, "1 file changed beneath it, 1 byte after"},
		{tool.FileChange{Path: "cache", Kind: tool.ChangeAdd, Files: 3, Bytes: 6, After: "m"}, "3 files changed beneath it, 6 bytes after"},
		{tool.FileChange{Path: "cur", Kind: tool.ChangeUpdate, LinkBefore: "v1", LinkAfter: "v2"}, "a link, from v1 to v2"},
		{tool.FileChange{Path: "cur", Kind: tool.ChangeAdd, LinkAfter: "v2"}, "a link to v2"},
		{tool.FileChange{Path: "cur", Kind: tool.ChangeDelete, LinkBefore: "v1"}, "a link to v1"},
		{tool.FileChange{Path: "p", Kind: tool.ChangeAdd, Type: "fifo"}, "a FIFO"},
		{tool.FileChange{Path: "s", Kind: tool.ChangeAdd, Type: "socket"}, "a socket"},
		{tool.FileChange{Path: "d", Kind: tool.ChangeAdd, Type: "device"}, "a device"},
		{tool.FileChange{Path: "x", Kind: tool.ChangeUpdate, Type: "unlistable"}, "a directory whose listing was refused"},
		{tool.FileChange{Path: "x", Kind: tool.ChangeUpdate, Type: "too_large"}, "a directory too large to track"},
	} {
		if got := tc.c.Note(); got != tc.want {
			t.Errorf("%+v: Note() = %q, want %q", tc.c, got, tc.want)
		}
	}
}
