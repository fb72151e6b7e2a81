package provider

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestModelsError(t *testing.T) {
	for _, c := range []struct {
		err   error
		want  string
		unsup bool
	}{
		{HTTPError("chat", 401, "invalid_api_key", "Incorrect API key provided.", nil, nil), "chat: HTTP 401: GET /v1/models: Incorrect API key provided.", false},
		{HTTPError("chat", 429, "", "slow down", http.Header{"Retry-After": {"7"}}, nil), "chat: HTTP 429: GET /v1/models: slow down (the server asks to wait 7s)", false},
		{HTTPError("chat", 404, "", "", nil, nil), "chat: HTTP 404: GET /v1/models: Not Found; the server has no model list", true},
		{HTTPError("chat", 501, "", "", nil, nil), "chat: HTTP 501: GET /v1/models: Not Implemented; the server has no model list", true},
		{context.Canceled, "context canceled", false},
	} {
		err := ModelsError("GET", "/v1/models", c.err)
		if err.Error() != c.want || errors.Is(err, ErrNotSupported) != c.unsup {
			t.Errorf("%v: got %q (not supported %v)", c.err, err, errors.Is(err, ErrNotSupported))
		}
		var pe *Error
		if errors.As(c.err, &pe) && (!errors.As(err, &pe) || pe.Kind != KindForStatus(pe.Status)) {
			t.Errorf("%v: the *Error is lost", err)
		}
	}
}

func TestEndpointPathAndModelTime(t *testing.T) {
	for base, want := range map[string]string{"https://api.openai.com/v1": "/v1/models", "http://h:8000/v1/": "/v1/models", "http://h": "/models", "": "/models"} {
		if got := EndpointPath(base, "models"); got != want {
			t.Errorf("EndpointPath(%q) = %q, want %q", base, got, want)
		}
	}
	if !ModelTime(time.Unix(0, 0)).IsZero() || !ModelTime(time.Time{}).IsZero() || ModelTime(time.Unix(1, 0)).Unix() != 1 {
		t.Error("ModelTime")
	}
}
