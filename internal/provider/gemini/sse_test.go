package gemini

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestReadSSE(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
		err      error
	}{
		{"lf", "data: {\"a\":1}\n\ndata: {\"b\":2}\n\n", []string{`{"a":1}`, `{"b":2}`}, nil},
		{"crlf", "data: {\"a\":1}\r\n\r\n", []string{`{"a":1}`}, nil},
		{"no space", "data:x\n\n", []string{"x"}, nil},
		{"multi-line", "data: a\ndata: b\n\n", []string{"a\nb"}, nil},
		{"comment and fields", ": ping\nevent: message\nid: 3\ndata: x\n\n", []string{"x"}, nil},
		{"no data", "event: x\n\n\n", nil, nil},
		{"cut", "data: {\"a\":1}\n\ndata: {\"b\"", []string{`{"a":1}`}, io.ErrUnexpectedEOF},
		{"empty", "", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			err := ReadSSE(strings.NewReader(tc.in), func(d []byte) error { got = append(got, string(d)); return nil })
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("events = %q, want %q", got, tc.want)
			}
		})
	}
}

// FuzzReadSSE: any bytes give events or an error, never a panic, and a
// stream's events are the same whatever the line ends.
func FuzzReadSSE(f *testing.F) {
	f.Add([]byte("data: {\"candidates\":[]}\n\n"))
	f.Add([]byte("data: a\r\ndata: b\r\n\r\n: c\n"))
	f.Add([]byte("data"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var lf []string
		errLF := ReadSSE(strings.NewReader(string(b)), func(d []byte) error { lf = append(lf, string(d)); return nil })
		if strings.Contains(string(b), "\r") {
			return
		}
		var crlf []string
		errCRLF := ReadSSE(strings.NewReader(strings.ReplaceAll(string(b), "\n", "\r\n")), func(d []byte) error { crlf = append(crlf, string(d)); return nil })
		if (errLF == nil) != (errCRLF == nil) || strings.Join(lf, "\x00") != strings.Join(crlf, "\x00") {
			t.Fatalf("LF %q (%v) vs CRLF %q (%v)", lf, errLF, crlf, errCRLF)
		}
	})
}

// FuzzStreamEvent: any event data is taken or refused, never a panic,
// and what is taken makes a response or a typed error.
func FuzzStreamEvent(f *testing.F) {
	f.Add([]byte(`{"candidates":[{"content":{"role":"model","parts":[{"text":"hi","thoughtSignature":"c2ln"}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":3}}`))
	f.Add([]byte(`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{"a":1}}}]},"finishReason":"MAX_TOKENS"}]}`))
	f.Add([]byte(`{"error":{"code":500,"message":"x","status":"INTERNAL"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := &stream{}
		if s.event(b) != nil {
			return
		}
		resp, err := s.response()
		if err == nil && resp == nil {
			t.Fatal("no response and no error")
		}
	})
}
