package anthropic

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/sim"
	"github.com/trussdev/truss/internal/sim/simtest"
)

// simKeys are the simulated account's keys.
func simKeys(key, secret string) aws.CredentialsProvider {
	return aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: key, SecretAccessKey: secret}, nil
	})
}

// bedrockClient is an adapter on the simulated Bedrock runtime at base.
func bedrockClient(base string, b *Bedrock, thinking int64) *Client {
	return New(Config{BaseURL: base, Retry: provider.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond},
		Bedrock: b, ThinkingBudget: thinking})
}

// TestBedrockTurn: a turn through Bedrock's runtime reaches the simulated
// model (which verifies the SigV4 signature and refuses a body with
// "model" or "stream" or without Bedrock's anthropic_version) with the
// model in the URL and the betas in the body; the event stream comes back
// as the API's events, and the typed tools are declared as on Anthropic's
// API.
func TestBedrockTurn(t *testing.T) {
	const modelID = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
	for _, tc := range []struct {
		name   string
		b      *Bedrock
		auth   string
		stream bool
	}{
		{"signed, streamed", &Bedrock{Region: "us-east-1", Credentials: simKeys(sim.BedrockAccessKeyID, sim.BedrockSecretAccessKey)},
			"AWS4-HMAC-SHA256 Credential=" + sim.BedrockAccessKeyID + "/", true},
		{"an API key", &Bedrock{Region: "eu-west-1", Token: "ABSK-sim"}, "Bearer ABSK-sim", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, base := simtest.Serve(t, `{"steps": [{"say": "Looking.", "think": "Hmm.", "actions": [{"kind": "run", "command": "ls"}]}]}`, "ABSK-sim")
			c := bedrockClient(base, tc.b, 2048)
			tools := []model.ToolSpec{{Name: "bash", Kind: model.ToolTyped, Type: "bash_20250124"}}
			var deltas int
			resp, err := c.Turn(context.Background(), &model.Request{Model: modelID, MaxTokens: 4000, Tools: tools,
				Items: []model.Item{{Kind: model.KindUser, Text: "list"}}}, func(model.Delta) { deltas++ })
			if err != nil {
				t.Fatal(err)
			}
			var call *model.ToolCall
			for _, it := range resp.Items {
				if it.Call != nil {
					call = it.Call
				}
			}
			if call == nil || call.Name != "bash" || deltas == 0 {
				t.Fatalf("items %+v, %d deltas", resp.Items, deltas)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests", len(reqs))
			}
			r := reqs[0]
			if r.Dialect != "bedrock" || r.Path != "/model/"+modelID+"/invoke-with-response-stream" || r.Status != 200 {
				t.Errorf("dialect %s, path %s, status %d", r.Dialect, r.Path, r.Status)
			}
			if got := r.Header.Get("Authorization"); !strings.HasPrefix(got, tc.auth) || r.Header.Get("X-Api-Key") != "" {
				t.Errorf("headers %v", r.Header)
			}
			// The betas travelled in the body (the simulated runtime gives
			// them back to the API as the header).
			if !strings.Contains(r.Header.Get("Anthropic-Beta"), InterleavedThinking) {
				t.Errorf("betas %q", r.Header.Get("Anthropic-Beta"))
			}
			// The wire bytes recorded are the API's request and events.
			if resp.Wire == nil || !strings.Contains(string(resp.Wire.Response), "event: message_stop") {
				t.Errorf("wire %+v", resp.Wire)
			}
		})
	}
}

// TestBedrockErrors: Bedrock's refusals and faults are the adapter's typed
// errors, with the exception's name.
func TestBedrockErrors(t *testing.T) {
	five := func(f string) string {
		return `{"steps": [{"say": "x", "faults": [` + strings.Repeat(f+",", 4) + f + `]}]}`
	}
	good := simKeys(sim.BedrockAccessKeyID, sim.BedrockSecretAccessKey)
	for _, tc := range []struct {
		name, script string
		creds        aws.CredentialsProvider
		kind         provider.ErrorKind
		status       int
		msg          string
	}{
		{name: "an unknown key", creds: simKeys("AKIAOTHERKEY00000000", "x"), kind: provider.ErrAuth, status: 403, msg: "UnrecognizedClientException: The security token included in the request is invalid."},
		{name: "a wrong secret", creds: simKeys(sim.BedrockAccessKeyID, "x"), kind: provider.ErrAuth, status: 403, msg: "InvalidSignatureException: The request signature we calculated does not match"},
		{name: "throttled", creds: good, kind: provider.ErrRateLimited, status: 429, msg: "ThrottlingException: Rate limit",
			script: five(`{"kind": "status", "status": 429, "retry_after_ms": 1}`)},
		{name: "unavailable", creds: good, kind: provider.ErrServer, status: 503, msg: "ServiceUnavailableException",
			script: five(`{"kind": "status", "status": 503}`)},
		{name: "an exception in the stream", creds: good, kind: provider.ErrOverloaded, msg: "error in the middle of the stream: overloaded_error",
			script: five(`{"kind": "mid_stream_error"}`)},
		{name: "a cut stream", creds: good, kind: provider.ErrStream, msg: "the stream broke off",
			script: five(`{"kind": "truncate"}`)},
		{name: "no keys", creds: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{}, errors.New(`credential_process "aws configure export-credentials": exit status 255`)
		}), kind: provider.ErrAuth, msg: "cannot get AWS credentials: credential_process"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := tc.script
			if script == "" {
				script = `{"steps": [{"say": "x"}]}`
			}
			srv, base := simtest.Serve(t, script, "")
			c := bedrockClient(base, &Bedrock{Region: "us-east-1", Credentials: tc.creds}, 0)
			_, err := c.Turn(context.Background(), &model.Request{Model: "anthropic.claude-haiku-4-5-20251001-v1:0", MaxTokens: 100, Items: []model.Item{{Kind: model.KindUser, Text: "hi"}}}, nil)
			var pe *provider.Error
			if !errors.As(err, &pe) {
				t.Fatalf("%v", err)
			}
			if pe.Kind != tc.kind || pe.Status != tc.status || !strings.Contains(pe.Message, tc.msg) {
				t.Errorf("kind %s, status %d, message %q; want %s, %d, %q", pe.Kind, pe.Status, pe.Message, tc.kind, tc.status, tc.msg)
			}
			if tc.name == "no keys" && len(srv.Requests()) != 0 {
				t.Errorf("%d requests sent without keys", len(srv.Requests()))
			}
		})
	}
}

