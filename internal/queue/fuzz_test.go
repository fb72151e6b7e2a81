package queue

import (
	"bytes"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// FuzzResultHeaders: a result survives its encoding as message headers,
// no header value makes the parser panic, and no message claims a job
// given up (the coordinator decides that from the server's count).
func FuzzResultHeaders(f *testing.F) {
	f.Add("inst/arm/1", "w1", 2, "boom\nline two", true, []byte("payload"), "5ms", "2026-12-03T10:00:00Z")
	f.Add("", "", 0, "", false, []byte(nil), "x", "y")
	f.Add("a", "b", -1, "\"quoted\"", false, []byte{0, 1}, "-3s", "")
	f.Fuzz(func(t *testing.T, id, worker string, deliveries int, errText string, gaveUp bool, data []byte, dur, started string) {
		// Arbitrary header values: no panic, and an error or a result.
		h := nats.Header{}
		h.Set(hdrJob, id)
		h.Set(hdrWorker, worker)
		h.Set(hdrDeliveries, strconv.Itoa(deliveries))
		h.Set(hdrError, errText)
		h.Set(hdrDuration, dur)
		h.Set(hdrStarted, started)
		h.Set("Truss-Gave-Up", "true")
		if got, err := parseResultHeaders(h, data); err == nil && got.GaveUp {
			t.Fatalf("a message made itself a give-up: %+v", got)
		}

		// A result this package encodes reads back the same.
		if id == "" {
			return
		}
		r := Result{JobID: id, Worker: worker, Deliveries: deliveries, Error: errText, GaveUp: gaveUp,
			Payload: data, Started: time.Unix(1700000000, 123).UTC(), Duration: 1500 * time.Millisecond}
		m := r.msg("subj")
		got, err := parseResultHeaders(m.Header, m.Data)
		if err != nil {
			t.Fatalf("round trip of %+v: %v", r, err)
		}
		if got.JobID != r.JobID || got.Worker != r.Worker || got.Deliveries != r.Deliveries || got.Error != r.Error ||
			got.GaveUp || !bytes.Equal(got.Payload, r.Payload) || !got.Started.Equal(r.Started) || got.Duration != r.Duration {
			t.Fatalf("round trip: %+v, want %+v", got, r)
		}
	})
}
