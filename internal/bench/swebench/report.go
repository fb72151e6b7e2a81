package swebench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Report is the harness's report.json: one key, the instance id.
type Report map[string]*InstanceReport

// InstanceReport is one instance's entry in report.json. Field order is the
// harness's key order, so encoding/json writes the keys in the same order.
type InstanceReport struct {
	PatchIsNone              bool `json:"patch_is_None"`
	PatchExists              bool `json:"patch_exists"`
	PatchSuccessfullyApplied bool `json:"patch_successfully_applied"`
	Resolved                 bool `json:"resolved"`
	// None is v2.0.0–v2.1.4's marker of a None patch (those releases left
	// patch_is_None false and added "none": true).
	None *bool `json:"none,omitempty"`
	// InfraFailure is v5's; InfraFailureReason is set with it only when a
	// signature matched.
	InfraFailure       *bool        `json:"infra_failure,omitempty"`
	InfraFailureReason string       `json:"infra_failure_reason,omitempty"`
	TestsStatus        *TestsStatus `json:"tests_status,omitempty"`
}

// TestsStatus is report.json's tests_status. FAIL_TO_FAIL and PASS_TO_FAIL
// are always empty: the harness computes them only when asked, and its
// evaluation never asks.
type TestsStatus struct {
	FailToPass Outcome `json:"FAIL_TO_PASS"`
	PassToPass Outcome `json:"PASS_TO_PASS"`
	FailToFail Outcome `json:"FAIL_TO_FAIL"`
	PassToFail Outcome `json:"PASS_TO_FAIL"`
}

// Report returns the report.json the harness writes for this verdict
// (get_eval_report with include_tests_status=True).
func (v *Verdict) Report() Report {
	r := &InstanceReport{}
	if v.Rules == RulesV5 {
		f := v.InfraFailure
		r.InfraFailure = &f
		r.InfraFailureReason = v.InfraFailureReason
	}
	switch {
	case v.PatchIsNone && v.Rules == RulesV2_0:
		t := true
		r.None = &t
	case v.PatchIsNone:
		r.PatchIsNone = true
	default:
		r.PatchExists = true
		if v.PatchApplied {
			r.PatchSuccessfullyApplied = true
			r.Resolved = v.Resolved
			r.TestsStatus = &TestsStatus{
				FailToPass: nonNil(v.FailToPass),
				PassToPass: nonNil(v.PassToPass),
				FailToFail: Outcome{Success: []string{}, Failure: []string{}},
				PassToFail: Outcome{Success: []string{}, Failure: []string{}},
			}
		}
	}
	return Report{v.InstanceID: r}
}

func nonNil(o Outcome) Outcome {
	if o.Success == nil {
		o.Success = []string{}
	}
	if o.Failure == nil {
		o.Failure = []string{}
	}
	return o
}

// ParseReport reads a report.json.
func ParseReport(data []byte) (Report, error) {
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("swebench: reading report.json: %w", err)
	}
	return r, nil
}

// MarshalPython writes the report exactly as the harness does
// (json.dumps(report, indent=4): four-space indent, ", " never trailing,
// non-ASCII escaped as \uXXXX), so the bytes can be compared with an
// official report.json.
func (r Report) MarshalPython() []byte {
	// Go through encoding/json for the structure, then re-emit it in
	// Python's layout.
	data, err := json.Marshal(r)
	if err != nil {
		panic(err) // a Report always marshals
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var b bytes.Buffer
	writePy(&b, dec, 0)
	return b.Bytes()
}

// writePy re-emits the next JSON value of dec in Python's indent=4 layout,
// keeping object key order.
func writePy(b *bytes.Buffer, dec *json.Decoder, depth int) {
	tok, err := dec.Token()
	if err != nil {
		return
	}
	ind := func(d int) string { return "\n" + strings.Repeat("    ", d) }
	switch t := tok.(type) {
	case json.Delim:
		closeWith := "]"
		if t == '{' {
			closeWith = "}"
		}
		b.WriteByte(byte(t))
		n := 0
		for dec.More() {
			if n > 0 {
				b.WriteByte(',')
			}
			b.WriteString(ind(depth + 1))
			if t == '{' {
				k, _ := dec.Token()
				b.WriteString(pyQuote(k.(string)))
				b.WriteString(": ")
			}
			writePy(b, dec, depth+1)
			n++
		}
		_, _ = dec.Token() // the closing delimiter
		if n > 0 {
			b.WriteString(ind(depth))
		}
		b.WriteString(closeWith)
	case string:
		b.WriteString(pyQuote(t))
	case bool:
		fmt.Fprint(b, t)
	case nil:
		b.WriteString("null")
	case json.Number:
		b.WriteString(t.String())
	}
}

// pyQuote is json.dumps's string encoding with ensure_ascii=True.
func pyQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r >= 0x20 && r <= 0x7e:
				b.WriteRune(r)
			case r > 0xffff:
				r1, r2 := utf16.EncodeRune(r)
				fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
			case r == utf8.RuneError:
				b.WriteString(`\ufffd`)
			default:
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// Equal reports whether two reports say the same: the same instances with
// the same flags and the same test lists (as sets; the harness writes them
// in the task's order, which a reordered task list would change).
func (r Report) Equal(o Report) bool {
	if len(r) != len(o) {
		return false
	}
	for id, a := range r {
		b, ok := o[id]
		if !ok || (a == nil) != (b == nil) {
			return false
		}
		if a == nil {
			continue
		}
		x, y := *a, *b
		x.TestsStatus, y.TestsStatus = nil, nil
		xj, _ := json.Marshal(x)
		yj, _ := json.Marshal(y)
		if !bytes.Equal(xj, yj) || !sameTests(a.TestsStatus, b.TestsStatus) {
			return false
		}
	}
	return true
}

func sameTests(a, b *TestsStatus) bool {
	if a == nil || b == nil {
		return a == b
	}
	for _, p := range [][2]Outcome{{a.FailToPass, b.FailToPass}, {a.PassToPass, b.PassToPass}, {a.FailToFail, b.FailToFail}, {a.PassToFail, b.PassToFail}} {
		if !sameSet(p[0].Success, p[1].Success) || !sameSet(p[0].Failure, p[1].Failure) {
			return false
		}
	}
	return true
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	x := append([]string(nil), a...)
	y := append([]string(nil), b...)
	sort.Strings(x)
	sort.Strings(y)
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}
