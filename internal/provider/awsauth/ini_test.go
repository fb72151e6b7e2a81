package awsauth

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestParseINI(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     INI
		err      string
	}{
		{"empty", "", INI{}, ""},
		{"sections and keys", "[default]\naws_access_key_id = AKIA\nAWS_Secret_Access_Key=s\n\n[profile dev]\nregion = eu-west-1\n",
			INI{"default": {"aws_access_key_id": "AKIA", "aws_secret_access_key": "s"}, "profile dev": {"region": "eu-west-1"}}, ""},
		{"comments and CRLF", "# top\r\n[default]\r\n; note\r\nregion = us-east-1\r\n", INI{"default": {"region": "us-east-1"}}, ""},
		{"nested settings skipped", "[default]\ns3 =\n  max_concurrent_requests = 10\n  region = nope\nregion = us-west-2\n",
			INI{"default": {"s3": "", "region": "us-west-2"}}, ""},
		{"a value keeps its = and spaces", "[p]\ncredential_process = aws configure export-credentials --profile x --format process\nk = a=b\n",
			INI{"p": {"credential_process": "aws configure export-credentials --profile x --format process", "k": "a=b"}}, ""},
		{"a section twice merges", "[p]\na = 1\nb = 2\n[q]\n[p]\nb = 3\n", INI{"p": {"a": "1", "b": "3"}, "q": {}}, ""},
		{"a key outside a section", "region = x\n", nil, "line 1: region is outside any [section]"},
		{"not a key", "[p]\nnonsense\n", nil, `line 2: neither a [section] nor key = value: "nonsense"`},
		{"an unclosed section", "[p\n", nil, `line 1: a section's name is [name]: "[p"`},
		{"an empty section name", "[ ]\n", nil, "line 1: a section without a name"},
		{"no key", "[p]\n= v\n", nil, "line 2: a value without a key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseINI([]byte(tc.in))
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.EqualFunc(got, tc.want, func(a, b map[string]string) bool { return maps.Equal(a, b) }) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// format writes an INI back as ParseINI reads it.
func format(f INI) string {
	var sb strings.Builder
	for _, s := range slices.Sorted(maps.Keys(f)) {
		sb.WriteString("[" + s + "]\n")
		for _, k := range slices.Sorted(maps.Keys(f[s])) {
			v := f[s][k]
			if v == "" {
				v = "x" // an empty value would make the next lines nested
			}
			sb.WriteString(k + " = " + v + "\n")
		}
	}
	return sb.String()
}

// FuzzParseINI: any input parses or fails without panicking; what parses
// has trimmed, non-empty names and lower-case keys, and reads back the
// same once written out.
func FuzzParseINI(f *testing.F) {
	f.Add([]byte("[default]\naws_access_key_id = AKIA\naws_secret_access_key = s\n"))
	f.Add([]byte("[profile x]\ns3 =\n  a = b\nregion = r\n# c\n; d\n"))
	f.Add([]byte("[a]]\nk==v\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ParseINI(data)
		if err != nil {
			return
		}
		for s, keys := range got {
			if s == "" || s != strings.TrimSpace(s) || strings.ContainsAny(s, "\n") {
				t.Fatalf("section %q", s)
			}
			for k, v := range keys {
				if k == "" || k != strings.ToLower(strings.TrimSpace(k)) || strings.Contains(k, "=") || v != strings.TrimSpace(v) {
					t.Fatalf("key %q = %q", k, v)
				}
				if v == "" {
					keys[k] = "x"
				}
			}
		}
		again, err := ParseINI([]byte(format(got)))
		if err != nil {
			t.Fatalf("%q does not read back: %v", format(got), err)
		}
		if !maps.EqualFunc(got, again, func(a, b map[string]string) bool { return maps.Equal(a, b) }) {
			t.Fatalf("read back %v, want %v", again, got)
		}
	})
}
