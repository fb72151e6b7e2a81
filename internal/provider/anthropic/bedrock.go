package anthropic

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// BedrockVersion is the anthropic_version Amazon Bedrock requires in the
// body of a Messages request.
const BedrockVersion = "bedrock-2023-05-31"

// Bedrock reaches the Messages API through Amazon Bedrock's runtime: the
// model moves into the URL, POST /model/MODEL/invoke (or
// /invoke-with-response-stream for a stream), the body loses "model" and
// "stream" and gains "anthropic_version": "bedrock-2023-05-31", the betas
// move from the anthropic-beta header into the body's "anthropic_beta"
// array, and the request is signed with AWS Signature Version 4 (service
// "bedrock") or carries a Bedrock API key as a bearer token. A stream
// comes back in AWS's event-stream framing (application/vnd.amazon.eventstream),
// each event a "chunk" whose payload is {"bytes": base64 of one of the
// API's events}; it is turned back into the API's server-sent events, and
// an error frame into the API's error event. An error before the stream is
// {"message"} with the exception's name in X-Amzn-ErrorType; it is turned
// into the API's error object with that name as its type.
//
// These are the rewrites of anthropic-sdk-go's bedrock package, done by a
// middleware of the SDK's client here: that package imports
// aws-sdk-go-v2's config package, which costs every start of the program
// about 6,500 allocations (docs/performance.md). aws-sdk-go-v2's signer
// and event-stream decoder, which do no work at init, are what this uses.
type Bedrock struct {
	// Region is the AWS region: "us-east-1", "eu-west-1", …
	Region string
	// Token, when set, is a Bedrock API key (AWS_BEARER_TOKEN_BEDROCK),
	// sent as "Authorization: Bearer" instead of a signature.
	Token string
	// Credentials give the keys each request is signed with.
	Credentials aws.CredentialsProvider
	// Now, when set, is the signing clock (tests).
	Now func() time.Time
	// RegionFrom names where Region was set ("--region", the variable,
	// the profile), for the hint of an unreachable region; "" says
	// AWS_REGION.
	RegionFrom string
	// ProfileHint is added to a ValidationException that asks for an
	// inference profile (a model Bedrock serves on demand only through
	// one): the profiles' ids to pass. "" adds nothing.
	ProfileHint string
}

// BedrockBaseURL is the address of a region's Bedrock runtime.
func BedrockBaseURL(region string) string {
	return "https://bedrock-runtime." + region + ".amazonaws.com"
}

// check reports a configuration the routes cannot use.
func (b *Bedrock) check() error {
	if b.Region == "" {
		return errors.New("bedrock: a region is needed")
	}
	if strings.Trim(b.Region, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
		return fmt.Errorf("bedrock: %q is not a region's name", b.Region)
	}
	if b.Token == "" && b.Credentials == nil {
		return errors.New("bedrock: no credentials")
	}
	return nil
}

// credentialsError is a failure to get AWS credentials: the credential
// chain's problem (a failing credential_process), not the network's.
type credentialsError struct{ err error }

func (e *credentialsError) Error() string {
	return "cannot get AWS credentials: " + e.err.Error()
}

func (e *credentialsError) Unwrap() error { return e.err }