// TestBedrockModels: Bedrock's runtime lists no models.
func TestBedrockModels(t *testing.T) {
	c := bedrockClient("http://127.0.0.1:1", &Bedrock{Region: "us-east-1", Token: "t"}, 0)
	if _, err := c.Models(context.Background()); !errors.Is(err, provider.ErrNotSupported) {
		t.Fatalf("%v", err)
	}
}

func TestBedrockBody(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		betas    []string
		want     string
		model    string
		stream   bool
		err      string
	}{
		{name: "a stream with betas", in: `{"model":"anthropic.claude-x-v1:0","stream":true,"max_tokens":5}`, betas: []string{"a-1, b-2", "c-3"},
			want: `{"anthropic_beta":["a-1","b-2","c-3"],"anthropic_version":"bedrock-2023-05-31","max_tokens":5}`, model: "anthropic.claude-x-v1:0", stream: true},
		{name: "no betas, the version replaced", in: `{"model":"m","anthropic_version":"2023-06-01","max_tokens":5}`,
			want: `{"anthropic_version":"bedrock-2023-05-31","max_tokens":5}`, model: "m"},
		{name: "no model", in: `{"max_tokens":5}`, err: "bedrock: the request names no model"},
		{name: "not an object", in: `[1]`, err: "bedrock: the request body is not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, m, stream, err := bedrockBody([]byte(tc.in), tc.betas)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || string(out) != tc.want || m != tc.model || stream != tc.stream {
				t.Errorf("got %s %q %v %v; want %s %q %v", out, m, stream, err, tc.want, tc.model, tc.stream)
			}
		})
	}
}

// TestBedrockRoutes: the region and the model's id are checked before
// anything is sent; a model id's characters are escaped in the path.
func TestBedrockRoutes(t *testing.T) {
	for _, tc := range []struct {
		b   *Bedrock
		err string
	}{
		{&Bedrock{Token: "t"}, "bedrock: a region is needed"},
		{&Bedrock{Region: "us-east-1/../x", Token: "t"}, `bedrock: "us-east-1/../x" is not a region's name`},
		{&Bedrock{Region: "us-east-1"}, "bedrock: no credentials"},
	} {
		c := bedrockClient("http://127.0.0.1:1", tc.b, 0)
		c.cfg.Retry.MaxAttempts = 1
		_, err := c.Turn(context.Background(), &model.Request{Model: "m", MaxTokens: 10, Items: []model.Item{{Kind: model.KindUser, Text: "hi"}}}, nil)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%+v: %v, want %q", tc.b, err, tc.err)
		}
	}
	srv, base := simtest.Serve(t, `{"steps": [{"say": "x"}]}`, "t")
	c := bedrockClient(base, &Bedrock{Region: "us-east-1", Token: "t"}, 0)
	arn := "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc"
	if _, err := c.Turn(context.Background(), &model.Request{Model: arn, MaxTokens: 10, Items: []model.Item{{Kind: model.KindUser, Text: "hi"}}}, nil); err != nil {
		t.Fatal(err)
	}
	if r := srv.Requests()[0]; r.Path != "/model/"+arn+"/invoke-with-response-stream" || r.Status != 200 {
		t.Errorf("path %s, status %d", r.Path, r.Status)
	}
}

