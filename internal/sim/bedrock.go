package sim

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// ---- Amazon Bedrock's runtime, for Anthropic's models ----
//
// POST /model/{modelId}/invoke-with-response-stream (and /invoke) take the
// Messages API's body without "model" and "stream", with
// "anthropic_version": "bedrock-2023-05-31" and the betas as
// "anthropic_beta"; the request is signed with SigV4 (service bedrock) or
// carries a Bedrock API key as a bearer token. A signature is verified
// in full for the simulated account's key (BedrockAccessKeyID and
// BedrockSecretAccessKey): the canonical request over the headers it
// names, the body's hash, the date within fifteen minutes; another key is
// unknown. The stream is AWS's binary event-stream: each frame an event
// "chunk" whose payload is {"bytes": base64 of one Messages event}; an
// error in the middle of the stream is an exception frame. Errors before
// the stream are JSON {"message": …} with the exception's name in
// X-Amzn-ErrorType.

// BedrockVersion is the anthropic_version Bedrock requires in the body.
const BedrockVersion = "bedrock-2023-05-31"

// The simulated AWS account's access key: the only one whose signatures
// the Bedrock routes accept.
const (
	BedrockAccessKeyID     = "AKIASIMULATEDMODEL00"
	BedrockSecretAccessKey = "simulated/secret/access/key/0000000000"
)

// bedrockDialect is the dialect name of the Bedrock routes' requests.
const bedrockDialect = "bedrock"

// sigV4 is a SigV4 Authorization header's parts.
type sigV4 struct {
	key, date, region string
	signed            []string
	signature         string
}

// parseSigV4 reads a SigV4 Authorization header for Bedrock:
// "AWS4-HMAC-SHA256 Credential=KEY/YYYYMMDD/REGION/bedrock/aws4_request,
// SignedHeaders=a;b;c, Signature=64 hex digits".
func parseSigV4(auth string) (sigV4, bool) {
	var v sigV4
	rest, ok := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 Credential=")
	if !ok {
		return v, false
	}
	cred, rest, ok1 := strings.Cut(rest, ", SignedHeaders=")
	headers, sig, ok2 := strings.Cut(rest, ", Signature=")
	if !ok1 || !ok2 {
		return v, false
	}
	parts := strings.Split(cred, "/")
	if len(parts) != 5 || parts[3] != "bedrock" || parts[4] != "aws4_request" {
		return v, false
	}
	v.key, v.date, v.region, v.signature = parts[0], parts[1], parts[2], sig
	only := func(s, chars string, min, max int) bool {
		return len(s) >= min && len(s) <= max && strings.Trim(s, chars) == ""
	}
	if !only(v.key, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 16, 128) || !only(v.date, "0123456789", 8, 8) ||
		!only(v.region, "abcdefghijklmnopqrstuvwxyz0123456789-", 1, 64) || !only(v.signature, "0123456789abcdef", 64, 64) ||
		!only(headers, "abcdefghijklmnopqrstuvwxyz0123456789;-", 1, 4096) {
		return v, false
	}
	v.signed = strings.Split(headers, ";")
	return v, !slices.Contains(v.signed, "")
}

// bedrockSignatureMismatch is AWS's message for a signature that does not verify.
const bedrockSignatureMismatch = "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details."

// bedrockError answers an error as Bedrock does.
func bedrockError(w http.ResponseWriter, status int, exception, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Requestid", "sim-bedrock-request")
	w.Header().Set("X-Amzn-Errortype", exception+":http://internal.amazon.com/coral/com.amazon.bedrock/")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"message": msg})
}

// bedrockException names the exception of an HTTP status (Bedrock
// runtime's InvokeModelWithResponseStream errors).
func bedrockException(status int) string {
	switch status {
	case 400:
		return "ValidationException"
	case 401, 403:
		return "AccessDeniedException"
	case 404:
		return "ResourceNotFoundException"
	case 408:
		return "ModelTimeoutException"
	case 424:
		return "ModelErrorException"
	case 429:
		return "ThrottlingException"
	case 503, 529:
		return "ServiceUnavailableException"
	}
	return "InternalServerException"
}