// middleware rewrites a Messages request into Bedrock's, signs it, and
// turns the answer back into the API's.
func (b *Bedrock) middleware() option.Middleware {
	signer := v4.NewSigner()
	return func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		if err := b.check(); err != nil {
			return nil, err
		}
		base := strings.TrimSuffix(r.URL.EscapedPath(), "/v1/messages")
		if r.Method != http.MethodPost || base == r.URL.EscapedPath() {
			return nil, fmt.Errorf("bedrock: %s %s is not served on Amazon Bedrock (only the Messages API is)", r.Method, r.URL.Path)
		}
		var body []byte
		if r.Body != nil {
			bb, err := io.ReadAll(r.Body)
			r.Body.Close()
			if err != nil {
				return nil, err
			}
			body = bb
		}
		out, modelName, stream, err := bedrockBody(body, r.Header.Values("anthropic-beta"))
		if err != nil {
			return nil, err
		}
		action := "invoke"
		accept := "application/json"
		if stream {
			action, accept = "invoke-with-response-stream", "application/vnd.amazon.eventstream"
		}
		raw := base + "/model/" + url.PathEscape(modelName) + "/" + action
		p, err := url.PathUnescape(raw)
		if err != nil {
			return nil, fmt.Errorf("bedrock: route %s: %w", raw, err)
		}
		r.URL.Path, r.URL.RawPath, r.URL.RawQuery = p, raw, ""
		// The first-party API's headers mean nothing to Bedrock, which
		// takes the version and the betas in the body.
		r.Header.Del("anthropic-version")
		r.Header.Del("anthropic-beta")
		r.Header.Del("X-Api-Key")
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", accept)
		r.Body = io.NopCloser(bytes.NewReader(out))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(out)), nil }
		r.ContentLength = int64(len(out))
		if b.Token != "" {
			r.Header.Set("Authorization", "Bearer "+b.Token)
		} else {
			creds, err := b.Credentials.Retrieve(r.Context())
			if err != nil {
				return nil, &credentialsError{err: err}
			}
			sum := sha256.Sum256(out)
			now := time.Now
			if b.Now != nil {
				now = b.Now
			}
			r.Header.Del("Authorization")
			if err := signer.SignHTTP(r.Context(), creds, r, hex.EncodeToString(sum[:]), "bedrock", b.Region, now().UTC()); err != nil {
				return nil, fmt.Errorf("bedrock: signing the request: %w", err)
			}
		}
		resp, err := next(r)
		if err != nil {
			return resp, err
		}
		if resp.StatusCode >= 400 {
			bedrockAPIError(resp)
			return resp, nil
		}
		if stream && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/vnd.amazon.eventstream") {
			resp.Body = newEventStreamSSE(resp.Body)
			resp.Header.Set("Content-Type", "text/event-stream")
			resp.Header.Del("Content-Length")
			resp.ContentLength = -1
		}
		return resp, nil
	}
}

// bedrockBody rewrites a Messages request's body into Bedrock's: without
// "model" and "stream", with Bedrock's anthropic_version and the betas
// (the anthropic-beta header's values, comma-separated) as
// "anthropic_beta". It returns the model and whether a stream is asked
// for.
func bedrockBody(body []byte, betaHeaders []string) (out []byte, modelName string, stream bool, err error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, "", false, fmt.Errorf("bedrock: the request body is not a JSON object: %w", err)
	}
	if json.Unmarshal(m["model"], &modelName) != nil || modelName == "" {
		return nil, "", false, errors.New("bedrock: the request names no model")
	}
	json.Unmarshal(m["stream"], &stream)
	delete(m, "model")
	delete(m, "stream")
	m["anthropic_version"], _ = json.Marshal(BedrockVersion)
	var betas []string
	for _, h := range betaHeaders {
		for _, b := range strings.Split(h, ",") {
			if b = strings.TrimSpace(b); b != "" {
				betas = append(betas, b)
			}
		}
	}
	if len(betas) > 0 {
		m["anthropic_beta"], _ = json.Marshal(betas)
	}
	out, err = json.Marshal(m)
	return out, modelName, stream, err
}

