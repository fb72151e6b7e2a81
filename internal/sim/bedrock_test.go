package sim

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// TestBedrock: the Bedrock runtime's invoke-with-response-stream as the
// real service answers it: the request's credential verified (a SigV4
// signature of the simulated account's key over the body sent, dated
// within fifteen minutes, or a bearer API key), the body checked
// (anthropic_version, no model or stream), the stream in event-stream
// frames carrying the Messages events, faults as Bedrock's errors and
// exception frames.
func TestBedrock(t *testing.T) {
	const body = `{"anthropic_version":"bedrock-2023-05-31","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`
	s, err := ParseScript([]byte(`{"steps": [
		{"say": "one", "faults": [{"kind": "status", "status": 429, "retry_after_ms": 10}, {"kind": "mid_stream_error"}]},
		{"say": "two"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := strict(s)
	srv.APIKey = "ABSK-sim"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, err := srv.Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type signing struct {
		key, secret string
		at          time.Time
		signedBody  string // "" signs the body sent
		bearer      string
	}
	good := signing{key: BedrockAccessKeyID, secret: BedrockSecretAccessKey}
	post := func(sg signing, b string) (*http.Response, string) {
		req, _ := http.NewRequest("POST", base+"/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/invoke-with-response-stream", strings.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		switch {
		case sg.bearer != "":
			req.Header.Set("Authorization", "Bearer "+sg.bearer)
		case sg.key != "":
			at := sg.at
			if at.IsZero() {
				at = time.Now()
			}
			signed := b
			if sg.signedBody != "" {
				signed = sg.signedBody
			}
			sum := sha256.Sum256([]byte(signed))
			if err := v4.NewSigner().SignHTTP(ctx, aws.Credentials{AccessKeyID: sg.key, SecretAccessKey: sg.secret}, req, hex.EncodeToString(sum[:]), "bedrock", "us-east-1", at); err != nil {
				t.Fatal(err)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.Header.Get("Content-Type") == "application/vnd.amazon.eventstream" {
			events, err := decodeBedrockStream(resp.Body)
			if err != nil {
				t.Fatalf("the event stream: %v", err)
			}
			return resp, strings.Join(events, "\n")
		}
		out, _ := io.ReadAll(resp.Body)
		return resp, string(out)
	}
	for _, tc := range []struct {
		name               string
		sign               signing
		body               string
		status             int
		exception, message string
	}{
		{"no credential", signing{}, body, 403, "MissingAuthenticationTokenException", "Missing Authentication Token"},
		{"another API key", signing{bearer: "ABSK-other"}, body, 403, "AccessDeniedException", "Invalid API Key"},
		{"another access key", signing{key: "AKIAOTHERKEY00000000", secret: "x"}, body, 403, "UnrecognizedClientException", "security token"},
		{"another secret", signing{key: BedrockAccessKeyID, secret: "wrong"}, body, 403, "InvalidSignatureException", "does not match"},
		{"another body signed", signing{key: BedrockAccessKeyID, secret: BedrockSecretAccessKey, signedBody: strings.Replace(body, "hi", "ho", 1)}, body, 403, "InvalidSignatureException", "does not match"},
		{"an old signature", signing{key: BedrockAccessKeyID, secret: BedrockSecretAccessKey, at: time.Now().Add(-20 * time.Minute)}, body, 403, "InvalidSignatureException", "Signature expired"},
		{"model in the body", good, strings.Replace(body, `{`, `{"model":"m",`, 1), 400, "ValidationException", "extraneous key [model] is not permitted"},
		{"stream in the body", good, strings.Replace(body, `{`, `{"stream":true,`, 1), 400, "ValidationException", "extraneous key [stream] is not permitted"},
		{"the API's version", good, strings.Replace(body, "bedrock-2023-05-31", "2023-06-01", 1), 400, "ValidationException", "anthropic_version: bedrock-2023-05-31 is required"},
		{"betas not an array", good, strings.Replace(body, `{`, `{"anthropic_beta":"x",`, 1), 400, "ValidationException", "anthropic_beta: expected type: JSONArray"},
		{"throttled", good, body, 429, "ThrottlingException", "Rate limit"},
		{"a stream that fails", signing{bearer: "ABSK-sim"}, body, 200, "", "exception:serviceUnavailableException: "},
		{"the answer", good, body, 200, "", `"type":"message_stop"`},
		// The API's own checks (after the script's faults: a refused
		// request counts as an attempt).
		{"not the API's body", good, strings.Replace(body, `"max_tokens":100,`, `"max_tokens":100,"colour":1,`, 1), 400, "ValidationException", "colour"},
	} {
		resp, out := post(tc.sign, tc.body)
		if resp.StatusCode != tc.status || !strings.Contains(out, tc.message) {
			t.Errorf("%s: %d %s; want %d with %q", tc.name, resp.StatusCode, out, tc.status, tc.message)
		}
		if tc.exception != "" && !strings.HasPrefix(resp.Header.Get("X-Amzn-Errortype"), tc.exception+":") {
			t.Errorf("%s: x-amzn-ErrorType %q, want %s", tc.name, resp.Header.Get("X-Amzn-Errortype"), tc.exception)
		}
		if tc.status == 429 && resp.Header.Get("Retry-After-Ms") != "10" {
			t.Errorf("%s: no Retry-After-Ms: %v", tc.name, resp.Header)
		}
		if tc.name == "the answer" && (!strings.Contains(strings.SplitN(out, "\n", 2)[0], `"type":"message_start"`) || !strings.Contains(out, `"text":"one"`)) {
			t.Errorf("the events: %s", out)
		}
	}
	reqs := srv.Requests()
	last := reqs[len(reqs)-2]
	if last.Dialect != "bedrock" || !strings.Contains(string(last.Body), `"model":"us.anthropic.claude-sonnet-4-5-20250929-v1:0"`) {
		t.Errorf("the recorded request: %s %s", last.Dialect, last.Body)
	}
}

// FuzzBedrockFrames: whatever server-sent events the Messages answer
// writes, in whatever pieces, the event-stream frames carry each event's
// data exactly, in order, and decode.
func FuzzBedrockFrames(f *testing.F) {
	f.Add([]byte("event: ping\ndata: {\"type\":\"ping\"}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"), uint8(3))
	f.Add([]byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"busy\"}}\n\n"), uint8(1))
	f.Fuzz(func(t *testing.T, sse []byte, cut uint8) {
		rec := httptest.NewRecorder()
		b := &bedrockStream{w: rec, enc: eventstream.NewEncoder()}
		step := int(cut)%17 + 1
		for i := 0; i < len(sse); i += step {
			if _, err := b.Write(sse[i:min(i+step, len(sse))]); err != nil {
				t.Fatal(err)
			}
		}
		b.finish()
		got, err := decodeBedrockStream(rec.Body)
		if err != nil {
			t.Fatalf("the frames do not decode: %v", err)
		}
		var want []string
		rest := sse
		for {
			i := bytes.Index(rest, []byte("\n\n"))
			if i < 0 {
				break
			}
			event, data := sseEvent(rest[:i])
			rest = rest[i+2:]
			if event == "error" {
				continue
			}
			want = append(want, string(data))
		}
		var chunks []string
		for _, g := range got {
			if !strings.HasPrefix(g, "exception:") {
				chunks = append(chunks, g)
			}
		}
		if strings.Join(chunks, "\x00") != strings.Join(want, "\x00") {
			t.Fatalf("frames %q, want %q", chunks, want)
		}
	})
}

func TestParseSigV4(t *testing.T) {
	const sig = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	good := "AWS4-HMAC-SHA256 Credential=AKIASIMULATEDMODEL00/20261206/us-east-1/bedrock/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=" + sig
	v, ok := parseSigV4(good)
	if !ok || v.key != "AKIASIMULATEDMODEL00" || v.date != "20261206" || v.region != "us-east-1" || strings.Join(v.signed, ",") != "content-type,host,x-amz-date" || v.signature != sig {
		t.Errorf("%+v %v", v, ok)
	}
	for _, bad := range []string{
		"", "Bearer x", strings.Replace(good, "/bedrock/", "/s3/", 1), strings.Replace(good, "20261206", "2026126", 1),
		strings.Replace(good, "AKIASIMULATEDMODEL00", "akia", 1), strings.Replace(good, "host;", ";", 1), good[:len(good)-1],
		strings.Replace(good, ", Signature=", ",Signature=", 1), strings.Replace(good, "us-east-1", "US", 1),
	} {
		if _, ok := parseSigV4(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

// FuzzParseSigV4: any header parses or not without panicking; what parses
// is written back as the same header.
func FuzzParseSigV4(f *testing.F) {
	f.Add("AWS4-HMAC-SHA256 Credential=AKIASIMULATEDMODEL00/20261206/us-east-1/bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	f.Add("AWS4-HMAC-SHA256 Credential=a/b/c/d/e, SignedHeaders=, Signature=")
	f.Fuzz(func(t *testing.T, auth string) {
		v, ok := parseSigV4(auth)
		if !ok {
			return
		}
		again := "AWS4-HMAC-SHA256 Credential=" + v.key + "/" + v.date + "/" + v.region + "/bedrock/aws4_request, SignedHeaders=" + strings.Join(v.signed, ";") + ", Signature=" + v.signature
		if again != auth {
			t.Fatalf("%q read as %+v", auth, v)
		}
	})
}
