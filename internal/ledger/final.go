package ledger

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// InlineFiles is the most files a session.end entry lists in data.files;
// past it, data.files_count says how many, and the payload final_files
// alone lists them (a command that makes 100,000 files would otherwise
// put them into the entry, its canonical form and the payload at once).
const InlineFiles = 1000

// finalFiles is each file the session changed, to its last content's
// SHA-256 (the zero digest: deleted), kept compact: a session may change
// hundreds of thousands of files.
type finalFiles map[string][32]byte

// set records path's last digest d (hex; "" when deleted) and reports
// whether d was one.
func (f finalFiles) set(path, d string) bool {
	var sum [32]byte
	if d != "" {
		if len(d) != 64 {
			return false
		}
		if _, err := hex.Decode(sum[:], []byte(d)); err != nil {
			return false
		}
	}
	f[path] = sum
	return true
}

// json is the files as session.end's data.files and the final_files
// payload name them: a JSON object from path to hex digest ("" when
// deleted), keys sorted.
func (f finalFiles) json() []byte {
	var buf bytes.Buffer
	buf.Grow(len(f) * 100)
	buf.WriteByte('{')
	var zero [32]byte
	var hexd [64]byte
	for i, p := range slices.Sorted(maps.Keys(f)) {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, _ := json.Marshal(p) // a string always encodes
		buf.Write(k)
		buf.WriteByte(':')
		if d := f[p]; d == zero {
			buf.WriteString(`""`)
		} else {
			hex.Encode(hexd[:], d[:])
			buf.WriteByte('"')
			buf.Write(hexd[:])
			buf.WriteByte('"')
		}
	}
	buf.WriteByte('}')
	return buf.Bytes()
}

// FinalFiles returns what a session.end entry says the session left in
// its workspace: each changed file to its hex SHA-256, "" where it was
// deleted; from data.files, else (a session that changed more than
// InlineFiles files) from the payload final_files of the ledger in dir.
func FinalFiles(dir string, end Entry) (map[string]string, error) {
	var data struct {
		Files map[string]string `json:"files"`
		Count *int              `json:"files_count"`
	}
	b, _ := json.Marshal(end.Data)
	if err := json.Unmarshal(b, &data); err != nil {
		return nil, &Error{Entry: int64(end.Seq), Reason: "session.end has no file list: " + err.Error()}
	}
	if data.Count == nil {
		if data.Files == nil {
			data.Files = map[string]string{}
		}
		return data.Files, nil
	}
	d, ok := end.Payloads["final_files"]
	if !ok {
		return nil, &Error{Entry: int64(end.Seq), Reason: "session.end has files_count but no final_files payload"}
	}
	s, err := openPayloads(dir)
	if err != nil {
		return nil, err
	}
	p, err := s.get(d)
	if err != nil {
		return nil, &Error{Entry: int64(end.Seq), Reason: "final_files: " + err.Error()}
	}
	var files map[string]string
	if err := json.Unmarshal(p, &files); err != nil {
		return nil, &Error{Entry: int64(end.Seq), Reason: "final_files is not a JSON object of digests: " + err.Error()}
	}
	if len(files) != *data.Count {
		return nil, &Error{Entry: int64(end.Seq), Reason: fmt.Sprintf("final_files lists %d files, files_count says %d", len(files), *data.Count)}
	}
	return files, nil
}
