package page_test

import (
	"bytes"
	"testing"

	"github.com/trussdev/truss/internal/ledger/page"
)

// BenchmarkPage200 builds and writes the page of a 200-turn session
// (each turn a response, an edit of a 6 KB file and a command), and
// reports its size, which must stay under 5 MB.
func BenchmarkPage200(b *testing.B) {
	dir, vkey := sample(b, 200, true)
	var size int
	for b.Loop() {
		doc, err := page.Build([]string{dir}, page.Options{VKey: vkey})
		if err != nil {
			b.Fatal(err)
		}
		var buf bytes.Buffer
		if err := page.Write(&buf, doc); err != nil {
			b.Fatal(err)
		}
		size = buf.Len()
	}
	b.ReportMetric(float64(size), "page-bytes")
	if size >= 5<<20 {
		b.Errorf("the page of a 200-turn session is %d bytes, over 5 MB", size)
	}
}

// BenchmarkVerify200 verifies that page with the Go verifier, as
// truss ledger verify FILE.html does.
func BenchmarkVerify200(b *testing.B) {
	dir, vkey := sample(b, 200, true)
	doc, err := page.Build([]string{dir}, page.Options{VKey: vkey})
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	if err := page.Write(&buf, doc); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := page.Verify(buf.Bytes(), ""); err != nil {
			b.Fatal(err)
		}
	}
}
