package provider

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
)

// ErrorShape reports whether a JSON error body is in an API's own shape,
// which its SDK decodes.
type ErrorShape func(body []byte) bool

// OpenAIShape is the shape of OpenAI's errors, {"error":{"message":…}},
// and of vLLM's own, {"object":"error","message":…}.
func OpenAIShape(body []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return false
	}
	if isObject(m["error"]) {
		return true
	}
	var obj string
	return json.Unmarshal(m["object"], &obj) == nil && obj == "error"
}

// AnthropicShape is the shape of the errors of the Messages API's routes:
// Anthropic's {"type":"error","error":{…}}, Google Cloud's {"error":{…}}
// (or a list of them) on Vertex AI, AWS's {"message":…} on Bedrock.
func AnthropicShape(body []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		var list []map[string]json.RawMessage
		return json.Unmarshal(body, &list) == nil && len(list) > 0 && isObject(list[0]["error"])
	}
	if isObject(m["error"]) {
		return true
	}
	_, lower := m["message"]
	_, upper := m["Message"]
	return (lower || upper) && len(m) <= 3
}

// anthropicError reports whether body is the Anthropic API's own error,
// {"type":"error",…}: its 404 for a route it lacks is the API's.
func anthropicError(body []byte) bool {
	var e struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(body, &e) == nil && e.Type == "error"
}

func isObject(raw json.RawMessage) bool {
	b := bytes.TrimSpace(raw)
	return len(b) > 0 && b[0] == '{'
}

// AnswerError is an answer that is not in the API's shape, found before
// the SDK reads it (AnswerMiddleware): an error status whose JSON body is
// another server's ({"detail":"Not Found"}, {"error":"text"}) or says only
// that the route is not there, or a success whose JSON body is an error.
// An adapter reports it with ForeignAnswer.
type AnswerError struct {
	Request *http.Request
	Status  int
	Header  http.Header
	Body    []byte
	// NotStream marks a success to a streamed request (Streamed) that is
	// no event stream: a whole answer of a server that ignores
	// "stream": true, a health check's JSON, plain text, nothing.
	NotStream bool
}

// streamedKey marks a context whose requests ask for an event stream.
type streamedKey struct{}

// Streamed is ctx marked as the context of a request that asks for an
// event stream: AnswerMiddleware ends a success that is no stream with an
// *AnswerError (NotStream), before the SDK reads it as a stream cut short
// and the turn is retried.
func Streamed(ctx context.Context) context.Context {
	return context.WithValue(ctx, streamedKey{}, true)
}

func isStreamed(ctx context.Context) bool {
	v, _ := ctx.Value(streamedKey{}).(bool)
	return v
}

// streamTypes are the Content-Types of the event streams the adapters
// read: server-sent events, and AWS's event stream (Bedrock's).
var streamTypes = [...]string{"text/event-stream", "application/vnd.amazon.eventstream"}

// sseStart are the ways a server-sent event stream's first line begins.
var sseStart = [...]string{"data:", "event:", "id:", "retry:", ":"}

// notStream reads the beginning of a success to a streamed request whose
// Content-Type is no event stream's: a body that begins as server-sent
// events is put back, to be read as one (a server may label its stream
// wrongly); another is the *AnswerError that says what came.
func notStream(req *http.Request, resp *http.Response) *AnswerError {
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err == nil {
		for _, st := range streamTypes {
			if mt == st {
				return nil
			}
		}
	}
	br := bufio.NewReaderSize(resp.Body, 4<<10)
	var t []byte
	for n := 1; n <= 512; n++ {
		b, err := br.Peek(n)
		t = bytes.TrimLeft(b, " \t\r\n")
		if err != nil || len(t) >= 6 || bytes.IndexByte(t, '\n') >= 0 {
			break
		}
	}
	for _, p := range sseStart {
		if bytes.HasPrefix(t, []byte(p)) {
			resp.Body = struct {
				io.Reader
				io.Closer
			}{br, resp.Body}
			return nil
		}
	}
	b, _ := io.ReadAll(io.LimitReader(br, 64<<10))
	resp.Body.Close()
	return &AnswerError{Request: SentRequest(req, resp), Status: resp.StatusCode, Header: resp.Header, Body: b, NotStream: true}
}