// frames encodes chunks (each one of the API's events) and exceptions as
// an event stream.
func frames(t testing.TB, events []string) []byte {
	var buf bytes.Buffer
	enc := eventstream.NewEncoder()
	for _, e := range events {
		var m eventstream.Message
		if exc, ok := strings.CutPrefix(e, "exception:"); ok {
			m.Headers.Set(":message-type", eventstream.StringValue("exception"))
			m.Headers.Set(":exception-type", eventstream.StringValue(exc))
			m.Payload = []byte(`{"message":"m"}`)
		} else {
			m.Headers.Set(":message-type", eventstream.StringValue("event"))
			m.Headers.Set(":event-type", eventstream.StringValue("chunk"))
			m.Payload, _ = json.Marshal(map[string]string{"bytes": base64.StdEncoding.EncodeToString([]byte(e))})
		}
		if err := enc.Encode(&buf, m); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func TestEventStreamSSE(t *testing.T) {
	in := frames(t, []string{`{"type":"message_start", "message":{}}`, `{"type":"ping"}`, "exception:serviceUnavailableException", "exception:modelStreamErrorException"})
	out, err := io.ReadAll(newEventStreamSSE(io.NopCloser(bytes.NewReader(in))))
	want := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n" +
		"event: ping\ndata: {\"type\":\"ping\"}\n\n" +
		"event: error\ndata: {\"error\":{\"message\":\"m\",\"type\":\"overloaded_error\"},\"type\":\"error\"}\n\n" +
		"event: error\ndata: {\"error\":{\"message\":\"m\",\"type\":\"modelStreamErrorException\"},\"type\":\"error\"}\n\n"
	if err != nil || string(out) != want {
		t.Errorf("got %q, %v\nwant %q", out, err, want)
	}
	// Cut inside a frame: the stream broke off.
	_, err = io.ReadAll(newEventStreamSSE(io.NopCloser(bytes.NewReader(in[:len(in)-3]))))
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a cut frame: %v", err)
	}
	// A chunk that is not one of the API's events.
	_, err = io.ReadAll(newEventStreamSSE(io.NopCloser(bytes.NewReader(frames(t, []string{`[1]`})))))
	if err == nil || !strings.Contains(err.Error(), "not one of the API's events") {
		t.Errorf("a foreign chunk: %v", err)
	}
}

// FuzzEventStreamSSE: any bytes decode to server-sent events or fail,
// without panicking; chunks of JSON events come out as their own events,
// in order, one line of data each.
func FuzzEventStreamSSE(f *testing.F) {
	f.Add(frames(f, []string{`{"type":"ping"}`, "exception:x"}), "", "")
	f.Add([]byte{0, 0, 0, 16, 0, 0, 0, 0}, `{"type":"a"}`, `{"type":"b","x":"\n"}`)
	f.Fuzz(func(t *testing.T, raw []byte, e1, e2 string) {
		io.ReadAll(newEventStreamSSE(io.NopCloser(bytes.NewReader(raw))))
		var events []string
		var types []string
		for _, e := range []string{e1, e2} {
			var v struct {
				Type string `json:"type"`
			}
			if json.Unmarshal([]byte(e), &v) != nil || v.Type == "" || strings.ContainsAny(v.Type, "\r\n") {
				continue
			}
			events, types = append(events, e), append(types, v.Type)
		}
		out, err := io.ReadAll(newEventStreamSSE(io.NopCloser(bytes.NewReader(frames(t, events)))))
		if err != nil {
			t.Fatal(err)
		}
		blocks := strings.Split(strings.TrimSuffix(string(out), "\n\n"), "\n\n")
		if len(events) == 0 {
			if len(out) != 0 {
				t.Fatalf("%q from nothing", out)
			}
			return
		}
		if len(blocks) != len(events) {
			t.Fatalf("%d events from %d: %q", len(blocks), len(events), out)
		}
		for i, b := range blocks {
			lines := strings.Split(b, "\n")
			if len(lines) != 2 || lines[0] != "event: "+types[i] || !strings.HasPrefix(lines[1], "data: ") || !json.Valid([]byte(lines[1][6:])) {
				t.Fatalf("event %d: %q", i, b)
			}
		}
	})
}

// TestBedrockNoCredentialsSent: credentials that could not be got (a
// failing credential_process) say that nothing was sent, not which
// credentials a request carried.
func TestBedrockNoCredentialsSent(t *testing.T) {
	srv, base := simtest.Serve(t, `{"steps": [{"say": "x"}]}`, "")
	failing := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{}, errors.New(`credential_process "aws configure export-credentials": exit status 255`)
	})
	c := New(Config{BaseURL: base, Retry: provider.RetryPolicy{MaxAttempts: 1}, Label: "bedrock",
		KeyHint: "the credentials sent were those of profile default in /h/.aws/config (credential_process): check them",
		Bedrock: &Bedrock{Region: "us-east-1", Credentials: failing}})
	_, err := c.Turn(context.Background(), &model.Request{Model: "anthropic.claude-haiku-4-5-20251001-v1:0", MaxTokens: 100, Items: []model.Item{{Kind: model.KindUser, Text: "hi"}}}, nil)
	if err == nil || !strings.HasSuffix(err.Error(), "exit status 255; nothing was sent to Bedrock: run the command by hand to see why it fails") || strings.Contains(err.Error(), "credentials sent were") {
		t.Errorf("%v", err)
	}
	if len(srv.Requests()) != 0 {
		t.Errorf("%d requests sent", len(srv.Requests()))
	}
}
