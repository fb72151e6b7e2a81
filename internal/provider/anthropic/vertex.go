package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"golang.org/x/oauth2"

	"github.com/trussdev/truss/internal/provider/googleauth"
)

// VertexVersion is the anthropic_version Google Vertex AI requires in the
// body of a Messages request.
const VertexVersion = "vertex-2023-10-16"

// Vertex reaches the Messages API through Google Vertex AI: the model
// moves into the URL,
// /v1/projects/PROJECT/locations/REGION/publishers/anthropic/models/MODEL:streamRawPredict,
// the body loses "model" and gains "anthropic_version":
// "vertex-2023-10-16", the betas stay in the anthropic-beta header, and
// the request carries a Google OAuth 2 access token instead of a key. The
// stream is the API's own.
//
// These are the rewrites of anthropic-sdk-go's vertex package, done by a
// middleware of the SDK's client here: that package imports
// google.golang.org/api/transport, whose gRPC and OpenCensus packages cost
// every start of the program 1.3 MB and about 6,900 allocations in their
// init functions (docs/anthropic.md); the route, the body and the token are
// all it adds. Unlike it, the body's version is always Vertex's (the
// package copies the SDK's first-party anthropic-version header there).
type Vertex struct {
	// Region is the location: "us-east5", "europe-west1", "global", …
	Region string
	// Project is the Google Cloud project's id.
	Project string
	// Token is the source of access tokens (googleauth's
	// application-default credentials).
	Token oauth2.TokenSource
	// RegionFrom names where Region was set ("--region", the variable),
	// for the hint of an unreachable region; "" says CLOUD_ML_REGION.
	RegionFrom string
}

// VertexBaseURL is the address of a region's Vertex AI API, as
// anthropic-sdk-go's vertex package names it.
func VertexBaseURL(region string) string {
	switch region {
	case "global":
		return "https://aiplatform.googleapis.com"
	case "us", "eu":
		return "https://aiplatform." + region + ".rep.googleapis.com"
	}
	return "https://" + region + "-aiplatform.googleapis.com"
}

// check reports a configuration the routes cannot use.
func (v *Vertex) check() error {
	if v.Region == "" || v.Project == "" {
		return errors.New("vertex: a region and a project are needed")
	}
	for _, s := range []string{v.Region, v.Project} {
		if s == "." || s == ".." || strings.ContainsAny(s, "/?#%\\ ") {
			return fmt.Errorf("vertex: %q cannot be part of a path", s)
		}
	}
	if v.Token == nil {
		return errors.New("vertex: no credentials")
	}
	return nil
}

// middleware rewrites a Messages request into Vertex's and authorizes it.
func (v *Vertex) middleware() option.Middleware {
	prefix := "/v1/projects/" + url.PathEscape(v.Project) + "/locations/" + url.PathEscape(v.Region) + "/publishers/anthropic/models/"
	return func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		if err := v.check(); err != nil {
			return nil, err
		}
		base := strings.TrimSuffix(r.URL.EscapedPath(), "/v1/messages")
		if r.Method != http.MethodPost || base == r.URL.EscapedPath() {
			return nil, fmt.Errorf("vertex: %s %s is not served on Vertex AI (only the Messages API is)", r.Method, r.URL.Path)
		}
		// The first-party API's version header means nothing to Vertex,
		// which takes its own version in the body.
		r.Header.Del("anthropic-version")
		var body []byte
		if r.Body != nil {
			b, err := io.ReadAll(r.Body)
			r.Body.Close()
			if err != nil {
				return nil, err
			}
			body = b
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, fmt.Errorf("vertex: the request body is not a JSON object: %w", err)
		}
		var modelName string
		if json.Unmarshal(m["model"], &modelName) != nil || modelName == "" {
			return nil, errors.New("vertex: the request names no model")
		}
		var stream bool
		json.Unmarshal(m["stream"], &stream)
		delete(m, "model")
		if _, ok := m["anthropic_version"]; !ok {
			m["anthropic_version"], _ = json.Marshal(VertexVersion)
		}
		out, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		specifier := "rawPredict"
		if stream {
			specifier = "streamRawPredict"
		}
		raw := base + prefix + url.PathEscape(modelName) + ":" + specifier
		p, err := url.PathUnescape(raw)
		if err != nil {
			return nil, fmt.Errorf("vertex: route %s: %w", raw, err)
		}
		r.URL.Path, r.URL.RawPath = p, raw
		tok, err := v.Token.Token()
		if err != nil {
			return nil, &tokenError{err: err}
		}
		r.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		r.Header.Del("X-Api-Key")
		r.Body = io.NopCloser(bytes.NewReader(out))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(out)), nil }
		r.ContentLength = int64(len(out))
		return next(r)
	}
}

// tokenError is a failure to get an access token: the credentials'
// problem, not the network's to the API. It says what the token endpoint
// answered and, when it refused the credentials, how to renew them
// (googleauth.TokenFailure).
type tokenError struct{ err error }

func (e *tokenError) Error() string { return googleauth.TokenFailure(e.err) }

func (e *tokenError) Unwrap() error { return e.err }

// googleError reads Google's error object, {"error": {"code", "message",
// "status"}}, alone or as the first element of an array (a streaming
// request's, on Vertex AI): its status ("RESOURCE_EXHAUSTED") and message.
func googleError(raw []byte) (status, msg string, ok bool) {
	type gerr struct {
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Status  string `json:"status"`
		} `json:"error"`
	}
	var one gerr
	if json.Unmarshal(raw, &one) != nil || one.Error == nil {
		var many []gerr
		if json.Unmarshal(raw, &many) != nil || len(many) == 0 || many[0].Error == nil {
			return "", "", false
		}
		one = many[0]
	}
	if one.Error.Status == "" && one.Error.Message == "" {
		return "", "", false
	}
	return one.Error.Status, one.Error.Message, true
}