// WholeAnswer reports whether body is a model's whole answer, not
// streamed: a Chat Completions chat.completion, a Responses response, a
// Messages message (Anthropic's, Bedrock's, Vertex AI's).
func WholeAnswer(body []byte) bool {
	var m struct {
		Object  string          `json:"object"`
		Type    string          `json:"type"`
		Choices json.RawMessage `json:"choices"`
		Content json.RawMessage `json:"content"`
		Output  json.RawMessage `json:"output"`
	}
	if json.Unmarshal(bytes.TrimSpace(body), &m) != nil {
		return false
	}
	switch {
	case m.Object == "chat.completion" || m.Object == "response":
		return true
	case m.Type == "message" && len(m.Content) > 0:
		return true
	}
	return len(m.Choices) > 0 && m.Choices[0] == '['
}

// Unstreamed is the error of a whole answer given to a request for a
// stream (WholeAnswer): the server, or a gateway before it, ignores
// "stream": true. Not retried: it answers the same way again.
func Unstreamed(providerName string, req *http.Request, status int, body []byte, hint string) *Error {
	base := req.URL.Scheme + "://" + req.URL.Host
	return &Error{Provider: providerName, Kind: ErrProtocol, Status: status, Final: true,
		Message: fmt.Sprintf("the server at %s answered without streaming (it ignores stream: true; Truss reads only streamed answers): %s (%s)", base, Answered(req, status, body), hint)}
}

func (e *AnswerError) Error() string { return Answered(e.Request, e.Status, e.Body) }

// AnswerMiddleware is PageMiddleware, and more: an answer whose JSON is
// not in the API's shape (own) ends the request with an *AnswerError, so
// that the SDK neither fails to decode it nor drops its message.
func AnswerMiddleware(own ErrorShape) func(*http.Request, func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	return func(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
		resp, err := PageMiddleware(req, next)
		if err != nil || resp == nil {
			return resp, err
		}
		if resp.StatusCode >= 300 && resp.StatusCode < 400 && resp.Header.Get("Location") != "" {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
			resp.Body.Close()
			return nil, &AnswerError{Request: SentRequest(req, resp), Status: resp.StatusCode, Header: resp.Header, Body: b}
		}
		ok2xx := resp.StatusCode >= 200 && resp.StatusCode <= 299
		if ok2xx && isStreamed(req.Context()) {
			if ae := notStream(req, resp); ae != nil {
				return nil, ae
			}
			return resp, nil
		}
		if ok2xx && (req.Method != http.MethodPost || !jsonType(resp)) || resp.StatusCode < 200 || resp.StatusCode >= 300 && resp.StatusCode < 400 {
			return resp, nil
		}
		var b []byte
		if ok2xx {
			// A success's body is put back whole, however long: only its
			// beginning is read, and an error's body is short.
			head, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			if len(head) == 64<<10 {
				resp.Body = struct {
					io.Reader
					io.Closer
				}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
				return resp, nil
			}
			resp.Body.Close()
			resp.Body = io.NopCloser(bytes.NewReader(head))
			b = head
		} else {
			b = ResponseBody(resp)
		}
		t := bytes.TrimSpace(b)
		if len(t) == 0 || !json.Valid(t) {
			return resp, nil // the adapter's NotAPIAnswer, or the SDK's error
		}
		foreign := !own(t) || NotAPIStatus(resp.StatusCode) && bareNotFound(ErrorMessage(t)) && !anthropicError(t)
		if ok2xx {
			var m map[string]json.RawMessage
			foreign = json.Unmarshal(t, &m) == nil && m["error"] != nil && !bytes.Equal(bytes.TrimSpace(m["error"]), []byte("null"))
		}
		if !foreign {
			return resp, nil
		}
		resp.Body.Close()
		return nil, &AnswerError{Request: SentRequest(req, resp), Status: resp.StatusCode, Header: resp.Header, Body: b}
	}
}

