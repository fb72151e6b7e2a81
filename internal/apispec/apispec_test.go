package apispec

import "testing"

func TestValidation(t *testing.T) {
	doc, err := OpenAI()
	if err != nil {
		t.Fatal(err)
	}
	good := `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`
	if err := doc.RequestBody("/chat/completions", "POST", []byte(good)); err != nil {
		t.Fatalf("valid request rejected: %v", err)
	}
	for _, bad := range []string{
		`{"messages":[{"role":"user","content":"hi"}]}`,                                                      // no model
		`{"model":"m","messages":[{"role":"wizard","content":"hi"}]}`,                                        // no such role
		`{"model":"m","messages":[{"role":"tool","content":"x"}]}`,                                           // tool message without tool_call_id
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function"}]}`,            // function tool without function
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream_options":{"include_usage":"yes"}}`, // wrong type
	} {
		if err := doc.RequestBody("/chat/completions", "POST", []byte(bad)); err == nil {
			t.Errorf("invalid request accepted: %s", bad)
		}
	}
	dup := `{"model":"m","messages":[{"role":"user","content":"a"}],"messages":[{"role":"user","content":"b"}]}`
	if err := doc.RequestBody("/chat/completions", "POST", []byte(dup)); err == nil {
		t.Error("a duplicate key was accepted")
	}
	for _, ok := range []string{`{"a":{"a":1},"b":[{"a":1},{"a":2}],"c":"a"}`, `[]`, `"x"`} {
		if err := NoDuplicateKeys([]byte(ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	if err := NoDuplicateKeys([]byte(`{"x":[1,{"k":1,"k":2}]}`)); err == nil {
		t.Error("nested duplicate accepted")
	}
	if err := doc.Schema("ErrorResponse", []byte(`{"error":{"message":"m","type":"t","param":null,"code":null}}`)); err != nil {
		t.Errorf("valid error rejected: %v", err)
	}
	if err := doc.Schema("ErrorResponse", []byte(`{"error":"plain string"}`)); err == nil {
		t.Error("invalid error accepted")
	}
}

func TestAnthropicValidation(t *testing.T) {
	doc, err := Anthropic()
	if err != nil {
		t.Fatal(err)
	}
	good := `{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],
	  "tools":[{"type":"text_editor_20250728","name":"str_replace_based_edit_tool"},{"type":"bash_20250124","name":"bash"}],"stream":true}`
	if err := doc.RequestBody("/v1/messages", "POST", []byte(good)); err != nil {
		t.Fatalf("valid request rejected: %v", err)
	}
	for _, bad := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,                                                                 // no max_tokens
		`{"model":"m","max_tokens":1,"messages":[{"role":"wizard","content":"hi"}]}`,                                                // no such role
		`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"tool_result"}]}]}`,                              // tool_result without tool_use_id
		`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"}],"tools":[{"type":"bash_20250124","name":"shell"}]}`, // typed tool with a wrong name
	} {
		if err := doc.RequestBody("/v1/messages", "POST", []byte(bad)); err == nil {
			t.Errorf("invalid request accepted: %s", bad)
		}
	}
}