// bedrockAuth checks the request's credential: a bearer token (the
// server's Token, and APIKey, when set), or a SigV4 signature of the
// simulated account's key that verifies (its secret the server's Token,
// when it has one, else BedrockSecretAccessKey). It returns the status, exception and message of a refusal.
func (s *Server) bedrockAuth(r *http.Request, body []byte) (int, string, string) {
	auth := r.Header.Get("Authorization")
	if tok, ok := strings.CutPrefix(auth, "Bearer "); ok {
		if s.Token != "" && !s.hasToken(r) || s.APIKey != "" && tok != s.APIKey {
			return 403, "AccessDeniedException", "Invalid API Key format: Must start with pre-defined prefix"
		}
		return 0, "", ""
	}
	if auth == "" {
		return 403, "MissingAuthenticationTokenException", "Missing Authentication Token"
	}
	sig, ok := parseSigV4(auth)
	if !ok {
		return 403, "IncompleteSignatureException", "Authorization header requires 'Credential', 'Signature' and 'SignedHeaders' parameters (AWS4-HMAC-SHA256, service bedrock)."
	}
	if sig.key != BedrockAccessKeyID {
		return 403, "UnrecognizedClientException", "The security token included in the request is invalid."
	}
	when, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil || !strings.HasPrefix(r.Header.Get("X-Amz-Date"), sig.date) {
		return 403, "IncompleteSignatureException", "X-Amz-Date is missing or does not match the credential's date."
	}
	if d := time.Since(when); d > 15*time.Minute || d < -15*time.Minute {
		return 403, "InvalidSignatureException", "Signature expired: " + r.Header.Get("X-Amz-Date") + " is now earlier or later than 15 minutes of the server's time."
	}
	signed := sig.signed
	if !slices.Contains(signed, "host") || !slices.Contains(signed, "x-amz-date") {
		return 403, "InvalidSignatureException", bedrockSignatureMismatch
	}
	// Sign the request again as received, over the headers it names.
	again, err := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return 403, "InvalidSignatureException", bedrockSignatureMismatch
	}
	for _, h := range signed {
		if h != "host" && h != "content-length" {
			again.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	if !slices.Contains(signed, "content-length") {
		again.ContentLength = 0
	}
	sum := sha256.Sum256(body)
	// The server's Token, when it has one, is the account's secret key.
	secret := BedrockSecretAccessKey
	if s.Token != "" {
		secret = s.Token
	}
	creds := aws.Credentials{AccessKeyID: BedrockAccessKeyID, SecretAccessKey: secret, SessionToken: r.Header.Get("X-Amz-Security-Token")}
	if err := v4.NewSigner().SignHTTP(r.Context(), creds, again, hex.EncodeToString(sum[:]), "bedrock", sig.region, when); err != nil ||
		again.Header.Get("Authorization") != auth {
		return 403, "InvalidSignatureException", bedrockSignatureMismatch
	}
	return 0, "", ""
}

// bedrockInvoke answers POST /model/{model}/invoke-with-response-stream
// and /invoke.
func (s *Server) bedrockInvoke(stream bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, received, err := readBody(r)
		if err != nil {
			return
		}
		if status, exc, msg := s.bedrockAuth(r, body); status != 0 {
			bedrockError(w, status, exc, msg)
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err != nil {
			bedrockError(w, 400, "ValidationException", "Malformed input request, please reformat your input and try again.")
			return
		}
		for _, k := range []string{"model", "stream"} {
			if _, ok := m[k]; ok {
				bedrockError(w, 400, "ValidationException", fmt.Sprintf("Malformed input request: #: extraneous key [%s] is not permitted, please reformat your input and try again.", k))
				return
			}
		}
		var version string
		if json.Unmarshal(m["anthropic_version"], &version) != nil || version != BedrockVersion {
			bedrockError(w, 400, "ValidationException", "Malformed input request: #/anthropic_version: "+BedrockVersion+" is required, please reformat your input and try again.")
			return
		}
		var betas []string
		if b, ok := m["anthropic_beta"]; ok && json.Unmarshal(b, &betas) != nil {
			bedrockError(w, 400, "ValidationException", "Malformed input request: #/anthropic_beta: expected type: JSONArray, please reformat your input and try again.")
			return
		}
		// The API's request: what the model and the checks read.
		delete(m, "anthropic_version")
		delete(m, "anthropic_beta")
		m["model"], _ = json.Marshal(r.PathValue("model"))
		m["stream"], _ = json.Marshal(stream)
		api, _ := json.Marshal(m)
		r2 := r.Clone(r.Context())
		r2.Header.Set("Anthropic-Version", "2023-06-01")
		r2.URL.RawQuery = ""
		if len(betas) > 0 {
			r2.Header.Set("Anthropic-Beta", strings.Join(betas, ","))
			if slices.Contains(betas, "context-management-2025-06-27") {
				r2.URL.RawQuery = "beta=true" // the field belongs to the beta API
			}
		}
		if !stream {
			ew := &bedrockErrors{w: w}
			s.messagesOn(bedrockDialect, ew, r2, api, received)
			ew.finish()
			return
		}
		bw := &bedrockStream{w: w, enc: eventstream.NewEncoder()}
		defer bw.finish()
		s.messagesOn(bedrockDialect, bw, r2, api, received)
	}
}

// bedrockErrors passes a response through, making an error the API's
// shape into Bedrock's.
type bedrockErrors struct {
	w      http.ResponseWriter
	status int
	buf    bytes.Buffer
}

func (e *bedrockErrors) Header() http.Header { return e.w.Header() }

func (e *bedrockErrors) WriteHeader(code int) {
	e.status = code
	if code < 400 {
		e.w.WriteHeader(code)
	}
}

func (e *bedrockErrors) Write(p []byte) (int, error) {
	if e.status == 0 {
		e.WriteHeader(200)
	}
	if e.status >= 400 {
		return e.buf.Write(p)
	}
	return e.w.Write(p)
}

// finish writes a buffered error in Bedrock's shape.
func (e *bedrockErrors) finish() {
	if e.status < 400 {
		return
	}
	var apiErr struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	json.Unmarshal(e.buf.Bytes(), &apiErr)
	h := e.w.Header()
	h.Del("Request-Id")
	bedrockError(e.w, e.status, bedrockException(e.status), apiErr.Error.Message)
}

// bedrockStream turns the API's server-sent events into event-stream
// frames as they are written; an error response before the stream
// becomes Bedrock's.
type bedrockStream struct {
	w       http.ResponseWriter
	enc     *eventstream.Encoder
	errs    *bedrockErrors
	started bool
	buf     []byte
}

func (b *bedrockStream) Header() http.Header { return b.w.Header() }

func (b *bedrockStream) WriteHeader(code int) {
	if code >= 400 {
		b.errs = &bedrockErrors{w: b.w}
		b.errs.WriteHeader(code)
		return
	}
	h := b.w.Header()
	h.Del("Request-Id")
	h.Del("Cache-Control")
	h.Set("Content-Type", "application/vnd.amazon.eventstream")
	h.Set("X-Amzn-Requestid", "sim-bedrock-request")
	h.Set("X-Amzn-Bedrock-Content-Type", "application/json")
	b.started = true
	b.w.WriteHeader(code)
}

func (b *bedrockStream) Write(p []byte) (int, error) {
	if b.errs != nil {
		return b.errs.Write(p)
	}
	if !b.started {
		b.WriteHeader(200)
	}
	b.buf = append(b.buf, p...)
	for {
		i := bytes.Index(b.buf, []byte("\n\n"))
		if i < 0 {
			return len(p), nil
		}
		event, data := sseEvent(b.buf[:i])
		b.buf = b.buf[i+2:]
		if err := b.frame(event, data); err != nil {
			return 0, err
		}
	}
}

// Flush implements http.Flusher.
func (b *bedrockStream) Flush() {
	if fl, ok := b.w.(http.Flusher); ok {
		fl.Flush()
	}
}

func (b *bedrockStream) finish() {
	if b.errs != nil {
		b.errs.finish()
	}
}

// sseEvent reads an event's name and data.
func sseEvent(b []byte) (string, []byte) {
	var event string
	var data []byte
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("event: ")); ok {
			event = string(v)
		} else if v, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			data = append(data, v...)
		}
	}
	return event, data
}