// bedrockAPIError turns Bedrock's error body, {"message"} with the
// exception in X-Amzn-ErrorType ("ThrottlingException:http://…"), into
// the API's error object, {"type": "error", "error": {"type":
// "ThrottlingException", "message"}}. Another body is left as it is.
func bedrockAPIError(resp *http.Response) {
	exc, _, _ := strings.Cut(resp.Header.Get("X-Amzn-Errortype"), ":")
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err != nil {
		resp.Body = io.NopCloser(bytes.NewReader(raw))
		return
	}
	var e struct {
		Message *string `json:"message"`
		Upper   *string `json:"Message"`
	}
	if exc != "" && json.Unmarshal(raw, &e) == nil && (e.Message != nil || e.Upper != nil) {
		msg := e.Message
		if msg == nil {
			msg = e.Upper
		}
		raw, _ = json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": exc, "message": *msg}})
		resp.Header.Set("Content-Type", "application/json")
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	resp.ContentLength = int64(len(raw))
	resp.Header.Del("Content-Length")
}

// eventStreamSSE reads AWS event-stream frames and gives the API's
// server-sent events they carry.
type eventStreamSSE struct {
	body io.ReadCloser
	in   *bufio.Reader
	dec  *eventstream.Decoder
	buf  []byte // payload buffer, reused
	out  bytes.Buffer
	err  error
}

func newEventStreamSSE(body io.ReadCloser) io.ReadCloser {
	return &eventStreamSSE{body: body, in: bufio.NewReader(body), dec: eventstream.NewDecoder()}
}

func (s *eventStreamSSE) Read(p []byte) (int, error) {
	for s.out.Len() == 0 {
		if s.err != nil {
			return 0, s.err
		}
		s.err = s.next()
	}
	return s.out.Read(p)
}

func (s *eventStreamSSE) Close() error { return s.body.Close() }

// next decodes one frame into s.out. A stream that ends between frames
// ends (io.EOF); one cut inside a frame is io.ErrUnexpectedEOF.
func (s *eventStreamSSE) next() error {
	msg, err := s.dec.Decode(s.in, s.buf[:0])
	if err != nil {
		if err == io.EOF {
			return io.EOF
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return io.ErrUnexpectedEOF
		}
		return fmt.Errorf("bedrock: the event stream: %w", err)
	}
	s.buf = msg.Payload
	event, data, err := sseOfFrame(msg)
	if err != nil {
		return err
	}
	if event == "" {
		return nil
	}
	fmt.Fprintf(&s.out, "event: %s\ndata: %s\n\n", event, data)
	return nil
}

// sseOfFrame is one event-stream frame as a server-sent event: a chunk's
// decoded bytes under their own type's name; an exception or an error
// frame as the API's error event (a service's unavailability as
// overloaded_error, which callers retry); "" for a frame of no
// consequence (an initial-response).
func sseOfFrame(msg eventstream.Message) (event string, data []byte, err error) {
	header := func(name string) string {
		if v := msg.Headers.Get(name); v != nil {
			return v.String()
		}
		return ""
	}
	apiError := func(typ, m string) (string, []byte, error) {
		if strings.EqualFold(typ, "serviceUnavailableException") {
			typ = "overloaded_error"
		}
		d, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": m}})
		return "error", d, nil
	}
	switch header(":message-type") {
	case "exception":
		var e struct {
			Message string `json:"message"`
		}
		json.Unmarshal(msg.Payload, &e)
		return apiError(header(":exception-type"), e.Message)
	case "error":
		return apiError(header(":error-code"), header(":error-message"))
	}
	if t := header(":event-type"); t != "chunk" {
		return "", nil, nil
	}
	var c struct {
		Bytes string `json:"bytes"`
	}
	if err := json.Unmarshal(msg.Payload, &c); err != nil {
		return "", nil, fmt.Errorf("bedrock: a chunk's payload is not {\"bytes\"}: %w", err)
	}
	raw, err := base64.StdEncoding.DecodeString(c.Bytes)
	if err != nil {
		return "", nil, fmt.Errorf("bedrock: a chunk's bytes are not base64: %w", err)
	}
	var ev struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &ev); err != nil || ev.Type == "" || strings.ContainsAny(ev.Type, "\r\n") {
		return "", nil, fmt.Errorf("bedrock: a chunk is not one of the API's events: %q", raw)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return "", nil, err
	}
	return ev.Type, compact.Bytes(), nil
}
