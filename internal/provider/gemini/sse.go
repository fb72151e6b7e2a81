package gemini

import (
	"bufio"
	"bytes"
	"io"
)

// maxEvent is the longest server-sent event read (a whole chunk of the
// stream: one response with its parts).
const maxEvent = 64 << 20

// ErrCutEvent is returned by ReadSSE when the stream ends in the middle of
// an event (data lines without the blank line that ends them). It wraps
// io.ErrUnexpectedEOF, and costs the package's initialisation nothing.
var ErrCutEvent error = cutEvent{}

type cutEvent struct{}

func (cutEvent) Error() string {
	return "the stream ended in the middle of an event: " + io.ErrUnexpectedEOF.Error()
}
func (cutEvent) Unwrap() error { return io.ErrUnexpectedEOF }

// ReadSSE reads a text/event-stream (the WHATWG framing Gemini's ?alt=sse
// uses: "data: {json}" lines, an event ended by a blank line, CRLF or LF
// line ends, ":" comments, other fields ignored) and calls fn with each
// event's data, its data lines joined by "\n". An event without data is
// skipped. It returns fn's first error, the reader's, ErrCutEvent when
// the stream stops inside an event, or nil at a clean end.
func ReadSSE(r io.Reader, fn func(data []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxEvent)
	var data bytes.Buffer
	pending := false // a data line was read since the last dispatch
	for sc.Scan() {
		line := bytes.TrimSuffix(sc.Bytes(), []byte("\r"))
		if len(line) == 0 {
			if pending {
				if err := fn(data.Bytes()); err != nil {
					return err
				}
			}
			data.Reset()
			pending = false
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		if string(field) != "data" {
			continue
		}
		if pending {
			data.WriteByte('\n')
		}
		data.Write(value)
		pending = true
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if pending {
		return ErrCutEvent
	}
	return nil
}
