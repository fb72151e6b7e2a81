package sim

import "testing"

func FuzzParseScript(f *testing.F) {
	f.Add([]byte(`{"steps":[{"say":"x","actions":[{"kind":"view","path":"a"}],"faults":[{"kind":"status","status":429}]}]}`))
	f.Add([]byte(`{"steps":[{"actions":[{"kind":"replace"}]}]}`))
	f.Add([]byte(`{"steps":[{"faults":[{"kind":"truncate"}]}]}`))
	f.Add([]byte(`{"steps":[],"models":[{"id":"m","created":"2025-01-02T00:00:00Z","apis":["ollama"]}],"model_faults":[{"kind":"status","status":404}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseScript(b)
		if err != nil {
			return
		}
		for i := range s.Steps {
			// Rendering a parsed step never panics.
			New(s).render(&s.Steps[i], []declared{{Name: "read_file"}, {Name: "edit_file"}, {Name: "write_file"}, {Name: "bash"}, {Name: "list_dir"}}, i, "")
		}
	})
}