func jsonType(resp *http.Response) bool {
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// Redirected is the error of a redirect answered to req: not followed
// (a POST would be sent again as a GET, to a page), it says where the
// server sends the request, for the base URL to be set to that address.
// It is not retried, and the model was not reached (Unreached).
func Redirected(providerName string, req *http.Request, status int, location, hint string) *Error {
	base := req.URL.Scheme + "://" + req.URL.Host
	to := location
	if u, err := req.URL.Parse(location); err == nil {
		to = u.Redacted()
	}
	return &Error{Provider: providerName, Kind: ErrNotAPI, Status: status, Final: true,
		Message: fmt.Sprintf("the server at %s redirects %s %s to %s (%d %s): set the address to where it redirects, without the route (%s)",
			base, req.Method, req.URL.Path, to, status, http.StatusText(status), hint)}
}

// NotAPIStatus reports whether status says a route is not there (404,
// 405, 501), which no API's passing trouble answers.
func NotAPIStatus(status int) bool {
	return status == http.StatusNotFound || status == http.StatusMethodNotAllowed || status == http.StatusNotImplemented
}

// bareNotFound reports whether msg says only that something was not
// found ("Not Found", "File Not Found"): a router's, where an API's 404
// names the model or resource missing.
func bareNotFound(msg string) bool {
	m := strings.ToLower(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(msg), ".")))
	switch m {
	case "", "not found", "file not found", "route not found", "path not found", "page not found", "method not allowed", "not implemented", "unknown route", "no route":
		return true
	}
	return false
}

// ErrorMessage is the message of a JSON error body in any of the shapes
// servers answer with: {"error":"text"}, {"error":{"message":…}},
// {"message":…}, {"detail":"text"} or FastAPI's {"detail":[{"msg":…}]};
// else the body's first line.
func ErrorMessage(body []byte) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) == nil {
		var s string
		if json.Unmarshal(m["error"], &s) == nil && s != "" {
			return s
		}
		var e struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(m["error"], &e) == nil && e.Message != "" {
			return e.Message
		}
		for _, k := range []string{"message", "Message", "detail", "error_description"} {
			if json.Unmarshal(m[k], &s) == nil && s != "" {
				return s
			}
		}
		var details []struct {
			Msg string `json:"msg"`
		}
		if json.Unmarshal(m["detail"], &details) == nil {
			var msgs []string
			for _, d := range details {
				if d.Msg != "" {
					msgs = append(msgs, d.Msg)
				}
			}
			if len(msgs) > 0 {
				return strings.Join(msgs, "; ")
			}
		}
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
	if r := []rune(line); len(r) > 200 {
		line = string(r[:200]) + "…"
	}
	return line
}

// ForeignAnswer is the error of err when it is an *AnswerError: not the
// API (ErrNotAPI, NotAPI's words) when its status says the route is not
// there or it is a success, else the HTTP error of its status with the
// body's message (ErrorMessage), retried as its status is. False when err
// is no *AnswerError.
func ForeignAnswer(err error, providerName, service, hint string) (*Error, bool) {
	var ae *AnswerError
	if !errors.As(err, &ae) {
		return nil, false
	}
	if ae.Status >= 300 && ae.Status < 400 {
		return Redirected(providerName, ae.Request, ae.Status, ae.Header.Get("Location"), hint), true
	}
	if ae.NotStream && WholeAnswer(ae.Body) {
		return Unstreamed(providerName, ae.Request, ae.Status, ae.Body, hint), true
	}
	if NotAPIStatus(ae.Status) || ae.Status < 300 {
		return NotAPI(providerName, service, ae.Request, ae.Status, ae.Body, hint), true
	}
	return HTTPError(providerName, ae.Status, "", ErrorMessage(ae.Body), ae.Header, err), true
}
