package ledger

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	fproof "github.com/transparency-dev/formats/proof"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
)

// Prove returns an inclusion proof of entry index in the ledger's last
// checkpoint, in the C2SP tlog-proof format. The ledger is verified first.
func Prove(dir, vkey string, index uint64) ([]byte, error) {
	r, _, err := Verify(dir, vkey)
	if err != nil {
		return nil, fmt.Errorf("the ledger does not verify: %w", err)
	}
	if index >= r.Sealed {
		return nil, fmt.Errorf("entry %d is not covered by the last checkpoint (size %d)", index, r.Sealed)
	}
	leaves, err := readLeaves(dir, r.Sealed)
	if err != nil {
		return nil, err
	}
	nodes, err := proof.Inclusion(index, r.Sealed)
	if err != nil {
		return nil, err
	}
	hashes := make([][]byte, len(nodes.IDs))
	for i, id := range nodes.IDs {
		hashes[i] = nodeHash(leaves, id)
	}
	hashes, err = nodes.Rehash(hashes, rfc6962.DefaultHasher.HashChildren)
	if err != nil {
		return nil, err
	}
	if err := proof.VerifyInclusion(rfc6962.DefaultHasher, index, r.Sealed, leaves[index], hashes, r.Root); err != nil {
		return nil, fmt.Errorf("the proof does not verify: %w", err)
	}
	cp := r.Checkpoint
	tp := fproof.TLogProof{Index: index, Checkpoint: cp}
	for _, h := range hashes {
		var a [32]byte
		copy(a[:], h)
		tp.Hashes = append(tp.Hashes, a)
	}
	return tp.Marshal(), nil
}

// readLeaves returns the leaf hashes of the first n entries.
func readLeaves(dir string, n uint64) ([][]byte, error) {
	data, err := os.ReadFile(filepath.Join(dir, "entries.jsonl"))
	if err != nil {
		return nil, err
	}
	var leaves [][]byte
	for len(data) > 0 && uint64(len(leaves)) < n {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			break
		}
		leaves = append(leaves, rfc6962.DefaultHasher.HashLeaf(data[:nl]))
		data = data[nl+1:]
	}
	return leaves, nil
}

// nodeHash is the hash of a perfect subtree: the root over its leaves.
func nodeHash(leaves [][]byte, id compact.NodeID) []byte {
	begin, end := id.Coverage()
	rng := newRange(begin)
	for i := begin; i < end; i++ {
		rng.Append(leaves[i], nil)
	}
	// A perfect, aligned subtree is a compact range of one node: its hash.
	return rng.Hashes()[0]
}
