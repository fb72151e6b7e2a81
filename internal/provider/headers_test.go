package provider

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestHeaderClient: the headers reach the server, replacing the request's
// own under the same name, and the caller's request is left as it was.
func TestHeaderClient(t *testing.T) {
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.Header.Clone() }))
	defer srv.Close()
	if c := HeaderClient(nil); c == nil || c.CheckRedirect == nil {
		t.Error("no headers made no client of the adapters' own")
	}
	c := HeaderClient(http.Header{"x-title": {"truss"}, "X-Org": {"o"}})
	req, _ := http.NewRequest("GET", srv.URL, nil)
	req.Header.Set("X-Org", "mine")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h := <-got
	if h.Get("X-Title") != "truss" || h.Values("X-Org")[0] != "o" || len(h.Values("X-Org")) != 1 {
		t.Errorf("the server got %v", h)
	}
	if req.Header.Get("X-Org") != "mine" || req.Header.Get("X-Title") != "" {
		t.Errorf("the caller's request changed: %v", req.Header)
	}
}