// frame writes one event as an event-stream frame: a "chunk" event of
// the event's JSON, or, for an error event, an exception.
func (b *bedrockStream) frame(event string, data []byte) error {
	var msg eventstream.Message
	if event == "error" {
		var e struct {
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		json.Unmarshal(data, &e)
		exc := "modelStreamErrorException"
		switch e.Error.Type {
		case "overloaded_error":
			exc = "serviceUnavailableException"
		case "rate_limit_error":
			exc = "throttlingException"
		case "api_error":
			exc = "internalServerException"
		}
		msg.Headers.Set(":message-type", eventstream.StringValue("exception"))
		msg.Headers.Set(":exception-type", eventstream.StringValue(exc))
		msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		msg.Payload, _ = json.Marshal(map[string]string{"message": e.Error.Message})
	} else {
		msg.Headers.Set(":event-type", eventstream.StringValue("chunk"))
		msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		msg.Headers.Set(":message-type", eventstream.StringValue("event"))
		// "p" pads the payload, as Bedrock does, so that the frames'
		// sizes do not tell their content.
		msg.Payload, _ = json.Marshal(map[string]string{"bytes": base64.StdEncoding.EncodeToString(data), "p": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"[:len(data)%32+4]})
	}
	return b.enc.Encode(b.w, msg)
}

// decodeBedrockStream reads an event-stream body back into the events it
// carries ("event: data" each, the exceptions as "exception:TYPE: message"),
// for the tests.
func decodeBedrockStream(r io.Reader) ([]string, error) {
	dec := eventstream.NewDecoder()
	var out []string
	for {
		m, err := dec.Decode(r, nil)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		switch m.Headers.Get(":message-type").String() {
		case "exception":
			var e struct {
				Message string `json:"message"`
			}
			json.Unmarshal(m.Payload, &e)
			out = append(out, "exception:"+m.Headers.Get(":exception-type").String()+": "+e.Message)
		default:
			var c struct {
				Bytes string `json:"bytes"`
			}
			if err := json.Unmarshal(m.Payload, &c); err != nil {
				return out, err
			}
			b, err := base64.StdEncoding.DecodeString(c.Bytes)
			if err != nil {
				return out, err
			}
			out = append(out, string(b))
		}
	}
}
